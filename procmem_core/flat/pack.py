"""The flat design's pack: the seed's prompt with the top shown procedure withheld with
probability epsilon (the explore rate; ``procmem_core.explore.withhold_top``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from procmem_core.errors import check_choice, check_probability
from procmem_core.explore import check_rng, draw, withhold_top
from procmem_core.flat.procedure import Procedure
from procmem_core.flat.prompt import (
    BASE_PROMPT,
    DEFAULT_LIMIT,
    DEFAULT_THRESHOLD,
    build_system_prompt,
    prompt_order,
)


@dataclass(frozen=True)
class FlatPack:
    """A flat-design prompt and the titles it showed and withheld."""

    text: str
    shown_titles: tuple[str, ...]
    withheld_titles: tuple[str, ...]


WITHHOLD = ("top", "all")


def pack_flat(
    procedures: Sequence[Procedure],
    explore_rate: float = 0.0,
    rng: np.random.Generator | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    limit: int = DEFAULT_LIMIT,
    base_prompt: str = BASE_PROMPT,
    withhold: str = "top",
) -> FlatPack:
    """The seed's flat prompt with the highest-confidence shown procedure withheld with
    probability ``explore_rate`` (``withhold="all"``: every shown one, a no-procedure
    session, whose outcome estimates the baseline a relative rule compares against).

    The shown set comes from ``prompt_order``; when the top one is withheld, the prompt is
    ``build_system_prompt`` over the other procedures with ``limit - 1``, which shows
    exactly the remaining shown ones (no backfill from below the cut).
    """
    explore_rate = check_probability("explore_rate", explore_rate)
    check_choice("withhold", withhold, WITHHOLD)
    rng = check_rng(rng, explore_rate)
    shown = prompt_order(procedures, threshold, limit)
    if not (withhold_top(draw(rng), explore_rate) and shown):
        text = build_system_prompt(procedures, threshold, limit, base_prompt)
        return FlatPack(text, tuple(p.title for p in shown), ())
    if withhold == "all":
        return FlatPack(base_prompt, (), tuple(p.title for p in shown))
    top = shown[0]
    at = next(i for i, p in enumerate(procedures) if p is top)  # its first listing: the one
    rest = [*procedures[:at], *procedures[at + 1 :]]  # shown (a stable sort); others stay
    text = build_system_prompt(rest, threshold, limit - 1, base_prompt)
    return FlatPack(
        text=text, shown_titles=tuple(p.title for p in shown[1:]), withheld_titles=(top.title,)
    )
