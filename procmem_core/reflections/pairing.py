"""Pairing for the distill worker: confidently failed sessions with their nearest successes.

Each failed session whose label confidence is at least ``min_confidence``, oldest first,
is paired with the successful session most similar to it (cosine similarity of the
memory store's embedder over the session's text, or its situation with
``match_on="situation"``; ties go to the earliest success) when that similarity reaches
``similarity_floor`` (``graph.embedding.reaches_floor``: within ``FLOOR_SLACK`` of it, the float32
rounding of a cosine, so a floor of 1 pairs identical texts); pairs already distilled are
skipped; at most ``max_pairs`` pairs. No model client is loaded here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from procmem_core.errors import ParameterError, check_bool, check_probability, check_text
from procmem_core.graph.embedding import reaches_floor
from procmem_core.memory.index import VectorIndex
from procmem_core.reflections.settings import DistillSettings


@dataclass(frozen=True, kw_only=True)
class SessionOutcome:
    """A finished session as the worker sees it: the text shown to the model (and embedded
    for pairing unless ``match_on="situation"``, which embeds ``situation``), its outcome
    label, how confident that label is, and its own evidence keys."""

    session_id: str
    text: str
    ok: bool
    confidence: float = 1.0
    evidence: tuple[str, ...] = ()
    situation: str | None = None

    def __post_init__(self) -> None:
        check_text("session_id", self.session_id)
        check_text("text", self.text)
        check_bool("ok", self.ok)
        check_probability("confidence", self.confidence)
        if self.situation is not None:
            check_text("situation", self.situation)
        object.__setattr__(
            self, "evidence", tuple(check_text("evidence", e) for e in self.evidence)
        )


@dataclass(frozen=True, kw_only=True)
class SessionPair:
    """A confidently failed session and its nearest successful one."""

    failed: SessionOutcome
    succeeded: SessionOutcome
    similarity: float

    @property
    def key(self) -> tuple[str, str]:
        return self.failed.session_id, self.succeeded.session_id


@dataclass(frozen=True, kw_only=True)
class Pairing:
    """What ``pair_sessions`` found: the pairs, and the confident failures left unpaired
    (no success reached the floor) or skipped (already distilled)."""

    pairs: tuple[SessionPair, ...]
    confident_failures: int
    unpaired: int
    already_done: int


def pair_sessions(
    sessions: Sequence[SessionOutcome],
    index: VectorIndex,
    settings: DistillSettings,
    done: frozenset[tuple[str, str]] = frozenset(),
) -> Pairing:
    """Pair confidently failed sessions with their nearest successes (module docstring)."""
    sessions = list(sessions)
    for i, s in enumerate(sessions):
        if not isinstance(s, SessionOutcome):
            raise ParameterError(f"sessions[{i}]", s, "expected a SessionOutcome")
    failed = [s for s in sessions if not s.ok and s.confidence >= settings.min_confidence]
    wins = [s for s in sessions if s.ok]
    if not failed or not wins:
        return Pairing(
            pairs=(), confident_failures=len(failed), unpaired=len(failed), already_done=0
        )

    def matched(s: SessionOutcome) -> str:
        return s.situation if settings.match_on == "situation" and s.situation else s.text

    win_vectors = index.embed([matched(s) for s in wins])
    sims = index.embed([matched(s) for s in failed]) @ win_vectors.T
    pairs, unpaired, skipped = [], 0, 0
    for row, f in enumerate(failed):
        best = int(np.argmax(sims[row]))  # the first maximum: the earliest success
        if not reaches_floor(sims[row, best], settings.similarity_floor):
            unpaired += 1
            continue
        pair = SessionPair(failed=f, succeeded=wins[best], similarity=float(sims[row, best]))
        if pair.key in done:
            skipped += 1
            continue
        if len(pairs) < settings.max_pairs:
            pairs.append(pair)
    return Pairing(
        pairs=tuple(pairs), confident_failures=len(failed), unpaired=unpaired, already_done=skipped
    )
