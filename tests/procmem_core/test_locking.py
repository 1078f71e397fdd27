"""``@thread_safe`` (procmem_core.locking): every public method of the four stores runs
under the store's lock, and a call in progress holds it (checked with events, not time)."""

from __future__ import annotations

import inspect
import threading

import numpy as np

from procmem_core.graph import HashingEmbedder, ProcedureStore
from procmem_core.learnings import LearningsQueue
from procmem_core.locking import thread_safe
from procmem_core.memory import MemoryStore
from procmem_core.reflections import complete_run
from procmem_core.reflections.ledger import DistillLedger

WAIT = 600.0  # seconds: the bound on every wait (never reached when it works)
STORES = {ProcedureStore: (), MemoryStore: ("set_procedural",), LearningsQueue: (),
          DistillLedger: ()}  # fmt: skip


def test_every_public_method_of_every_store_is_locked():
    for cls, unlocked in STORES.items():
        public = [
            name
            for name in dir(cls)
            if (not name.startswith("_") or name == "__len__")
            and inspect.isfunction(inspect.getattr_static(cls, name))
        ]
        assert len(public) >= 3, cls
        for name in public:
            locked = getattr(getattr(cls, name), "_procmem_locked", False)
            assert locked == (name not in unlocked), (cls.__name__, name)


class BlockingEmbedder:
    """The default embedder, that stops inside ``embed`` until ``release`` is set once
    ``armed``; ``entered`` is set when it stops."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder()
        self.dim = self.inner.dim
        self.armed = False
        self.entered, self.release = threading.Event(), threading.Event()

    def embed(self, texts) -> np.ndarray:
        if self.armed:
            self.entered.set()
            assert self.release.wait(WAIT)
        return self.inner.embed(texts)


def test_a_match_in_progress_holds_the_store_lock(tmp_path):
    embedder = BlockingEmbedder()
    store = ProcedureStore.open(tmp_path / "s.db", embedder=embedder)
    store.add("refund", "a customer wants a refund", ["look up", "refund"])
    embedder.armed = True
    answers: list = []
    matcher = threading.Thread(target=lambda: answers.append(store.match("a refund")))
    matcher.start()
    assert embedder.entered.wait(WAIT)
    assert not store._lock.acquire(blocking=False)  # held by the match
    embedder.release.set()
    matcher.join(WAIT)
    assert [m.key for m in answers[0]] == ["procedure_refund"]
    assert store._lock.acquire(blocking=False)
    store._lock.release()
    store.close()


def test_complete_run_holds_no_procedure_lock_while_it_writes_to_memory():
    """The reflection goes to memory after the run's write released the procedure store's
    lock, so a memory store that calls the procedure store cannot deadlock with it."""
    embedder = BlockingEmbedder()
    procedures = ProcedureStore()
    memory = MemoryStore(embedder=embedder)
    procedures.add("refund", "a customer wants a refund", ["look up", "refund"])
    embedder.armed = True
    done: list = []
    worker = threading.Thread(
        target=lambda: done.append(
            complete_run(procedures, ["procedure_refund"], True, "ask first", memory=memory)
        )
    )
    worker.start()
    assert embedder.entered.wait(WAIT)  # inside memory.set, under the memory lock
    assert not memory._lock.acquire(blocking=False)
    assert procedures._lock.acquire(blocking=False)  # the procedure store's lock is free
    procedures._lock.release()
    embedder.release.set()
    worker.join(WAIT)
    assert [r.run_id for r in done[0]] == [1]
    assert [r.text for r in memory.records("reflection")] == ["Lessons:\n- ask first"]


def test_the_lock_is_re_entrant_and_one_per_instance():
    @thread_safe()
    class Counter:
        def __init__(self) -> None:
            self.n = 0

        def bump(self) -> int:
            self.n += 1
            return self.n

        def bump_twice(self) -> int:
            self.bump()
            return self.bump()

    a, b = Counter(), Counter()
    assert (a.bump_twice(), b.bump()) == (2, 1)
    assert a._lock is not b._lock


def test_a_locked_store_pickles_without_its_lock_and_the_copy_has_its_own():
    import pickle

    from procmem_core.graph import ProcedureStore

    store = ProcedureStore()
    store.add("refund", "customer wants a refund", steps=["check the order", "refund it"])
    copy = pickle.loads(pickle.dumps(store))
    assert copy._lock is not store._lock
    assert [p.key for p in copy.list()] == [p.key for p in store.list()]
    assert (
        copy.match("customer wants a refund")[0].key
        == store.match("customer wants a refund")[0].key
    )
    with copy._lock:  # re-entrant, like the original's
        copy.list()


def test_a_locked_method_keeps_its_signature_and_defaults_and_holds_the_lock():
    seen: list = []
    marker = object()

    @thread_safe()
    class Store:
        def __init__(self) -> None:
            self.n = 0

        def call(self, a, b=marker, *, c=(), d=None):
            seen.append(self._lock._is_owned())
            return a, b, c, d

        def spread(self, *args, **kwargs):
            seen.append(self._lock._is_owned())
            return args, kwargs

    s = Store()
    assert inspect.signature(Store.call) == inspect.signature(Store.call.__wrapped__)
    assert s.call(1) == (1, marker, (), None)
    assert s.call(1, 2, d=4, c=3) == (1, 2, 3, 4)
    assert s.call(a=1, b=2) == (1, 2, (), None)
    assert s.spread(1, x=2) == ((1,), {"x": 2})
    assert seen == [True] * 4
    assert not s._lock._is_owned()
