"""One ``ProcedureStore`` shared by 8 threads (issue 25, item 6), in memory and on SQLite:
8 threads x N mixed operations (record_run, evolve, match, pack, revise, list, add) lose
no run, duplicate no run id, leave every added procedure matchable by its own situation,
and leave aggregates equal to a recount from the ledger.

The threads start together on a barrier and Python switches between them every 10
microseconds (``sys.setswitchinterval``), so their operations interleave as much as
they can; nothing waits on time. Today's code fails this in memory (IndexError,
unmatched procedures, duplicated run ids) and on SQLite (``ProgrammingError``: a
connection used from a second thread)."""

from __future__ import annotations

import sys
import threading
import traceback
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from procmem_core.graph import ContextPacker, ProcedureGraph, ProcedureStore, RevisionError

STEPS = ["look up the invoice", "check the refund policy window", "issue or decline"]
STEADY = ("refund", "close month", "reset password", "renew contract", "ship order")
REVISED = ("rotate keys", "migrate schema")
REVISIONS = [  # the graphs a revise proposes (three nodes each, so every path stays valid)
    ["find the key", "rotate it", "confirm the rotation"],
    ["find the key", "rotate it", "notify the owners"],
    ["list the keys", "rotate each", "confirm the rotation"],
]
PATHS = (["n1"], ["n1", "n2"], ["n1", "n2", "n3"], [])
THREADS = 8
WAIT = 600.0  # seconds: the bound on every wait for a thread (never reached when it works)


def _situation(name: str) -> str:
    return f"a customer asks us to {name} for their account"


def _key(name: str) -> str:
    return "procedure_" + name.replace(" ", "_")


def _extra_situation(extra: str) -> str:
    """Three words no other situation holds (so no hashing collision ties it)."""
    n, j = extra.split()[1:]
    return f"zqa{n}x{j} zqb{n}x{j} zqc{n}x{j}"


def _seeded(store: ProcedureStore) -> ProcedureStore:
    for name in STEADY + REVISED:
        store.add(name, _situation(name), STEPS)
    return store


class Worker:
    """One thread's operations and what the store answered."""

    def __init__(self, store: ProcedureStore, number: int, ops: int, start: threading.Barrier):
        self.store, self.number, self.ops, self.start = store, number, ops, start
        self.rng = np.random.default_rng([2025, number])
        self.packer = ContextPacker(store, explore_rate=0.1, rng=self.rng)
        self.runs: list = []
        self.added: list[str] = []
        self.revised = Counter()
        self.errors: list[str] = []

    def __call__(self) -> None:
        try:
            self.start.wait(WAIT)
            for j in range(self.ops):
                self.step(j)
        except Exception:  # the test reports it
            self.errors.append(traceback.format_exc())

    def step(self, j: int) -> None:
        s, rng, names = self.store, self.rng, STEADY + REVISED
        u = rng.random()
        name = names[rng.integers(len(names))]
        if u < 0.45:
            ok = bool(rng.random() < 0.7)
            path = PATHS[rng.integers(len(PATHS))]
            note = f"t{self.number}-{j}"
            self.runs.append(s.record_run(_key(name), path, ok, note=note, agent=f"t{self.number}"))
        elif u < 0.60:
            hits = s.match(_situation(name), top_k=3, include_quarantined=True)
            assert hits and hits[0].key == _key(name), (name, [h.key for h in hits])
        elif u < 0.72:
            self.packer.pack(_situation(name))
        elif u < 0.84:
            s.evolve(_key(name))
        elif u < 0.90:
            self.revise(REVISED[rng.integers(len(REVISED))])
        elif u < 0.95:
            assert len(s.list()) >= len(names)
        else:
            extra = f"extra {self.number} {j}"
            s.add(extra, _extra_situation(extra), STEPS)
            self.added.append(extra)

    def revise(self, name: str) -> None:
        graph = ProcedureGraph.from_steps(REVISIONS[self.rng.integers(len(REVISIONS))])
        try:
            self.store.revise(_key(name), graph, reason=f"t{self.number}")
        except RevisionError:  # pending, unchanged or rejected before: the store's answer
            return
        self.revised[name] += 1


def _hammer(store: ProcedureStore, ops: int) -> list[Worker]:
    start = threading.Barrier(THREADS)
    workers = [Worker(store, n, ops, start) for n in range(THREADS)]
    threads = [threading.Thread(target=w, name=f"worker-{w.number}") for w in workers]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(WAIT)
    finally:
        sys.setswitchinterval(interval)
    assert not any(t.is_alive() for t in threads)
    assert [e for w in workers for e in w.errors] == []
    return workers


def _recount(name: str, runs) -> ProcedureStore:
    """The reference: one procedure in a fresh in-memory store fed its ledger in order."""
    ref = ProcedureStore()
    ref.add(name, _situation(name), STEPS)
    for r in sorted(runs, key=lambda r: r.run_id):
        ref.record_run(r.key, list(r.path), ok=r.ok, note=r.note, agent=r.agent)
    ref.evolve(_key(name))
    return ref


def _public(store: ProcedureStore, key: str):
    p = store.get(key)
    loc = store.locate(key, at="n1", hops=2)
    return (
        p.runs, p.successes, p.failure_streak, p.run_stats_by_agent, p.status, p.proven_path,
        p.dead_ends, p.fail_prone_steps, p.fail_prone_transitions,
        [(t.src, t.dst, t.taken, t.succeeded) for t in loc.transitions],
    )  # fmt: skip


def _check(store: ProcedureStore, workers: list[Worker]) -> None:
    acked = {r.note: r for w in workers for r in w.runs}
    ledger = [r for name in STEADY + REVISED for r in store.runs(_key(name))]
    assert len(acked) == sum(len(w.runs) for w in workers) > 0
    assert sorted(r.run_id for r in ledger) == list(range(1, len(acked) + 1))  # no gap, no twin
    assert {r.note: r for r in ledger} == acked  # every acknowledged run, as acknowledged
    added = [a for w in workers for a in w.added]
    assert len(store) == len(STEADY + REVISED) + len(added)
    for extra in added:  # each new procedure is found by its own situation
        hits = store.match(_extra_situation(extra), top_k=1)
        assert [m.key for m in hits] == [_key(extra)]
    for name in REVISED:
        key, runs = _key(name), store.runs(_key(name))
        history = [h.revision for h in store.revisions(key)]
        assert history == list(range(1, 2 + sum(w.revised[name] for w in workers)))
        tallies = store._get(key).by_revision  # the per-revision counts the gates read
        for rev in history:
            mine = [r for r in runs if r.revision == rev]
            got = tallies.get(rev)
            counted = (got.runs, got.successes) if got is not None else (0, 0)
            assert counted == (len(mine), sum(r.ok for r in mine)), (name, rev)
        assert {r.revision for r in runs} <= set(history)
    for name in STEADY:
        store.evolve(_key(name))
        ref = _recount(name, store.runs(_key(name)))
        assert _public(store, _key(name)) == _public(ref, _key(name))


def _run(tmp_path: Path, backend: str, ops: int) -> None:
    if backend == "memory":
        store = _seeded(ProcedureStore())
        _check(store, _hammer(store, ops))
        return
    path = tmp_path / "shared.db"
    with ProcedureStore.open(path) as store:
        _seeded(store)
        workers = _hammer(store, ops)
        _check(store, workers)
        before = {n: (_public(store, _key(n)), store.runs(_key(n))) for n in STEADY + REVISED}
    with ProcedureStore.open(path) as again:  # the file holds what the threads saw
        assert {n: (_public(again, _key(n)), again.runs(_key(n))) for n in before} == before


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_eight_threads_lose_nothing_and_aggregates_equal_a_recount(tmp_path, backend):
    _run(tmp_path, backend, ops=150)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_eight_threads_by_a_thousand_operations(tmp_path, backend):
    _run(tmp_path, backend, ops=1000)


def test_a_sqlite_store_opened_in_one_thread_serves_another(tmp_path):
    """Today: ``ProgrammingError`` (SQLite objects created in a thread can only be used in
    that same thread)."""
    with ProcedureStore.open(tmp_path / "s.db") as store:
        store.add("refund", _situation("refund"), STEPS)
        answers: list = []
        thread = threading.Thread(
            target=lambda: answers.append(store.record_run("procedure_refund", ["n1"], True))
        )
        thread.start()
        thread.join(WAIT)
        assert [r.run_id for r in answers] == [1]
        assert [r.run_id for r in store.runs("procedure_refund")] == [1]
