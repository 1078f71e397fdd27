"""One candidate's state inside the queue: its row, its decisions and its supporter rows.

``snapshot`` computes what ``learnings.list`` shows from the supporter rows that remain
(``records.Learning``), so an erasure changes every count and the rationale at once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from procmem_core.errors import ParameterError, check_probability, check_text
from procmem_core.learnings.records import Decision, Learning, Quality, Supporter
from procmem_core.limits import MAX_NOTE, check_identifier


def normalized(text: str) -> str:
    """Case-folded, white space collapsed: two statements of one rule are one candidate."""
    return " ".join(text.casefold().split())


def fingerprint(namespace: str, source_kind: str, agent: str | None, text: str) -> str:
    """SHA-256 of (namespace, source kind, agent, normalized text): the candidate's identity,
    kept when an erasure blanks the rule so a decided rule never comes back as pending."""
    ident = json.dumps([namespace, source_kind, agent, normalized(text)], ensure_ascii=False)
    return hashlib.sha256(ident.encode("utf-8")).hexdigest()


def check_support(
    session_id: Any, quotes: Any, confidence: Any
) -> tuple[tuple[str, ...], float | None]:
    """A supporter row's session, the user's own quotes (at least one) and its optional
    confidence, checked; returns ``(quotes, confidence)``."""
    check_identifier("session_id", session_id)
    if isinstance(quotes, str) or not isinstance(quotes, Sequence) or not quotes:
        raise ParameterError("quotes", quotes, "expected the user's own words: a list of strings")
    for q in quotes:
        check_text("quotes", q, MAX_NOTE)
    if confidence is not None:
        confidence = check_probability("confidence", confidence)
    return tuple(quotes), confidence


@dataclass
class CandidateState:
    """The candidate row (rule, kind, agent, status, decisions) and its supporter rows.
    The row holds the rule and no user's words; the quotes live in the supporter rows."""

    candidate_id: str
    namespace: str
    text: str
    fingerprint: str
    source_kind: str
    agent: str | None
    seq: int
    status: str = "pending"
    decisions: list[Decision] = field(default_factory=list)
    rows: list[Supporter] = field(default_factory=list)

    @property
    def hidden(self) -> bool:
        """A bot's rule whose last supporter was erased answers not found (seed: 404)."""
        return self.source_kind == "assistant_turn" and not self.rows and not self.text

    def snapshot(self) -> Learning:
        users = tuple(dict.fromkeys(r.user_id for r in self.rows))
        stated = [r.confidence for r in self.rows if r.confidence is not None]
        return Learning(
            candidate_id=self.candidate_id,
            namespace=self.namespace,
            text=self.text,
            source_kind=self.source_kind,
            agent=self.agent,
            status=self.status,
            supporter_count=len(users),
            supporters=users,
            supporter_sessions=len({r.session_id for r in self.rows}),
            supporter_writers=len({r.writer for r in self.rows}),
            confidence_avg=sum(stated) / len(stated) if stated else None,
            rationale=self.rows[0].quotes if self.rows else (),
            decisions=tuple(self.decisions),
        )

    def to_json(self) -> dict[str, Any]:
        """The candidate row as stored (supporter rows are stored apart)."""
        return {
            "candidate_id": self.candidate_id,
            "namespace": self.namespace,
            "text": self.text,
            "fingerprint": self.fingerprint,
            "source_kind": self.source_kind,
            "agent": self.agent,
            "seq": self.seq,
            "status": self.status,
            "decisions": [d.to_json() for d in self.decisions],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CandidateState:
        decisions = [Decision.from_json(d) for d in data["decisions"]]
        return cls(**{**data, "decisions": decisions})


def quality(
    candidates: Iterable[CandidateState], namespaces: Sequence[str], source_kind: str
) -> tuple[Quality, ...]:
    """``learnings.quality`` per namespace: counts of every status row of ``source_kind``
    (blanked ones included: their decision was made) and the approve ratio."""
    held = [c for c in candidates if c.source_kind == source_kind]
    return tuple(
        Quality.of(ns, source_kind, [c.status for c in held if c.namespace == ns])
        for ns in namespaces
    )
