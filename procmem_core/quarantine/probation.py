"""``probation``: an exploration floor. Each of a pack's ``n`` candidates (its top
``candidates`` matches, quarantined included) is served first with probability
``f + (1 - n f) w`` (``quarantine.select``), where ``w`` is the pack's own choice (1 on the
top match it would serve, 0 elsewhere; a quarantined match has ``w = 0``). The floor is
added, not clipped and renormalised, so every candidate gets at least f exactly
(docs/statistics.md); f must lie in [0, 1/n). A quarantined procedure is so served first
with probability f per session, and the seed's rule applies: a success lifts it. The
pack's explore rate epsilon then withholds its first match, this one too: it runs with
probability f (1 - epsilon) (docs/graph.md, "Quarantine").

Chain: one quarantined state; per session, released with probability ``f p`` (``f (1 -
epsilon) p`` under an explore rate: ``quarantine_fate(..., explore_rate=)``, which also
withholds it outside quarantine).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from procmem_core.errors import ParameterError, check_int, is_number
from procmem_core.quarantine.base import ExitChain, QuarantinePolicy, QuarantineView, release

PROBATION_SUCCESS = "a probation run succeeded (floor {f:g})"


@dataclass(frozen=True)
class ProbationPolicy(QuarantinePolicy):
    """``floor`` f in [0, 1/candidates); ``candidates`` n >= 1."""

    name: ClassVar[str] = "probation"
    floor: float = 0.05  # type: ignore[misc]
    candidates: int = 2  # type: ignore[misc]

    def __post_init__(self) -> None:
        n = check_int("candidates", self.candidates, minimum=1)
        allowed = f"expected a number in [0, 1/candidates) = [0, {1 / n:g})"
        if not is_number(self.floor) or not float(self.floor) >= 0.0 or self.floor * n >= 1.0:
            raise ParameterError("floor", self.floor, allowed)  # NaN fails the comparison
        # the checked values, as a float and an int (a string floor would pass float())
        object.__setattr__(self, "floor", float(self.floor))
        object.__setattr__(self, "candidates", n)

    def eligible(self, view: QuarantineView, waited: int, strike_limit: int) -> bool:
        return False  # reached only through the floor

    def on_run(self, state: Any, ok: bool) -> str | None:
        if not ok:
            return None
        release(state)
        return PROBATION_SUCCESS.format(f=self.floor)

    def exit_chain(self, p: float, strike_limit: int) -> ExitChain:
        f = self.floor
        return ExitChain(np.array([[1.0 - f * p]]), np.array([f * p]), np.array([f]))
