"""``seed``: the seed's rule as written. No traffic reaches a quarantined procedure; the
next success lifts it (so in a closed loop it never comes: quarantine is absorbing)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from procmem_core.quarantine.base import ExitChain, QuarantinePolicy, QuarantineView, release

SUCCESS_LIFTS = "a success lifts it (the seed's rule)"


@dataclass(frozen=True)
class SeedPolicy(QuarantinePolicy):
    """Never served while quarantined; a run recorded anyway lifts it if it succeeds."""

    name: ClassVar[str] = "seed"
    serves_quarantined: ClassVar[bool] = False

    def eligible(self, view: QuarantineView, waited: int, strike_limit: int) -> bool:
        return False

    def on_run(self, state: Any, ok: bool) -> str | None:
        if not ok:
            return None
        release(state)
        return SUCCESS_LIFTS

    def exit_chain(self, p: float, strike_limit: int) -> ExitChain:
        """One absorbing state, never served."""
        return ExitChain(np.ones((1, 1)), np.zeros(1), np.zeros(1))
