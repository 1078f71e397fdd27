"""Several processes writing one store, an SQLite file (issue 17) or a PostgreSQL database
(issue 26): every acknowledged run is stored exactly once, aggregates equal a recount
from the ledger, a stale process refreshes before it writes, and a file that is not a
procmem store is refused with its path named.

The 4-process (SQLite) and 2-process (PostgreSQL) tests start real processes; every wait
is bounded, and the writers start together on a barrier the test controls (no sleeps, no
timing)."""

from __future__ import annotations

import json
import os
import selectors
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from procmem_core.graph import ProcedureGraph, ProcedureStore, RevisionError, StoreFileError

STEPS = ["look up the invoice", "check the refund policy window", "issue or decline"]
KEYS = ("procedure_refund", "procedure_close_month", "procedure_reset_password")
REPO = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
WAIT = 240.0  # seconds: the bound on every wait for a child process

WRITER = textwrap.dedent(
    """
    import json, sys
    from procmem_core.graph import ProcedureStore
    path, worker, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    keys = ("procedure_refund", "procedure_close_month", "procedure_reset_password")
    paths = (["n1"], ["n1", "n2"], ["n1", "n2", "n3"], [])
    store = ProcedureStore.open(path)
    print("ready", flush=True)
    assert sys.stdin.readline().strip() == "go"
    for i in range(n):
        key = keys[(i + worker) % 3]
        ok = (i * 7 + worker) % 5 != 0
        run = store.record_run(key, paths[i % 4], ok=ok, note=f"w{worker}-{i}", agent=f"w{worker}")
        print(json.dumps([run.run_id, run.note, run.key]), flush=True)
        if i % 25 == 24:
            store.evolve(key)
    store.close()
    """
)


def _readline(proc: subprocess.Popen, timeout: float) -> str:
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            raise AssertionError(f"no line from writer {proc.pid} within {timeout} s")
    return proc.stdout.readline()


def _recount(runs) -> ProcedureStore:
    """The reference: a fresh in-memory store fed the ledger in order, then evolved."""
    ref = ProcedureStore()
    for key in KEYS:
        ref.add(key.removeprefix("procedure_").replace("_", " "), "s", STEPS)
    for r in sorted(runs, key=lambda r: r.run_id):
        ref.record_run(r.key, list(r.path), ok=r.ok, note=r.note, agent=r.agent)
    for key in KEYS:
        ref.evolve(key)
    return ref


def _public(store: ProcedureStore, key: str):
    p = store.get(key)
    loc = store.locate(key, at="n1", hops=2)
    return (
        p.runs, p.successes, p.failure_streak, p.run_stats_by_agent, p.status, p.proven_path,
        p.dead_ends, p.fail_prone_steps, p.fail_prone_transitions,
        [(t.src, t.dst, t.taken, t.succeeded) for t in loc.transitions],
    )  # fmt: skip


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store shared by several processes lives: an SQLite file, then a fresh
    PostgreSQL database (``pg_database``, tests/conftest.py)."""
    if request.param == "sqlite":
        return str(tmp_path / "p.db")
    return request.getfixturevalue("pg_database")


@pytest.mark.slow
def test_four_processes_lose_and_duplicate_no_run_and_aggregates_equal_a_recount(tmp_path):
    _writers_agree(str(tmp_path / "shared.db"), workers=4, n=500)


@pytest.mark.slow
def test_two_processes_on_postgresql_lose_and_duplicate_no_run(pg_database):
    """The same on one PostgreSQL store: the write lock is the database's advisory lock."""
    _writers_agree(pg_database, workers=2, n=300)


def _writers_agree(path: str, workers: int, n: int) -> None:
    """``workers`` processes record ``n`` runs each on ``path`` at once (released together
    on a line the test writes): every acknowledged run is stored once, with the id and key
    it was acknowledged with, and every aggregate equals a recount from the ledger."""
    with ProcedureStore.open(path) as store:
        for key in KEYS:
            store.add(key.removeprefix("procedure_").replace("_", " "), "s", STEPS)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True}
    command = [sys.executable, "-c", WRITER, path]
    procs = [
        subprocess.Popen([*command, str(w), str(n)], cwd=REPO, env=env, **pipes)
        for w in range(workers)
    ]
    try:
        for p in procs:
            assert _readline(p, WAIT).strip() == "ready"
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        outputs = [p.communicate(timeout=WAIT)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=WAIT)
    assert [p.returncode for p in procs] == [0] * workers
    acked = [json.loads(line) for out in outputs for line in out.splitlines()]
    assert len(acked) == n * workers
    with ProcedureStore.open(path) as store:
        runs = [r for key in KEYS for r in store.runs(key)]
        stored = {r.note: (r.run_id, r.key) for r in runs}
        assert len(runs) == len(stored) == n * workers  # none lost, none duplicated
        assert len({r.run_id for r in runs}) == len(runs)
        assert {note: (i, key) for i, note, key in acked} == stored
        for key in KEYS:
            store.evolve(key)
        ref = _recount(runs)
        for key in KEYS:
            assert _public(store, key) == _public(ref, key)


def test_a_stale_process_refreshes_before_it_writes(location):
    path = location
    first, second = ProcedureStore.open(path), ProcedureStore.open(path)
    key = first.add("refund", "s", STEPS).key
    for i in range(100):
        (first if i % 3 else second).record_run(key, ["n1", "n2"], ok=i % 4 != 0)
    second.evolve(key)  # a cache that has not read the other's runs would write 1/3 of them
    first.close()
    second.close()
    with ProcedureStore.open(path) as reopened:
        p = reopened.get(key)
        assert (p.runs, p.successes) == (100, 75)
        assert [r.run_id for r in reopened.runs(key)] == list(range(1, 101))
        assert reopened.get(key).ledger_folded_through == 100


def test_a_stale_process_writes_against_a_revision_another_process_made(location):
    """``revise`` is a write like the others: a process that loaded the procedure before
    another one revised it records its next run against the new revision, and its own
    ``revise`` sees the pending one (refused while it is pending), not its stale copy."""
    path = location
    first, second = ProcedureStore.open(path), ProcedureStore.open(path)
    key = first.add("refund", "s", STEPS).key
    assert second.record_run(key, ["n1", "n2", "n3"], ok=True).revision == 1
    first.revise(key, ProcedureGraph.from_steps(STEPS[:2]), "shorter")
    run = second.record_run(key, ["n1", "n2"], ok=False)
    assert (run.run_id, run.revision) == (2, 2)
    with pytest.raises(RevisionError, match="revision 2 is still pending"):
        second.revise(key, ProcedureGraph.from_steps(STEPS[1:]), "another")
    first.close()
    second.close()
    with ProcedureStore.open(path) as reopened:
        p = reopened.get(key)
        assert (p.revision, p.pending_revision.prior_revision) == (2, 1)
        assert [(r.run_id, r.revision) for r in reopened.runs(key)] == [(1, 1), (2, 2)]


def test_a_reader_sees_what_another_process_added(location):
    path = location
    with ProcedureStore.open(path) as writer, ProcedureStore.open(path) as reader:
        assert len(reader) == 0
        key = writer.add("refund", "a customer asks for a refund", STEPS).key
        writer.record_run(key, ["n1"], ok=True)
        assert reader.match("customer wants a refund")[0].key == key
        assert reader.get(key).runs == 1
        writer.delete(key)
        assert len(reader) == 0 and reader.gate_decisions() == ()


def _text(p: Path) -> None:
    p.write_text("procedures, one a line\n", encoding="utf-8")


def _random(p: Path) -> None:
    p.write_bytes(bytes(range(256)) * 64)


def _truncated(p: Path) -> None:
    good = p.with_name("good.db")
    with ProcedureStore.open(good) as store:
        key = store.add("refund", "s", STEPS).key
        for i in range(300):
            store.record_run(key, ["n1", "n2"], ok=True, note="x" * 200 + str(i))
    con = sqlite3.connect(good)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = good.read_bytes()
    p.write_bytes(data[: len(data) // 3])


def _mlflow(p: Path) -> None:
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE experiments (experiment_id INTEGER PRIMARY KEY, name TEXT)")
    con.execute("CREATE TABLE alembic_version (version_num TEXT)")
    con.commit()
    con.close()


def _broken_json(p: Path) -> None:
    with ProcedureStore.open(p) as store:
        store.add("refund", "s", STEPS)
    con = sqlite3.connect(p)
    con.execute('UPDATE procedures SET state = \'{"format": 2, "key": \'')
    con.commit()
    con.close()


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (_text, "is not an SQLite database"),
        (_random, "is not an SQLite database"),
        (_truncated, "cannot be read as a store"),
        (_mlflow, "of another kind (alembic_version, experiments)"),
        (_broken_json, "damaged row in procedures (default/procedure_refund)"),
    ],
)
def test_opening_a_file_that_is_not_a_store_names_the_path(tmp_path, make, fragment):
    path = tmp_path / "not_a_store.db"
    make(path)
    size = path.stat().st_size
    with pytest.raises(StoreFileError) as err:
        ProcedureStore.open(path)
    assert str(path) in str(err.value) and fragment in str(err.value)
    assert "expected a procmem procedure store" in str(err.value)
    assert path.stat().st_size == size  # nothing was written to it


def test_a_version_1_store_is_upgraded_on_open(tmp_path):
    """tests/data/procedure_store_v1.sql: a store written by the landed (schema 1) code,
    with a pending revision; it opens, keeps every run and decision, and takes writes."""
    path = tmp_path / "v1.db"
    con = sqlite3.connect(path)
    con.executescript((REPO / "tests" / "data" / "procedure_store_v1.sql").read_text())
    con.close()
    with ProcedureStore.open(path) as store:
        p = store.get("procedure_refund")
        assert (p.revision, p.pending_revision.prior_revision) == (2, 1)
        assert [r.run_id for r in store.runs("procedure_refund")] == list(range(1, 8))
        assert len(store.gate_decisions()) == 2 and store.get("procedure_close_month").runs == 1
        run = store.record_run("procedure_refund", ["n1"], ok=False)
        assert run.run_id == 9  # after the 8 runs the file holds
    con = sqlite3.connect(path)
    assert con.execute("SELECT version FROM schema_version").fetchall() == [(3,)]
    con.close()
