"""The distill worker's ledger: every pair it tried, with the reflection or the fault.

A model call that fails is recorded here with what failed, so it is never lost
silently; a pair that failed stays eligible and is tried again on the next run, a pair
that produced a reflection is not distilled twice. ``DistillLedger()`` is in memory;
``DistillLedger.open(path)`` writes through to the SQLite table
``reflection_distill_attempts`` (``memory.journal``, beside the other stores).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from procmem_core.closed import close_journal
from procmem_core.locking import thread_safe
from procmem_core.memory import RowJournal

TABLE = "reflection_distill_attempts"
OUTCOMES = ("reflection", "fault")


@dataclass(frozen=True, kw_only=True)
class DistillAttempt:
    """One pair tried: ``outcome`` "reflection" (``record_id`` written) or "fault"
    (``kind``, ``error``, ``message`` and the raw replies), with the tokens it spent."""

    seq: int
    failed_session: str
    succeeded_session: str
    similarity: float
    outcome: str
    record_id: str | None = None
    kind: str | None = None
    error: str | None = None
    message: str | None = None
    raw: tuple[str, ...] = ()
    calls: int = 0
    tokens: int = 0

    @property
    def pair(self) -> tuple[str, str]:
        return self.failed_session, self.succeeded_session


@thread_safe()
class DistillLedger:
    """Attempts in order; ``done_pairs`` are the pairs that produced a reflection."""

    def __init__(self) -> None:
        self._attempts: list[DistillAttempt] = []
        self._journal: RowJournal | None = None

    @classmethod
    def open(cls, path: str | Path) -> DistillLedger:
        ledger = cls()
        journal = RowJournal(path, "reflection_distill", (TABLE,))
        try:  # a damaged row: StoreFileError naming the file and table, the file closed
            ledger._attempts = journal.load(
                TABLE, lambda b: DistillAttempt(**{**b, "raw": tuple(b["raw"])})
            )
        except BaseException:
            journal.close()
            raise
        ledger._journal = journal
        return ledger

    def close(self) -> None:
        """Close the file (``procmem_core.closed``: a later write raises ``StoreClosed``);
        nothing to do in memory."""
        self._journal = close_journal("DistillLedger", self._journal)

    def record(self, **fields: Any) -> DistillAttempt:
        """Append one attempt (written through before it is kept)."""
        attempt = DistillAttempt(seq=len(self._attempts) + 1, **fields)
        if self._journal is not None:
            body = {**asdict(attempt), "raw": list(attempt.raw)}
            self._journal.commit({TABLE: [(str(attempt.seq), attempt.seq, body)]})
        self._attempts.append(attempt)
        return attempt

    @property
    def attempts(self) -> tuple[DistillAttempt, ...]:
        return tuple(self._attempts)

    @property
    def faults(self) -> tuple[DistillAttempt, ...]:
        return tuple(a for a in self._attempts if a.outcome == "fault")

    def done_pairs(self) -> frozenset[tuple[str, str]]:
        return frozenset(a.pair for a in self._attempts if a.outcome == "reflection")
