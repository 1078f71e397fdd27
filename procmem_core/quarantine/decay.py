"""``decay``: the strike count decays. A procedure quarantined with ``strike_limit`` L
strikes loses one strike every ``decay_sessions`` d sessions it waits unserved; when the
count reaches 0 (after L d sessions) it is released with a clean slate and served again,
so L more failures in a row are needed to quarantine it again.

Chain: L d unserved states in a row, then release.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from procmem_core.errors import check_int
from procmem_core.quarantine.base import ExitChain, QuarantinePolicy, QuarantineView, release

DECAYED = "its strikes decayed to 0 (one every {d} sessions unserved)"


@dataclass(frozen=True)
class DecayPolicy(QuarantinePolicy):
    """``decay_sessions`` d >= 1: sessions per strike forgiven while quarantined."""

    name: ClassVar[str] = "decay"
    decay_sessions: int = 10

    def __post_init__(self) -> None:
        check_int("decay_sessions", self.decay_sessions, minimum=1)

    def eligible(self, view: QuarantineView, waited: int, strike_limit: int) -> bool:
        return waited >= max(strike_limit, 1) * self.decay_sessions

    def on_run(self, state: Any, ok: bool) -> str | None:
        """A run on a quarantined graph comes after its strikes decayed: release it with
        no strikes, then the run is folded (a failure is its first new strike)."""
        release(state)
        state.agg.failure_streak = 0
        return DECAYED.format(d=self.decay_sessions)

    def exit_chain(self, p: float, strike_limit: int) -> ExitChain:
        r = max(strike_limit, 1) * self.decay_sessions
        stay, rel = np.zeros((r, r)), np.zeros(r)
        for j in range(r - 1):
            stay[j, j + 1] = 1.0
        rel[r - 1] = 1.0
        return ExitChain(stay, rel, np.zeros(r))
