"""One write of a ``ProcedureStore``: what it changed, how to undo it in memory, and what
it tells the cache once committed.

In memory a write only updates the match index. On SQLite (``graph.sqlite``) a write is
one transaction under the file's write lock: the store's cache is synced first, the
entries the write changes are guarded (their JSON kept) so a failed transaction leaves
memory as it was, and after the commit the cache's ``SyncPoint`` moves past the write so
the next sync does not read it back.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from procmem_core.gates import GateRecord
from procmem_core.graph.entry import ProcedureEntry
from procmem_core.graph.journal import SyncPoint, Transaction
from procmem_core.graph.ledger import RunRecord

if TYPE_CHECKING:
    from procmem_core.graph.matching import MatchIndex


@dataclass(slots=True)
class Write:
    """The bookkeeping of one write to a store on file, in transaction ``tx`` (see the
    module doc; a store in memory writes through ``InMemoryWrite``)."""

    tx: Transaction
    index: MatchIndex
    saved: list[tuple[str, dict, list[RunRecord]]] = field(default_factory=list)
    rows: dict[str, tuple[int, int]] = field(default_factory=dict)
    last_run_id: int = 0
    last_decision: int = 0
    touched: list[tuple[ProcedureEntry, bool]] = field(default_factory=list)

    def guard(self, entry: ProcedureEntry) -> ProcedureEntry:
        """Keep ``entry`` as it is now, to restore it if the write fails."""
        self.saved.append((entry.ref, entry.to_json(), list(entry.runs)))
        return entry

    def put(self, entry: ProcedureEntry, graph_changed: bool = False) -> None:
        """Write ``entry`` (its state; its index row once the write succeeds, its tools too
        when its graph may have changed)."""
        self.rows[entry.ref] = self.tx.put(entry)
        self.touched.append((entry, graph_changed))

    def add_runs(self, runs: list[RunRecord]) -> None:
        self.tx.add_runs(runs)
        for r in runs:  # a loop, not ``max`` over a generator: once per recorded run
            if r.run_id > self.last_run_id:
                self.last_run_id = r.run_id

    def add_decisions(self, decisions: list[GateRecord]) -> None:
        if decisions:
            self.last_decision = self.tx.add_decisions(decisions)

    def restore(self, entries: dict[str, ProcedureEntry]) -> None:
        """Put every guarded entry back as it was (the transaction was rolled back)."""
        for ref, state, runs in reversed(self.saved):
            if ref in entries:
                entries[ref] = ProcedureEntry.from_json(state, runs)
                e = entries[ref]
                if ref in self.index.rows:
                    self.index.set_stats(ref, e.agg.runs, e.agg.successes, e.status_code)
                    self.index.set_tools(ref, e.graph.tools())

    def committed(self, seen: SyncPoint) -> None:
        """Move the cache's sync point past this write and refresh the touched index rows."""
        seen.rows.update(self.rows)
        if self.tx.version is not None:
            seen.version = self.tx.version
        seen.last_run_id = max(seen.last_run_id, self.last_run_id)
        seen.last_decision = max(seen.last_decision, self.last_decision)
        refresh_rows(self.index, self.touched)


def refresh_rows(index: MatchIndex, touched: list[tuple[ProcedureEntry, bool]]) -> None:
    """Bring the index rows of the entries a committed write touched up to date: counts and
    status, and the tools of those whose graph may have changed."""
    rows = index.rows
    for e, graph_changed in touched:
        ref = e.ref
        if ref in rows:
            agg = e.current.agg
            index.set_stats(ref, agg.runs, agg.successes, e.status_code)
            if graph_changed:
                index.set_tools(ref, e.graph.tools())


class InMemoryWrite:
    """One write to a store in memory, its own ``Write``: the store's ``lock`` held for the
    block and the touched index rows refreshed when it ends without an exception.

    A store in memory has no transaction (``tx`` is None), no other writer and no file to
    roll back to, so nothing is guarded, no run id or decision is tracked for a sync point,
    and a write keeps only the entries it touched (``Write``'s other fields stay unused
    there): the same calls, without building that bookkeeping on every write."""

    __slots__ = ("index", "lock", "touched")
    tx = None

    def __init__(self, index: MatchIndex, lock: AbstractContextManager) -> None:
        self.index, self.lock, self.touched = index, lock, []

    def __enter__(self) -> InMemoryWrite:
        self.lock.__enter__()
        return self

    def guard(self, entry: ProcedureEntry) -> ProcedureEntry:
        return entry  # nothing to restore: no transaction can fail after the block

    def put(self, entry: ProcedureEntry, graph_changed: bool = False) -> None:
        self.touched.append((entry, graph_changed))

    def add_runs(self, runs: list[RunRecord]) -> None:
        """Nothing to track: run ids come from the store's own counter in memory."""

    def add_decisions(self, decisions: list[GateRecord]) -> None:
        """Nothing to track: the store keeps its decisions in memory itself."""

    def __exit__(self, exc_type: object, exc: object, tb: object) -> bool:
        try:
            if exc_type is None:
                refresh_rows(self.index, self.touched)
        finally:
            self.lock.__exit__(None, None, None)
        return False
