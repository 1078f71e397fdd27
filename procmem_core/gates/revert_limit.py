"""A calibration trial stopped as soon as its early reverts fail the target.

``calibrate``'s bisection of the early revert level runs the recursion at 1/2 with the cap
undecided for each trial level and keeps the level only when ``max over the grid of
P_p0(revert before the cap) <= target`` (``tolerance.at_most``). The early reverts only
grow from one run to the next, so once their running sum at some grid p0 is over the
target the trial has failed, and the rest of its recursion cannot change that.
``RevertLimit`` adds each step's reverted cells as the recursion absorbs them (a cell's
mass at p0 under no change is its mass at 1/2 times ``(2c)^N r^S``, ``ratio_powers``, with
``S`` its total successes of ``N`` outcomes: one product a step) and says when the sum
passes the limit. The limit carries a relative slack ``SLACK`` above the target's own
margin, far above the rounding of a sum computed in another order, so a stopped trial is
exactly one the full recursion fails: the bisection takes the same steps.
"""

from __future__ import annotations

import numpy as np

from procmem_core.gates.ratio import ratio_powers

SLACK = 1e-10
"""Relative slack of the stopping limit (sums of the same terms in another order differ
by about 1e-14 relative at most)."""


class RevertLimit:
    """The early reverts at each p0 of ``grid`` (no change) against ``limit``: ``add`` one
    step's reverted cells, ``over`` once some grid point's sum exceeds the limit (plus
    ``SLACK``). ``top``: the most outcomes a cell has."""

    def __init__(self, grid: np.ndarray, limit: float, top: int) -> None:
        low, self.log_c, ratio = ratio_powers(np.asarray(grid, dtype=float), top)
        # p0 <= 1/2 weighs r^S, above r^(N - S): one block of rows each
        self.sides = [(side, ratio[side], lower) for side, lower in ((low, True), (~low, False))
                      if side.any()]  # fmt: skip
        self.limit = float(limit) * (1.0 + SLACK)
        self.spent = np.zeros(np.size(grid))
        self.over = False

    def add(self, successes: np.ndarray, mass: np.ndarray, outcomes: int) -> bool:
        """Add the reverted cells (total successes, mass at 1/2) of a step with
        ``outcomes`` outcomes; True once the limit is passed."""
        if mass.size and not self.over:
            first, last = int(successes.min()), int(successes.max())
            by_total = np.bincount(successes - first, weights=mass, minlength=last - first + 1)
            part = np.empty(self.spent.size)
            for side, ratio, lower in self.sides:
                if lower:
                    part[side] = ratio[:, first : last + 1] @ by_total
                else:  # r^(N - S) for S = last .. first
                    part[side] = ratio[:, outcomes - last : outcomes - first + 1] @ by_total[::-1]
            self.spent += part * np.exp(outcomes * self.log_c)
            self.over = bool(self.spent.max() > self.limit)
        return self.over
