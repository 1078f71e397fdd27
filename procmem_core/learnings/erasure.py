"""What a user erasure removes, as a plan the queue writes through and then applies.

Seed: "A user erasure deletes that user's supporter rows, and their quotes with them. A
candidate left with no supporter is deleted when pending. When decided, it keeps its
status row with the rule blanked, so a rejected rule never comes back as pending."
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from procmem_core.learnings.candidate import CandidateState
from procmem_core.learnings.records import Supporter


@dataclass(frozen=True)
class ErasurePlan:
    """The rows to drop, each touched candidate's remaining rows, and the candidates to
    delete (pending, no supporter left) or blank (decided, no supporter left)."""

    dropped_rows: tuple[str, ...]
    remaining: dict[str, list[Supporter]]
    deleted: tuple[CandidateState, ...]
    blanked: tuple[CandidateState, ...]


def plan_erasure(candidates: Iterable[CandidateState], user_id: str) -> ErasurePlan:
    """The erasure of ``user_id`` over ``candidates`` (nothing is changed here)."""
    dropped: list[str] = []
    remaining: dict[str, list[Supporter]] = {}
    deleted: list[CandidateState] = []
    blanked: list[CandidateState] = []
    for c in candidates:
        left = [r for r in c.rows if r.user_id != user_id]
        if len(left) == len(c.rows):
            continue
        dropped += [r.row_id for r in c.rows if r.user_id == user_id]
        remaining[c.candidate_id] = left
        if not left:
            (deleted if c.status == "pending" else blanked).append(c)
    return ErasurePlan(tuple(dropped), remaining, tuple(deleted), tuple(blanked))
