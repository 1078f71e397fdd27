"""ProcedureStore: add, record_run, fork, list, delete, keys and namespaces; the SQLite
round trip and a killed writer. Both stores pass the same tests (the ``store`` fixture)."""

from __future__ import annotations

import inspect
import queue
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.gates import CostGate, MarginGate, SPRTGate
from procmem_core.graph import SEED_EXAMPLE_GRAPH as SEED_GRAPH
from procmem_core.graph import (
    ContextPacker,
    GraphError,
    ProcedureGraph,
    ProcedureStore,
    UnknownProcedure,
    graph,
    ledger,
)
from procmem_core.graph import sqlite as journal
from procmem_core.graph.ledger import TRACE_LIMIT
from procmem_core.storefile import StoreFileError

pytestmark = pytest.mark.store_backends("memory", "sqlite", "postgresql")

STEPS = ["look up the invoice", "check the refund policy window", "issue or decline"]
REPO = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())


def test_add_with_steps_gives_key_linear_graph_and_authored_status(store):
    p = store.add("Refund request!", "a customer asks for a refund", STEPS, tags=["billing"])
    assert p.key == "procedure_refund_request"
    assert p.graph.node_ids == ("n1", "n2", "n3")
    assert (p.status, p.runs, p.revision, p.namespace) == ("authored", 0, 1, "default")
    assert store.get(p.key) == p
    assert store.revisions(p.key)[0].outcome == "original"


def test_add_takes_the_seed_json_shape_and_a_graph_object(store):
    a = store.add("month end", "close the month", graph=SEED_GRAPH)
    assert a.graph == ProcedureGraph.from_dict(SEED_GRAPH)
    assert a.steps[0] == "call check_cash_in_bank"
    b = store.add("month end copy", "close the month", graph=a.graph, candidate=True)
    assert b.status == "candidate"


def test_steps_with_a_graph_are_its_reading_text(store):
    p = store.add("month end", "close", steps=["check cash", "forecast"], graph=SEED_GRAPH)
    assert p.graph.node_ids == ("cash", "forecast", "raise", "close")
    assert p.steps == ("check cash", "forecast")


ADD_ERRORS = [
    ({"name": "", "situation": "s", "steps": STEPS}, ParameterError, "name=''"),
    ({"name": "x", "situation": " ", "steps": STEPS}, ParameterError, "situation"),
    ({"name": "x", "situation": "s"}, ParameterError, "give steps"),
    ({"name": "x", "situation": "s", "steps": ["one"]}, GraphError, "1 steps, allowed 2..64"),
    ({"name": "x", "situation": "s", "graph": {"nodes": []}}, GraphError, "0 nodes"),
    ({"name": "x", "situation": "s", "steps": STEPS, "tags": "billing"}, ParameterError, "tags"),
    (
        {"name": "x", "situation": "s", "steps": STEPS, "namespace": "a/b"},
        ParameterError,
        "namespace",
    ),
    (
        {"name": "x", "situation": "s", "steps": STEPS, "metadata": {"f": object()}},
        ParameterError,
        "JSON",
    ),
    ({"name": "x", "situation": "s", "steps": STEPS, "candidate": 1}, ParameterError, "candidate"),
]


@pytest.mark.parametrize(("kwargs", "error", "fragment"), ADD_ERRORS)
def test_add_rejects_bad_input(store, kwargs, error, fragment):
    with pytest.raises(error) as err:
        store.add(**kwargs)
    assert fragment in str(err.value)
    assert len(store) == 0


def test_duplicate_key_is_an_error(store):
    store.add("refund", "s", STEPS)
    with pytest.raises(ParameterError, match="already exists"):
        store.add("Refund", "another situation", STEPS)


def test_record_run_appends_with_revision_and_fields(store):
    key = store.add("refund", "s", STEPS).key
    run = store.record_run(
        key,
        ["n1", "n2"],
        ok=False,
        note="policy unclear",
        cost=1.5,
        duration_ms=42_000,
        tokens=900,
        agent="bot",
    )
    assert (run.run_id, run.revision, run.steps_taken, run.ok) == (1, 1, 2, False)
    empty = store.record_run(key, [], ok=True)  # run.complete records an empty path
    assert store.runs(key) == (run, empty)
    p = store.get(key)
    assert (p.runs, p.successes, p.status) == (2, 1, "exercised")


RUN_ERRORS = [
    ({"path": ["n1", "n9"], "ok": True}, "path[1]='n9'"),
    ({"path": "n1", "ok": True}, "path='n1'"),
    ({"path": ["n1"], "ok": "yes"}, "ok='yes'"),
    ({"path": ["n1"], "ok": True, "cost": -1.0}, "cost=-1.0"),
    ({"path": ["n1"], "ok": True, "cost": float("nan")}, "cost=nan"),
    ({"path": ["n1"], "ok": True, "duration_ms": 1.5}, "duration_ms=1.5"),
    ({"path": ["n1"], "ok": True, "tokens": -3}, "tokens=-3"),
    ({"path": ["n1"], "ok": True, "agent": ""}, "agent=''"),
    ({"path": ["n1"], "ok": True, "note": 5}, "note=5"),
]


@pytest.mark.parametrize(("kwargs", "fragment"), RUN_ERRORS)
def test_record_run_rejects_bad_reports_before_writing(store, kwargs, fragment):
    key = store.add("refund", "s", STEPS).key
    with pytest.raises(ParameterError) as err:
        store.record_run(key, **kwargs)
    assert fragment in str(err.value)
    assert store.runs(key) == () and store.get(key).runs == 0


def test_unknown_keys_are_errors(store):
    with pytest.raises(UnknownProcedure, match="procedure_nope"):
        store.record_run("procedure_nope", [], ok=True)
    with pytest.raises(UnknownProcedure):
        store.get("other/procedure_nope")


def test_traces_keep_the_last_50_and_aggregates_survive(store):
    key = store.add("refund", "s", STEPS).key
    for i in range(TRACE_LIMIT + 12):
        store.record_run(key, ["n1", "n2", "n3"], ok=i % 3 != 0, agent="a" if i % 2 else "b")
    traces = store.traces(key)
    assert len(traces) == TRACE_LIMIT and traces[0].run_id == 13
    p = store.get(key)
    assert p.runs == TRACE_LIMIT + 12 and p.successes == sum(i % 3 != 0 for i in range(62))
    assert sum(a.runs for a in p.run_stats_by_agent) == 62
    loc = store.locate(key, at="n1")
    assert loc.transitions[0].taken == 62  # aggregate edge counts, not the trace window


def test_fork_copies_shape_without_evidence_and_keys_resolve_by_namespace(store):
    src = store.add("refund", "a refund", STEPS, tags=["billing"], metadata={"owner": "ops"})
    store.record_run(src.key, ["n1"], ok=True)
    fork = store.fork(src.key, "team")
    assert (fork.namespace, fork.key, fork.runs, fork.revision) == ("team", src.key, 0, 1)
    assert fork.graph == src.graph and fork.tags == src.tags and fork.metadata == src.metadata
    with pytest.raises(UnknownProcedure, match="use 'namespace/procedure_refund"):
        store.get(src.key)  # now ambiguous
    assert store.get("team/procedure_refund").runs == 0
    assert store.get("default/procedure_refund").runs == 1
    with pytest.raises(ParameterError, match="already holds"):
        store.fork("default/procedure_refund", "team")


def test_list_by_prefix_and_tags(store):
    store.add("refund", "s", STEPS, tags=["billing", "support"])
    store.add("refund partial", "s", STEPS, tags=["billing"])
    store.add("close month", "s", STEPS, tags=["finance"])
    assert [p.key for p in store.list()] == [
        "procedure_close_month",
        "procedure_refund",
        "procedure_refund_partial",
    ]
    assert [p.key for p in store.list(prefix="procedure_refund")] == [
        "procedure_refund",
        "procedure_refund_partial",
    ]
    assert [p.key for p in store.list(tags=["billing", "support"])] == ["procedure_refund"]


def test_delete_removes_procedure_and_ledger_rows(store):
    key = store.add("refund", "s", STEPS).key
    other = store.add("other", "s", STEPS).key
    store.record_run(key, ["n1"], ok=True)
    store.record_run(other, ["n1"], ok=True)
    store.delete(key)
    assert [p.key for p in store.list()] == [other]
    with pytest.raises(UnknownProcedure):
        store.runs(key)
    again = store.add("refund", "s", STEPS)
    assert store.runs(again.key) == ()
    assert len(store.runs(other)) == 1 and store.match("s")[0].key in {other, again.key}


# -- SQLite --------------------------------------------------------------------------------


def _fill(store):
    a = store.add(
        "refund", "a refund on an invoice", STEPS, tags=["billing"], metadata={"v": [1, 2]}
    )
    b = store.add("month end", "close the month", graph=SEED_GRAPH, namespace="fin")
    store.fork(b.ref, "team")
    for i in range(8):
        store.record_run(a.key, ["n1", "n2", "n3"], ok=i != 3, cost=1.0 + i, agent="x")
    store.evolve(a.key)
    store.revise(a.key, ProcedureGraph.from_steps([*STEPS, "log the decision"]), "add logging")
    for _ in range(4):
        store.record_run(a.key, ["n1", "n2", "n3", "n4"], ok=False, note="timeout")
    store.evolve(a.key)
    store.record_run("fin/procedure_month_end", ["cash", "forecast", "close"], ok=True)
    return a.key


def _state(store):
    return (
        store.list(),
        {p.ref: store.runs(p.ref) for p in store.list()},
        {p.ref: store.revisions(p.ref) for p in store.list()},
        store.gate_decisions(),
    )


def test_sqlite_round_trip_shows_every_procedure_revision_run_and_decision(tmp_path):
    path = tmp_path / "p.db"
    memory = ProcedureStore()
    _fill(memory)
    with ProcedureStore.open(path) as disk:
        _fill(disk)
        before = _state(disk)
    assert repr(before) == repr(_state(memory))  # both stores behave the same
    with ProcedureStore.open(path) as reopened:
        after = _state(reopened)
        assert repr(after) == repr(before)
        assert len(after[3]) >= 2
        run = reopened.record_run("default/procedure_refund", ["n1"], ok=True)
        assert run.run_id == 14  # the run counter continues after reopen
        assert reopened.match("refund on an invoice")[0].key == "procedure_refund"


def test_sqlite_schema_is_versioned_and_in_wal_mode(tmp_path):
    path = tmp_path / "p.db"
    ProcedureStore.open(path).close()
    con = sqlite3.connect(path)
    assert con.execute("SELECT version FROM schema_version").fetchall() == [(3,)]
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.execute("UPDATE schema_version SET version = 99")
    con.commit()
    con.close()
    with pytest.raises(ParameterError, match="schema_version=99"):
        ProcedureStore.open(path)


@pytest.mark.parametrize(
    ("kwargs", "error", "fragment"),
    [
        (
            {"path": "/no/such/dir/p.db"},
            StoreFileError,
            "/no/such/dir/p.db: is in a folder that does not exist",
        ),
        ({"synchronous": "OFF"}, ParameterError, "synchronous='OFF'"),
    ],
)
def test_open_rejects_bad_arguments(tmp_path, kwargs, error, fragment):
    with pytest.raises(error) as err:
        ProcedureStore.open(**{"path": tmp_path / "p.db", **kwargs})
    assert fragment in str(err.value)


WRITER = textwrap.dedent(
    """
    import sys
    from procmem_core.graph import ProcedureStore
    store = ProcedureStore.open(sys.argv[1])
    key = store.add("refund", "a refund", ["a", "b", "c"]).key
    i = 0
    while True:
        run = store.record_run(key, ["n1", "n2"], ok=i % 2 == 0, note=f"run {i}")
        print(run.run_id, flush=True)
        i += 1
    """
)


def test_killed_writer_loses_no_acknowledged_run(tmp_path):
    path = tmp_path / "p.db"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    lines: queue.Queue = queue.Queue()  # read by a thread: every wait below is bounded

    def pump() -> None:
        for line in proc.stdout:
            lines.put(line)
        lines.put("")

    threading.Thread(target=pump, daemon=True).start()
    acked = []
    try:
        while len(acked) < 150:
            line = lines.get(timeout=120)
            assert line, "writer died early"
            acked.append(int(line))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    with ProcedureStore.open(path) as store:
        runs = store.runs("procedure_refund")
        ids = [r.run_id for r in runs]
        assert set(acked) <= set(ids)
        assert ids == list(range(1, len(ids) + 1))
        p = store.get("procedure_refund")
        assert p.runs == len(runs)  # aggregates were written in the run's transaction
        assert p.successes == sum(r.ok for r in runs)


def test_a_failed_sqlite_write_leaves_memory_as_it_was(tmp_path, monkeypatch):
    with ProcedureStore.open(tmp_path / "p.db") as store:
        key = store.add("refund", "s", STEPS).key
        store.record_run(key, ["n1"], ok=True)
        before = (store.get(key), store.runs(key))

        def broken(*args, **kwargs):
            raise sqlite3.OperationalError("disk I/O error")

        monkeypatch.setattr(journal.Transaction, "put", broken)
        with pytest.raises(sqlite3.OperationalError):
            store.record_run(key, ["n1", "n2"], ok=False)
        with pytest.raises(sqlite3.OperationalError):
            store.revise(key, ProcedureGraph.from_steps(["a", "b"]), "shorter")
        with pytest.raises(sqlite3.OperationalError):
            store.evolve(key, min_runs=1)
        assert (store.get(key), store.runs(key)) == before
        monkeypatch.undo()
        assert store.record_run(key, ["n1"], ok=True).run_id == 2


def test_record_run_accepts_numpy_scalars_as_plain_values(store):
    key = store.add("refund", "s", STEPS).key
    run = store.record_run(
        key, np.array(["n1", "n2"]), ok=np.bool_(True), cost=np.float32(2.5),
        duration_ms=np.int64(7), tokens=np.int32(3),
    )  # fmt: skip
    assert run.path == ("n1", "n2") and type(run.path[0]) is str
    assert (type(run.ok), type(run.cost), type(run.duration_ms)) == (bool, float, int)
    assert store.runs(key) == (run,)


def test_the_seed_defaults():
    def defaults(fn):
        return {k: v.default for k, v in inspect.signature(fn).parameters.items()}

    m = defaults(ProcedureStore.match)
    assert (m["tool_boost"], m["utility_weight"], m["top_k"]) == (0.2, 0.0, 5)
    assert (m["include_candidates"], m["include_quarantined"], m["templates_only"]) == (
        True,
        False,
        False,
    )
    e = defaults(ProcedureStore.evolve)
    assert (e["min_runs"], e["strike_limit"]) == (3, None)  # None: the store's
    assert ProcedureStore().strike_limit == 3  # PROCMEM_PROCEDURE_STRIKE_LIMIT unset
    assert defaults(ProcedureStore.locate)["hops"] == 2
    assert defaults(ProcedureStore.add)["namespace"] == "default"
    assert ContextPacker(ProcedureStore()).explore_rate == 0.0
    assert (graph.MAX_NODES, graph.MAX_EDGES, graph.MAX_EDGE_TEXT) == (256, 1024, 512)
    assert (graph.MIN_STEPS, graph.MAX_STEPS, ledger.TRACE_LIMIT) == (2, 64, 50)
    g = SPRTGate()
    assert (g.min_drop, g.alpha, g.beta, g.max_runs, g.min_runs) == (0.15, 0.05, 0.20, 50, 3)
    assert (MarginGate().margin, MarginGate().min_runs) == (0.05, 5)
    assert CostGate().tolerance == 0.25


def test_the_seed_example_end_to_end(store):
    added = store.add(
        "refund request",
        "a customer asks for a refund on a paid invoice",
        ["look up the invoice", "check the refund policy window", "issue or decline"],
        tags=["billing"],
    )
    hits = store.match(
        "customer wants money back for last month's invoice", goal="resolve a refund"
    )
    assert hits[0].key == added.key == "procedure_refund_request"
    run = store.record_run(added.key, ["n1", "n2", "n3"], ok=True, duration_ms=42_000)
    assert (run.duration_ms, run.steps_taken, run.revision) == (42_000, 3, 1)
    report = store.evolve(added.key)
    assert (report.runs_folded, report.status, report.evolved) == (1, "exercised", False)


@pytest.mark.parametrize("revision", [True, 1.0, "1"])
def test_a_run_revision_that_is_not_an_integer_is_refused(revision):
    """``record_run(revision=True)`` (or 1.0) named revision 1, since True == 1.0 == 1
    (audit12b): a revision is an integer, so anything else is refused, naming it, and no
    run is recorded."""
    store = ProcedureStore()
    key = store.add("t", "a situation", steps=["a", "b"]).key
    with pytest.raises(ParameterError, match="revision="):
        store.record_run(key, ["n1"], True, revision=revision)
    assert len(store.runs(key)) == 0
    store.record_run(key, ["n1"], True, revision=np.int64(1))  # a numpy integer is one
    assert [r.revision for r in store.runs(key)] == [1]
