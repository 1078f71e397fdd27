"""Reflections as reflection memories (seed: "embedded but left out of unfiltered recall
... Read reflections with memory.search(memory_type="reflection")"), on both stores,
with evidence keys from a real procedure ledger."""

from __future__ import annotations

import pytest

from procmem_core.errors import ParameterError
from procmem_core.reflections import (
    Reflection,
    read_reflection,
    record_reflection,
    reflections_citing,
    run_key,
    session_key,
    write_reflection,
)


def test_an_agents_lesson_cites_its_runs_and_procedures_and_is_hidden_from_recall(backend):
    proc = backend.procedures.add(
        "refund request", "a customer asks for a refund", ["look up the invoice", "issue it"]
    )
    run = backend.procedures.record_run(proc.key, ["n1", "n2"], ok=False, note="no invoice")
    fact = backend.memory.set("Refunds are issued to the original card")
    record = record_reflection(
        backend.memory,
        evidence=[run_key(run.run_id), proc.key],
        what_worked="looking up the invoice first",
        what_failed="issuing the refund before checking the card on file",
        lessons="check the card on file before issuing a refund",
        actor="triage-bot",
    )
    assert record.memory_type == "reflection" and record.actor == "triage-bot"
    assert record.lineage == (f"run:{run.run_id}", "procedure_refund_request")
    assert record.text == (
        "What worked: looking up the invoice first\n"
        "What failed: issuing the refund before checking the card on file\n"
        "Lessons:\n- check the card on file before issuing a refund"
    )
    query = "issuing a refund to the card"
    backend.reopen()
    m = backend.memory
    assert [h.record.record_id for h in m.search(query, top_k=10)] == [fact.record_id]
    hits = m.search(query, "reflection")
    assert [h.record.record_id for h in hits] == [record.record_id] and hits[0].score > 0.3
    got = read_reflection(m.get(record.record_id))
    assert got.lessons == ("check the card on file before issuing a refund",)
    assert got.evidence == (f"run:{run.run_id}", proc.key) and got.source == "agent"
    assert [r.record_id for r in reflections_citing(m, proc.key)] == [record.record_id]
    assert reflections_citing(m, "run:999") == []
    assert m.get(record.record_id).tags == ("reflection:agent",)


def test_coerce_takes_text_a_mapping_or_a_reflection():
    text = Reflection.coerce("retry with the invoice id", ["run:4"])
    assert (text.lessons, text.evidence, text.what_worked) == (
        ("retry with the invoice id",),
        ("run:4",),
        "",
    )
    mapping = Reflection.coerce(
        {"what_failed": "skipped the policy", "lessons": "read the policy", "evidence": ["run:1"]},
        ["procedure_refund", "run:1"],
    )
    assert mapping.lessons == ("read the policy",)
    assert mapping.evidence == ("run:1", "procedure_refund")  # deduplicated, order kept
    again = Reflection.coerce(mapping, ["run:9"])
    assert again.evidence == ("run:1", "procedure_refund", "run:9")
    assert session_key("abc") == "session:abc" and run_key(7) == "run:7"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Reflection(evidence=("run:1",)), "expected what_worked, what_failed or"),
        (lambda: Reflection(lessons=("x",)), "evidence=()"),
        (lambda: Reflection(lessons=("x",), evidence="run:1"), "evidence='run:1'"),
        (lambda: Reflection(lessons="x", evidence=("run:1",)), "lessons='x'"),
        (lambda: Reflection(lessons=("",), evidence=("run:1",)), "lessons=''"),
        (lambda: Reflection(lessons=("x",), evidence=("",)), "evidence=''"),
        (lambda: Reflection(lessons=("x",), evidence=("r",), source="me"), "source='me'"),
        (lambda: Reflection.coerce({"lesson": "x"}, ["r"]), "reflection.lesson='x'"),
        (lambda: Reflection.coerce(3, ["r"]), "reflection=3"),
    ],
)
def test_bad_reflections_are_refused(make, message):
    with pytest.raises(ParameterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make()


def test_only_reflection_records_read_back(backend):
    fact = backend.memory.set("a fact")
    with pytest.raises(ParameterError, match="expected a reflection record"):
        read_reflection(fact)
    with pytest.raises(ParameterError, match="expected a Reflection"):
        write_reflection(backend.memory, {"lessons": ["x"]})


def test_match_packs_and_unfiltered_searches_never_return_a_reflection(backend):
    """The issue's reading of the seed: match, packs and any unfiltered search never return
    a reflection; only a search filtered to memory_type="reflection" does. The lesson is
    written in the procedure's own words, so only the record type can keep it out."""
    from procmem_core.graph import ContextPacker

    situation = "a customer asks for a refund on a paid invoice"
    proc = backend.procedures.add("refund request", situation, ["look up the invoice", "issue"])
    lesson = Reflection(
        lessons=(f"when {situation}, check the card on file",), evidence=(proc.key,)
    )
    record = write_reflection(backend.memory, lesson)
    backend.reopen()
    m, store = backend.memory, backend.procedures
    assert [x.key for x in store.match(situation, top_k=10)] == [proc.key]
    pack = ContextPacker(store, max_procedures=5).pack(situation)
    assert pack.procedure_keys == (f"default/{proc.key}",)
    assert "card on file" not in pack.text
    assert m.search(situation, top_k=10) == []
    assert m.search(situation, top_k=10, tags=["reflection:agent"]) == []  # tags: no type
    assert m.search(situation, top_k=10, agent="*", user_id="u1") == []
    assert m.knowledge_search(situation) == []
    hits = m.search(situation, "reflection")
    assert [h.record.record_id for h in hits] == [record.record_id]


def test_reflections_citing_finds_a_procedure_by_its_key_or_its_ref(backend):
    """complete_run (the seed's run.complete) cites a procedure as '<namespace>/<key>';
    reflections_citing(memory, procedure.key) found nothing for such a lesson (and the ref
    nothing for a lesson citing the bare key). A bare key now reads as the record's
    namespace's; another namespace's procedure of the same key is not matched."""
    from procmem_core.reflections.completion import complete_run

    ps = backend.procedures
    proc = ps.add("refund request", "a customer asks for a refund", ["look it up", "issue it"])
    complete_run(ps, [proc.key], ok=False, reflection="check the card", memory=backend.memory)
    bare = record_reflection(backend.memory, evidence=[proc.key], lessons="read the policy")
    other = record_reflection(
        backend.memory, evidence=[proc.key], lessons="elsewhere", namespace="team-b"
    )
    backend.reopen()
    m = backend.memory
    mine = (bare.record_id, other.record_id)
    (lesson,) = [r for r in m.records("reflection") if r.record_id not in mine]
    assert lesson.lineage[-1] == f"default/{proc.key}"
    want = [lesson.record_id, bare.record_id]
    assert [
        r.record_id for r in reflections_citing(m, proc.key) if r.namespace == "default"
    ] == want
    assert [r.record_id for r in reflections_citing(m, f"default/{proc.key}")] == want
    assert [r.record_id for r in reflections_citing(m, f"team-b/{proc.key}")] == [other.record_id]
    assert reflections_citing(m, f"team-c/{proc.key}") == []
