"""The flat design's prompt: which procedures enter it, and its text (seed: notebook).

Only procedures with confidence at or above ``threshold`` enter the system prompt, at
most ``limit`` of them, highest confidence first. ``PromptFilter`` holds the two knobs
and is the one source of their defaults (0.55 and 6, the seed's); ``shown_mask`` is the
vectorized selection the simulators call and ``prompt_order`` the object path
``build_system_prompt`` uses: the same rule, so they pick the same procedures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.errors import check_int, check_probability
from procmem_core.flat.rule import passes_threshold

if TYPE_CHECKING:
    from procmem_core.flat.procedure import Procedure

BASE_PROMPT = (
    "You are FinCoach, a personal financial advisor assistant for users in India. "
    "Never recommend specific stocks. Answer in at most 120 words."
)
"""The seed's FinCoach base prompt."""

PROCEDURES_HEADING = "LEARNED OPERATIONAL PROCEDURES (apply these in relevant situations):"


@dataclass(frozen=True)
class PromptFilter:
    """Show a procedure when its confidence passes ``threshold`` and it is among the
    ``limit`` highest such (the seed: 0.55 and 6)."""

    threshold: float = 0.55
    limit: int = 6

    def __post_init__(self) -> None:
        check_probability("threshold", self.threshold)
        check_int("limit", self.limit, minimum=1)

    def shown(self, confidences: ArrayLike) -> np.ndarray:
        """``shown_mask`` with this filter's knobs."""
        return shown_mask(confidences, self.threshold, self.limit)


DEFAULT_FILTER = PromptFilter()
DEFAULT_THRESHOLD = DEFAULT_FILTER.threshold
DEFAULT_LIMIT = DEFAULT_FILTER.limit


def _check_filter(threshold: float, limit: int) -> tuple[float, int]:
    return check_probability("threshold", threshold), check_int("limit", limit)


def shown_mask(
    confidences: ArrayLike, threshold: float = DEFAULT_THRESHOLD, limit: int = DEFAULT_LIMIT
) -> np.ndarray:
    """Which procedures enter the prompt (last axis = procedures).

    A procedure is shown when its confidence passes ``threshold`` and it is among the
    ``limit`` highest such confidences; ties keep input order (a stable sort), exactly as
    ``build_system_prompt`` selects.
    """
    threshold, limit = _check_filter(threshold, limit)
    conf = np.asarray(confidences, dtype=float)
    active = np.asarray(passes_threshold(conf, threshold))
    n = conf.shape[-1] if conf.ndim else 1
    if limit >= n:
        return active
    key = np.where(active, -conf, np.inf)
    order = np.argsort(key, axis=-1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.broadcast_to(np.arange(n), order.shape), axis=-1)
    return active & (ranks < limit)


def prompt_order(
    procedures: Sequence[Procedure],
    threshold: float = DEFAULT_THRESHOLD,
    limit: int = DEFAULT_LIMIT,
) -> list[Procedure]:
    """The procedures ``build_system_prompt`` shows, in the order it shows them."""
    for i, p in enumerate(procedures):
        check_probability(f"procedures[{i}].confidence", p.confidence)
    if not procedures:
        _check_filter(threshold, limit)
        return []
    conf = np.array([p.confidence for p in procedures], dtype=float)
    mask = shown_mask(conf, threshold, limit)
    chosen = [i for i in np.argsort(-conf, kind="stable") if mask[i]]
    return [procedures[i] for i in chosen]


def build_system_prompt(
    procedures: Sequence[Procedure],
    threshold: float = DEFAULT_THRESHOLD,
    limit: int = DEFAULT_LIMIT,
    base_prompt: str = BASE_PROMPT,
) -> str:
    """The seed's prompt: the base prompt, then the shown procedures under a heading.

    Returns ``base_prompt`` alone when no procedure passes the threshold.
    """
    active = prompt_order(procedures, threshold, limit)
    if not active:
        return base_prompt
    lines = [
        f"{i}. {p.title}\n   Trigger: {p.trigger}\n   {p.description}"
        for i, p in enumerate(active, 1)
    ]
    return base_prompt + "\n\n" + PROCEDURES_HEADING + "\n" + "\n".join(lines)
