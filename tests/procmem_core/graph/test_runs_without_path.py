"""Runs without a path count toward the success statistics but are no evidence about nodes
or transitions (issue 12, bug 5); ``complete_run`` is the seed's ``run.complete``."""

from __future__ import annotations

import pytest

from procmem_core.errors import ParameterError
from procmem_core.graph import UnknownProcedure

STEPS = ["look up the invoice", "check the refund policy window", "issue or decline"]


def test_empty_path_runs_count_as_successes_but_mark_no_dead_end(store):
    key = store.add("refund", "s", STEPS).key
    for _ in range(6):
        store.record_run(key, [], ok=True)
    report = store.evolve(key)
    assert (report.runs, report.successes, report.evolved) == (6, 6, True)
    assert report.dead_ends == () and report.proven_path == ()
    assert report.fail_prone_steps == () and report.fail_prone_transitions == ()
    loc = store.locate(key, at="n1")
    assert [(t.taken, t.succeeded) for t in loc.transitions] == [(0, 0), (0, 0)]


def test_empty_path_failures_flag_nothing_fail_prone(store):
    key = store.add("refund", "s", STEPS).key
    for i in range(30):  # the path runs all succeed; every failure reported no path
        store.record_run(key, ["n1", "n2"] if i % 2 else [], ok=bool(i % 2))
    report = store.evolve(key)
    assert report.fail_prone_steps == () and report.fail_prone_transitions == ()
    assert report.dead_ends == ("n3",)  # from the path runs alone
    assert report.proven_path == ("n1", "n2")


def test_complete_run_records_an_empty_path_for_each_procedure_key(store):
    a = store.add("refund", "s", STEPS).key
    b = store.add("close month", "s", STEPS, namespace="fin")
    runs = store.complete_run(
        [a, "semantic_user_prefers_lists", b.ref, a], ok=False, reflection="ask first", agent="x"
    )
    assert [(f"{r.namespace}/{r.key}", r.path, r.ok, r.reflection) for r in runs] == [
        (f"default/{a}", (), False, "ask first"),
        (b.ref, (), False, "ask first"),
    ]
    assert store.runs(a) == runs[:1] and store.runs(b.ref) == runs[1:]
    assert store.get(a).runs == 1 and store.get(a).run_stats_by_agent[0].agent == "x"


def test_an_agent_that_records_its_own_run_is_not_counted_twice(store):
    """The seed: an agent that calls record_run itself leaves the key out of memories_used."""
    key = store.add("refund", "s", STEPS).key
    other = store.add("close month", "s", STEPS).key
    store.record_run(key, ["n1", "n2", "n3"], ok=True)  # the agent's own report
    store.complete_run([other], ok=True)  # run.complete for the session, key left out
    assert store.get(key).runs == 1 and store.get(other).runs == 1
    assert len(store.runs(key)) == 1


COMPLETE_ERRORS = [
    ({"memories_used": "procedure_refund", "ok": True}, ParameterError, "memories_used"),
    ({"memories_used": [""], "ok": True}, ParameterError, "memories_used[0]"),
    ({"memories_used": ["procedure_refund"], "ok": "yes"}, ParameterError, "ok='yes'"),
    ({"memories_used": ["procedure_refund"], "ok": True, "reflection": " "}, ParameterError,
     "reflection"),
    ({"memories_used": ["procedure_refund", "procedure_nope"], "ok": True}, UnknownProcedure,
     "procedure_nope"),
]  # fmt: skip


@pytest.mark.parametrize(("kwargs", "error", "fragment"), COMPLETE_ERRORS)
def test_complete_run_checks_everything_before_writing(store, kwargs, error, fragment):
    key = store.add("refund", "s", STEPS).key
    with pytest.raises(error) as err:
        store.complete_run(**kwargs)
    assert fragment in str(err.value)
    assert store.runs(key) == ()


def test_complete_run_writes_the_lesson_as_a_reflection_record(store):
    """run.complete(..., reflection=...) with a memory store: the agent's lesson becomes a
    reflection record citing the runs and procedures; unfiltered recall never returns it,
    a search filtered to reflections does."""
    from procmem_core.memory import MemoryStore
    from procmem_core.reflections import complete_run

    memory = MemoryStore()
    key = store.add("refund", "a customer asks for a refund", STEPS).key
    runs = complete_run(
        store, [key], ok=False, reflection="check the refund window before promising",
        memory=memory,
    )  # fmt: skip
    hits = memory.search("refund window", memory_type="reflection")
    assert len(hits) == 1
    record = hits[0].record
    assert record.memory_type == "reflection"
    assert "check the refund window before promising" in record.text
    assert set(record.lineage) == {f"run:{runs[0].run_id}", f"default/{key}"}
    assert memory.search("refund window") == []  # unfiltered recall never returns it


def test_complete_run_checks_the_memory_store_before_writing(store):
    """The service names a wrong ``memory`` before any run is recorded."""
    from procmem_core.reflections import complete_run

    key = store.add("refund", "a customer asks for a refund", STEPS).key
    with pytest.raises(ParameterError) as err:
        complete_run(store, [key], ok=True, reflection="ask first", memory={"not": "a store"})
    assert "memory" in str(err.value) and "MemoryStore" in str(err.value)
    assert store.runs(key) == ()
