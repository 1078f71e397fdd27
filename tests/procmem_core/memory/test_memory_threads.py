"""The memory store and the learnings queue shared by 8 threads (issue 25, item 6), in
memory and on one SQLite file with the procedure store (the ``backend`` fixture): every
write a thread was told succeeded is there, once, after the threads end and after a
reopen; ids are never handed out twice. The threads also cross the stores' locks both
ways (``complete_run`` writes a reflection into memory; ``set_procedural`` adds to the
procedure store; ``review`` promotes into memory), which would deadlock if the locks
nested in two orders. Threads start on a barrier; no test waits on time."""

from __future__ import annotations

import sys
import threading
import traceback

import numpy as np

from procmem_core.memory import Principal
from procmem_core.reflections import complete_run

THREADS = 8
OPS = 120
WAIT = 600.0  # seconds: the bound on every wait for a thread (never reached when it works)
ADMIN = Principal("root", "admin")
STEPS = ["look up the invoice", "issue the refund"]


class Worker:
    """One thread's writes and what the stores answered."""

    def __init__(self, backend, number: int, start: threading.Barrier) -> None:
        self.b, self.n, self.start = backend, number, start
        self.rng = np.random.default_rng([31, number])
        self.kept: dict[str, str] = {}  # record id -> text, for records still there
        self.deleted: list[str] = []
        self.proposed: dict[str, str] = {}  # candidate id -> rule
        self.supports: dict[str, int] = {}
        self.promoted: list[str] = []
        self.reflections = 0
        self.errors: list[str] = []

    def __call__(self) -> None:
        try:
            self.start.wait(WAIT)
            for j in range(OPS):
                self.step(j)
        except Exception:  # the test reports it
            self.errors.append(traceback.format_exc())

    def step(self, j: int) -> None:
        b, u, tag = self.b, self.rng.random(), f"w{self.n}n{j}"
        if u < 0.30:
            r = b.memory.set(f"fact {tag} about refunds", key=tag, principal=ADMIN)
            self.kept[r.record_id] = r.text
        elif u < 0.40 and self.kept:
            record_id = sorted(self.kept)[int(self.rng.integers(len(self.kept)))]
            assert b.memory.delete(record_id).record_id == record_id
            del self.kept[record_id]
            self.deleted.append(record_id)
        elif u < 0.55:
            assert b.memory.search(f"fact w{self.n} refunds", top_k=3) is not None
        elif u < 0.65:
            c = b.queue.propose(f"rule {tag}: confirm the amount", principal=ADMIN)
            self.proposed[c.candidate_id] = c.text
        elif u < 0.75 and self.proposed:
            cid = sorted(self.proposed)[int(self.rng.integers(len(self.proposed)))]
            b.queue.support(cid, principal=ADMIN, user_id=f"u{j}", session_id=tag, quotes=["yes"])
            self.supports[cid] = self.supports.get(cid, 0) + 1
        elif u < 0.80 and self.proposed:
            cid = sorted(self.proposed)[int(self.rng.integers(len(self.proposed)))]
            if cid not in self.promoted:
                b.queue.review(cid, "promote", principal=ADMIN, reason="seen", destination="memory")
                self.promoted.append(cid)
        elif u < 0.85:
            assert isinstance(b.queue.list(principal=ADMIN), list)
        elif u < 0.92:
            b.memory.set_procedural(
                {"name": f"proc {tag}", "situation": f"when {tag}", "steps": STEPS}
            )
        else:
            key = f"procedure_proc_w{self.n}n{j}"
            if key not in {p.key for p in b.procedures.list(prefix=key)}:
                b.procedures.add(f"proc w{self.n}n{j}", f"when {tag}", STEPS)
            runs = complete_run(b.procedures, [key], ok=True, reflection=f"lesson {tag}",
                                memory=b.memory)  # fmt: skip
            self.reflections += len(runs)


def _hammer(backend) -> list[Worker]:
    start = threading.Barrier(THREADS)
    workers = [Worker(backend, n, start) for n in range(THREADS)]
    threads = [threading.Thread(target=w) for w in workers]
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


def _check(backend, workers: list[Worker]) -> None:
    memory, queue = backend.memory, backend.queue
    records = {r.record_id: r for r in memory.records()}
    for w in workers:
        assert {i: records[i].text for i in w.kept} == w.kept  # every kept fact, as written
        assert not set(w.deleted) & set(records)
    kept = sum(len(w.kept) for w in workers)
    facts = [r for r in records.values() if r.text.startswith("fact ")]
    assert len(facts) == kept
    lessons = [r for r in records.values() if r.memory_type == "reflection"]
    assert len(lessons) == sum(w.reflections for w in workers)
    promoted = [cid for w in workers for cid in w.promoted]
    lineage = sorted(x for r in records.values() for x in r.lineage if x.startswith("learning:"))
    assert lineage == sorted(f"learning:{cid}" for cid in promoted)
    proposed = {cid: text for w in workers for cid, text in w.proposed.items()}
    every = {c.candidate_id: c for s in ("pending", "promoted") for c in queue.list(
        principal=ADMIN, status=s)}  # fmt: skip
    assert {cid: c.text for cid, c in every.items()} == proposed
    assert {cid for cid, c in every.items() if c.status == "promoted"} == set(promoted)
    for w in workers:
        for cid, n in w.supports.items():
            assert len(queue.supporter_rows(cid, principal=ADMIN)) == n


def _state(backend):
    memory, queue = backend.memory, backend.queue
    rows = lambda cid: len(queue.supporter_rows(cid, principal=ADMIN))  # noqa: E731
    candidates = [
        (c.candidate_id, c.text, c.status, rows(c.candidate_id))
        for s in ("pending", "promoted")
        for c in queue.list(principal=ADMIN, status=s)
    ]
    return memory.records(), candidates, [p.key for p in backend.procedures.list()]


def test_eight_threads_share_the_memory_store_and_the_queue(backend):
    workers = _hammer(backend)
    _check(backend, workers)
    before = _state(backend)
    backend.reopen()  # on SQLite: the file holds what the threads were told
    assert _state(backend) == before
