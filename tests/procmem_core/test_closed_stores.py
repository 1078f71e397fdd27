"""A store opened on a file and then closed refuses later calls (``procmem_core.closed``).

Before, ``close`` set the journal to None, so the closed store became an in-memory one:
``add``, ``record_run``, ``set``, ``propose`` and ``DistillLedger.record`` after ``close``
answered as stored (a run id, a record) and wrote nothing to the file, so the write was
lost with the process (a thread still at work when another closed a shared store lost
its writes without a word). Now each raises ``StoreClosed`` naming the store and its
file, and the file holds what it held. An in-memory store's ``close`` changes nothing."""

from __future__ import annotations

import pytest

from procmem_core.closed import StoreClosed
from procmem_core.graph import ProcedureStore
from procmem_core.learnings import LearningsQueue
from procmem_core.memory import MemoryStore, Principal
from procmem_core.reflections import DistillLedger

ROOT = Principal("root", role="admin")
STEPS = ["look up the invoice", "issue the refund"]


def test_a_closed_procedure_store_refuses_and_its_file_is_unchanged(tmp_path) -> None:
    path = tmp_path / "procedures.db"
    store = ProcedureStore.open(path)
    ref = store.add("refund", "a customer asks for a refund", STEPS).ref
    store.record_run(ref, ["n1"], ok=True)
    store.close()
    store.close()  # closing again does nothing
    calls = {
        "record_run": lambda: store.record_run(ref, ["n1"], ok=False),
        "add": lambda: store.add("invoice", "a customer asks for an invoice", STEPS),
        "evolve": lambda: store.evolve(ref),
        "log_pack": lambda: store.log_pack("s1", ref, False, 0.0, [ref]),
        "get": lambda: store.get(ref),
    }
    for call in calls.values():
        with pytest.raises(StoreClosed, match=f"ProcedureStore was closed.*{path.name}"):
            call()
    with ProcedureStore.open(path) as again:
        assert [p.ref for p in again.list()] == [ref]
        assert [r.ok for r in again.runs(ref)] == [True] and again.pack_log() == ()


def test_closed_memory_queue_and_ledger_refuse_and_their_files_are_unchanged(tmp_path) -> None:
    path = tmp_path / "memory.db"
    memory, queue, ledger = (
        MemoryStore.open(path), LearningsQueue.open(path), DistillLedger.open(path)
    )  # fmt: skip
    kept = memory.set("refunds within 30 days", principal=ROOT).record_id
    queue.propose("always confirm the invoice id", principal=ROOT)
    for store in (memory, queue, ledger):
        store.close()
    with pytest.raises(StoreClosed, match="MemoryStore was closed"):
        memory.set("lost after close", principal=ROOT)
    with pytest.raises(StoreClosed, match="MemoryStore was closed"):
        memory.delete(kept)
    with pytest.raises(StoreClosed, match="LearningsQueue was closed"):
        queue.propose("never stored", principal=ROOT)
    with pytest.raises(StoreClosed, match="DistillLedger was closed"):
        ledger.record(failed_session="a", succeeded_session="b", similarity=0.9, outcome="fault")
    assert ledger.attempts == ()
    memory, queue, ledger = (
        MemoryStore.open(path), LearningsQueue.open(path), DistillLedger.open(path)
    )  # fmt: skip
    assert [r.text for r in memory.records()] == ["refunds within 30 days"]
    assert [c.text for c in queue.list(principal=ROOT)] == ["always confirm the invoice id"]
    assert ledger.attempts == ()
    for store in (memory, queue, ledger):
        store.close()


def test_an_in_memory_store_is_still_used_after_close() -> None:
    store, memory = ProcedureStore(), MemoryStore()
    store.close()
    memory.close()
    assert store.add("refund", "a customer asks for a refund", STEPS).key == "procedure_refund"
    assert memory.set("kept", principal=ROOT).text == "kept"
