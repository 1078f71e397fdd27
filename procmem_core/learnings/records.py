"""The learnings queue's records: candidates, supporter rows, decisions and reports.

Seed (loom-procedures.txt, "Learnings review queue"): "A learning is a candidate fact
with its supporters (supporter_count, supporters, confidence_avg, rationale,
source_kind), waiting for a person to decide." ``Learning`` is a candidate as listed:

- ``supporter_count``: distinct end users among its supporter rows; ``supporters``
  those users (in order of first support); ``supporter_sessions``: distinct sessions;
  ``supporter_writers``: distinct principals that wrote the rows (a token not pinned to
  one user can send any user_id, so many users from one writer is one source);
- ``confidence_avg``: the mean confidence over rows that stated one (None if none did);
- ``rationale``: the quotes of the earliest remaining supporter row;
- ``source_kind``: ``conversation`` (the conversation seeder), ``supporters`` (a
  candidate your process writes and supports) or ``assistant_turn`` (a bot's rule about
  itself, filed by extraction for ``agent``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from procmem_core.errors import ProcmemError, quote
from procmem_core.memory.access import AccessDenied

STATUSES = ("pending", "promoted", "rejected")
SOURCE_KINDS = ("conversation", "supporters", "assistant_turn")
DECISIONS = {"promote": "promoted", "reject": "rejected"}
DESTINATIONS = ("memory", "knowledge", "both")
EVERY_AGENT = "*"
"""A candidate's ``agent`` for a rule meant for every agent (served to every read)."""


class UnknownLearning(ProcmemError, KeyError):
    """No such candidate (404), or a bot's rule whose last supporter was erased."""

    def __str__(self) -> str:
        return str(self.args[0])


class HiddenLearning(UnknownLearning, AccessDenied):
    """No candidate with this id that the principal can read: raised alike for a missing
    id and for a candidate in a namespace the principal holds no role in, so the global
    ids (``lrn_<n>``) tell neither whether another tenant's candidate exists nor where."""

    def __init__(self, candidate_id: object, principal: Any) -> None:
        self.operation, self.principal, self.needed = "learnings", principal, "viewer"
        Exception.__init__(
            self, f"no learning {quote(candidate_id)} that principal {principal.name!r} can read"
        )


@dataclass(frozen=True, kw_only=True)
class Supporter:
    """One row of ``learnings_supporters``: who supported the candidate, in which session,
    through which writer, with the user's own quotes."""

    row_id: str
    candidate_id: str
    user_id: str
    session_id: str
    writer: str
    quotes: tuple[str, ...]
    confidence: float | None
    seq: int

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "quotes": list(self.quotes)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Supporter:
        return cls(**{**data, "quotes": tuple(data["quotes"])})


@dataclass(frozen=True, kw_only=True)
class Decision:
    """A review: the decision, the reason, who decided, where a promotion wrote (the
    destination and the ids of the records it wrote) and when (queue sequence)."""

    decision: str
    reason: str
    reviewer: str
    destination: str | None
    written: tuple[str, ...]
    seq: int

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "written": list(self.written)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Decision:
        return cls(**{**data, "written": tuple(data["written"])})


@dataclass(frozen=True, kw_only=True)
class Learning:
    """A candidate as ``learnings.list`` shows it (see the module docstring). ``text`` is
    empty when a user erasure blanked a decided candidate's rule."""

    candidate_id: str
    namespace: str
    text: str
    source_kind: str
    agent: str | None
    status: str
    supporter_count: int
    supporters: tuple[str, ...]
    supporter_sessions: int
    supporter_writers: int
    confidence_avg: float | None
    rationale: tuple[str, ...]
    decisions: tuple[Decision, ...] = ()

    @property
    def blanked(self) -> bool:
        return not self.text

    @property
    def decision(self) -> Decision | None:
        """The latest review, if any."""
        return self.decisions[-1] if self.decisions else None


@dataclass(frozen=True, kw_only=True)
class ReviewResult:
    """What ``learnings.review`` did: ``changed`` False for a no-op (the candidate already
    held the decision); ``written``: the record ids this review's promotion wrote."""

    learning: Learning
    changed: bool
    written: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Quality:
    """``learnings.quality`` for one namespace and source kind: counts by status and the
    approve ratio ``promoted / (promoted + rejected)`` (None before any decision)."""

    namespace: str
    source_kind: str
    pending: int
    promoted: int
    rejected: int

    @classmethod
    def of(cls, namespace: str, source_kind: str, statuses: list[str]) -> Quality:
        """Counts of the status rows ``statuses``."""
        return cls(
            namespace=namespace,
            source_kind=source_kind,
            pending=statuses.count("pending"),
            promoted=statuses.count("promoted"),
            rejected=statuses.count("rejected"),
        )

    @property
    def approve_ratio(self) -> float | None:
        decided = self.promoted + self.rejected
        return self.promoted / decided if decided else None


@dataclass(frozen=True, kw_only=True)
class Erasure:
    """What a user erasure removed: supporter rows (with their quotes), pending candidates
    left without a supporter (deleted) and decided ones (rule blanked, status kept)."""

    user_id: str
    supporter_rows: int
    deleted: tuple[str, ...]
    blanked: tuple[str, ...]
