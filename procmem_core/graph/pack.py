"""Context packs with an explore rate (seed: loom-procedures.txt, "Measuring whether a
procedure helps").

A pack injects the matched procedures into a prompt as steps to follow. With explore
rate epsilon, the top match is withheld with probability epsilon
(``procmem_core.explore.withhold_top``), and the pack reports shown
(``procedure_keys``) and withheld (``procedure_keys_withheld``) procedures, so sessions
where it was withheld form a randomized control arm (docs/statistics.md, "Explore rate:
withheld vs shown"). A withheld procedure is not replaced by the next match, so the two
arms differ only by the withheld procedure. One uniform is drawn per pack, whether or
not anything matched, so the random stream does not depend on the store's contents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from procmem_core.errors import check_instance, check_int, check_probability
from procmem_core.explore import check_rng, draw, withhold_top
from procmem_core.graph.records import Match
from procmem_core.graph.store import ProcedureStore

PACK_HEADING = "PROCEDURES TO FOLLOW (steps learned from earlier runs):"
UNPROVEN = "(unproven)"


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
        check_instance("store", self.store, ProcedureStore)
        self.explore_rate = check_probability("explore_rate", self.explore_rate)
        self.max_procedures = check_int("max_procedures", self.max_procedures, minimum=1)
        self.rng = check_rng(self.rng, self.explore_rate)

    def pack(
        self, situation: str, goal: str | None = None, recent_tools: Sequence[str] = ()
    ) -> Pack:
        """Match, withhold the top match with probability ``explore_rate``, render the rest."""
        matches = self.store.match(situation, goal, recent_tools, top_k=self.max_procedures)
        withhold = withhold_top(draw(self.rng), self.explore_rate) and bool(matches)
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
            text=text,
            procedure_keys=tuple(m.key for m in shown),
            procedure_keys_withheld=tuple(m.key for m in withheld),
            matches=tuple(matches),
        )
