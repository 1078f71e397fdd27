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


CHECK_EVERY = 4
"""Steps whose reverted cells are weighed together (fewer, larger products): a trial over
its limit stops at most ``CHECK_EVERY - 1`` steps later, with the same decision."""


class RevertLimit:
    """The early reverts at each p0 of ``grid`` (no change) against ``limit``: ``add`` one
    step's reverted cells, ``over`` once some grid point's sum exceeds the limit (plus
    ``SLACK``), checked every ``CHECK_EVERY`` steps. ``top``: the most outcomes a cell has.

    A recursion calls ``finish`` after its last step, so it stops (returns None) exactly
    when its early reverts pass the limit, as when every step was checked; a stop at most
    ``CHECK_EVERY - 1`` steps later does not change a trial's decision. The sums are taken
    per ``CHECK_EVERY`` steps, another order of the same terms (about 1e-14 relative,
    inside ``SLACK``)."""

    def __init__(self, grid: np.ndarray, limit: float, top: int) -> None:
        low, self.log_c, ratio = ratio_powers(np.asarray(grid, dtype=float), top)
        # p0 <= 1/2 weighs r^S, above r^(N - S): one block of rows each
        self.sides = [(side, ratio[side], lower) for side, lower in ((low, True), (~low, False))
                      if side.any()]  # fmt: skip
        self.limit = float(limit) * (1.0 + SLACK)
        self._spent = np.zeros(np.size(grid))
        self._pending: list[tuple[np.ndarray, np.ndarray, int]] = []
        self.over = False

    @property
    def spent(self) -> np.ndarray:
        """The early reverts added so far at each grid p0."""
        self._flush()
        return self._spent

    def add(self, successes: np.ndarray, mass: np.ndarray, outcomes: int) -> bool:
        """Add the reverted cells (total successes, mass at 1/2) of a step with
        ``outcomes`` outcomes; True once the limit is passed (checked every
        ``CHECK_EVERY`` steps)."""
        if mass.size and not self.over:
            self._pending.append((successes, mass, outcomes))
            if len(self._pending) >= CHECK_EVERY:
                self._flush()
        return self.over

    def finish(self) -> bool:
        """Weigh what is still pending (the recursion's last steps); True if over."""
        self._flush()
        return self.over

    def _flush(self) -> None:
        """Weigh the pending steps' cells: per side a table of masses by (step, power of
        ``r``), one product with the ratio powers, each step's column times ``(2c)^N``."""
        if not self._pending:
            return
        steps = len(self._pending)
        n = np.array([outcomes for _, _, outcomes in self._pending])
        succ = np.concatenate([x for x, _, _ in self._pending])
        mass = np.concatenate([m for _, m, _ in self._pending])
        step = np.repeat(np.arange(steps), [m.size for _, m, _ in self._pending])
        self._pending.clear()
        scale = np.exp(np.outer(self.log_c, n))  # (2c)^N per grid point and step
        for side, ratio, lower in self.sides:
            power = succ if lower else n[step] - succ  # r^S at p0 <= 1/2, else r^(N - S)
            first, width = int(power.min()), int(power.max() - power.min()) + 1
            table = np.bincount(step * width + power - first, weights=mass,
                                minlength=steps * width).reshape(steps, width)  # fmt: skip
            part = ratio[:, first : first + width] @ table.T
            self._spent[side] += (part * scale[side]).sum(axis=1)
        self.over = bool(self._spent.max() > self.limit)
