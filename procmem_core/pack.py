"""Context packs with an explore rate (seed: loom-procedures.txt, "Measuring whether a
procedure helps").

A pack injects the matched procedures into a prompt as steps to follow. With explore
rate epsilon, the top match is withheld with probability epsilon, and the pack reports
shown (``procedure_keys``) and withheld (``procedure_keys_withheld``) procedures, so
sessions where it was withheld form a randomized control arm (docs/statistics.md,
"Explore rate: withheld vs shown"). A withheld procedure is not replaced by the next
match, so the two arms differ only by the withheld procedure.

The same withholding for the flat design (``pack_flat``): the highest-confidence shown
procedure is withheld with probability epsilon, and the prompt is built by
``flat.build_system_prompt`` with the remaining shown ones.

``withhold_top(u, explore_rate)`` is the rule, on one uniform draw or an array of them;
both packers draw exactly one uniform per pack, whether or not anything matched, so the
random stream does not depend on the store's contents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.errors import ParameterError, check_int, check_probability
from procmem_core.flat import BASE_PROMPT, Procedure, build_system_prompt, prompt_order
from procmem_core.store import ProcedureStore
from procmem_core.stored import Match

PACK_HEADING = "PROCEDURES TO FOLLOW (steps learned from earlier runs):"
UNPROVEN = "(unproven)"


def withhold_top(u: ArrayLike, explore_rate: float) -> np.ndarray | bool:
    """Withhold the top procedure when the uniform draw ``u`` is below ``explore_rate``."""
    explore_rate = check_probability("explore_rate", explore_rate)
    out = np.asarray(u) < explore_rate
    return bool(out) if out.ndim == 0 else out


def _check_rng(rng: object, explore_rate: float) -> np.random.Generator | None:
    if rng is None and explore_rate > 0:
        raise ParameterError("rng", rng, "a numpy Generator is needed when explore_rate > 0")
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise ParameterError("rng", rng, "expected a numpy.random.Generator or None")
    return rng


def render_procedure(i: int, m: Match) -> str:
    """One matched procedure as numbered steps (candidates labelled "(unproven)")."""
    label = f" {UNPROVEN}" if m.status == "candidate" else ""
    lines = [f"{i}. {m.name}{label} [{m.key}, {m.status}]", f"   When: {m.situation}"]
    lines += [f"   {j}) {step}" for j, step in enumerate(m.steps, 1)]
    for e in m.graph.edges:
        notes = [
            f"{k}: {getattr(e, k)}" for k in ("condition", "guidance", "pitfalls") if getattr(e, k)
        ]
        if notes:
            lines.append(f"   - {e.src} -> {e.dst}: " + "; ".join(notes))
    return "\n".join(lines)


@dataclass(frozen=True)
class Pack:
    """A packed prompt and which procedures it showed and withheld."""

    text: str
    procedure_keys: tuple[str, ...]
    procedure_keys_withheld: tuple[str, ...]
    matches: tuple[Match, ...] = field(repr=False, default=())


@dataclass
class ContextPacker:
    """Packs the top ``max_procedures`` matches of a situation into prompt text."""

    store: ProcedureStore
    explore_rate: float = 0.0
    max_procedures: int = 3
    rng: np.random.Generator | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.store, ProcedureStore):
            raise ParameterError("store", self.store, "expected a ProcedureStore")
        self.explore_rate = check_probability("explore_rate", self.explore_rate)
        self.max_procedures = check_int("max_procedures", self.max_procedures, minimum=1)
        self.rng = _check_rng(self.rng, self.explore_rate)

    def _draw(self) -> float:
        return float(self.rng.random()) if self.rng is not None else 1.0

    def pack(
        self, situation: str, goal: str | None = None, recent_tools: Sequence[str] = ()
    ) -> Pack:
        """Match, withhold the top match with probability ``explore_rate``, render the rest."""
        matches = self.store.match(situation, goal, recent_tools, top_k=self.max_procedures)
        withhold = withhold_top(self._draw(), self.explore_rate) and bool(matches)
        shown = matches[1:] if withhold else matches
        withheld = matches[:1] if withhold else []
        text = ""
        if shown:
            text = (
                PACK_HEADING
                + "\n"
                + "\n".join(render_procedure(i, m) for i, m in enumerate(shown, 1))
            )
        return Pack(
            text, tuple(m.key for m in shown), tuple(m.key for m in withheld), tuple(matches)
        )


@dataclass(frozen=True)
class FlatPack:
    """A flat-design prompt and the titles it showed and withheld."""

    text: str
    shown_titles: tuple[str, ...]
    withheld_titles: tuple[str, ...]


def pack_flat(
    procedures: Sequence[Procedure],
    explore_rate: float = 0.0,
    rng: np.random.Generator | None = None,
    threshold: float = 0.55,
    limit: int = 6,
    base_prompt: str = BASE_PROMPT,
) -> FlatPack:
    """The seed's flat prompt with the highest-confidence shown procedure withheld with
    probability ``explore_rate``.

    The shown set comes from ``flat.prompt_order``; when the top one is withheld, the
    prompt is ``build_system_prompt`` over the other procedures with ``limit - 1``, which
    shows exactly the remaining shown ones (no backfill from below the cut).
    """
    explore_rate = check_probability("explore_rate", explore_rate)
    rng = _check_rng(rng, explore_rate)
    shown = prompt_order(procedures, threshold, limit)
    u = float(rng.random()) if rng is not None else 1.0
    if not (withhold_top(u, explore_rate) and shown):
        text = build_system_prompt(procedures, threshold, limit, base_prompt)
        return FlatPack(text, tuple(p.title for p in shown), ())
    top = shown[0]
    rest = [p for p in procedures if p is not top]
    text = build_system_prompt(rest, threshold, limit - 1, base_prompt)
    return FlatPack(text, tuple(p.title for p in shown[1:]), (top.title,))
