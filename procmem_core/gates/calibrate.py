"""Boundaries that hold a gate's worst-case false-revert rate at alpha, exactly.

A calibrated gate reverts before its cap when its statistic reaches ``revert_level``,
accepts when its accept statistic falls to ``accept_level``, and at the cap reverts
exactly when the statistic reaches ``final_level``. Given the first two, ``calibrate``
finds the lowest ``final_level`` with

    max over p0 in the range of P_p0(revert | no change) <= alpha,

raising ``revert_level`` first if the early boundary alone spends more than alpha:

1. one recursion with the cap left undecided gives, at every grid p0, the probability of
   reverting early and the mass on each cap cell (``NullPass``); the worst case of every
   candidate ``final_level`` then follows from a cumulative sum over the cells sorted by
   their statistic (``final_level``), with no further recursion;
2. the gate so built is checked by ``worst.worst_case`` (exact on a refined grid, bounded
   between grid points, within ``CERTIFY_POINTS``); if the bound exceeds alpha, the
   refined points join the grid and the target is lowered by the excess, and step 1
   repeats;
3. the cap's boundaries form a lattice (the target moves the level only when it falls
   below the grid's worst at the level), so a round that would build the same gate as the
   last (whose certification failed) moves the boundary one lattice step up instead: the
   target is put just below the level's worst on the grid. Every round so changes the
   gate, and the first certified one is returned: the next lower boundary was either over
   alpha on the grid or not certified (issue 28: at ledger 175 the excess, 2e-5 a round,
   needed about 11 rounds to move the level by one step, and the calibration failed).

The result meets ``bound <= alpha`` (raised as ``GateError`` when it cannot).

A bisection trial whose level is at least that of a finished recursion is often decided
without its own recursion (``passes_by_monotony``): early reverts only fall as the level
rises, so a lower level's exact early reverts bound the trial's (issue 28, item 4).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from procmem_core.errors import ParameterError
from procmem_core.gates.base import GateError, Recursions, field_values
from procmem_core.gates.mixture import gathered, powers
from procmem_core.gates.tolerance import MARGIN, at_most
from procmem_core.gates.worst import WorstCase

G = TypeVar("G")

ROUNDS = 10
GRID_ADDS = 24
RAISE_STEPS = 40
LEVEL_TOLERANCE = 1e-3
CERTIFY_POINTS = 3000
"""Largest grid of a certification's ``worst_case`` (both calibrated gates)."""
MONOTONY_SLACK = 1e-8
"""Relative room ``passes_by_monotony`` leaves below the target's own margin: far above the
rounding of the two sums it compares (about 1e-14 relative, ``revert_limit.SLACK``)."""
TRIALS = Recursions(size=4)
"""Per calibrated gate's parameters (its calibration key), the finished recursions of its
calibration trials by early revert level: shared by the key's uncertified and certified
calibration (the second starts where the first ended, on a finer grid)."""


@dataclass(frozen=True)
class NullPass:
    """At each grid p0 (no change): ``interim[g]`` = P(revert before the cap). The cap's
    cells ``c``: ``stat[c]`` (NaN: undefined there, never reverted), ``mass[c]`` (the
    probability of reaching the cap undecided in cell c at p0 = 1/2) and ``successes[c]``
    (its total successes ``S`` of ``observations`` outcomes), so its mass at p0 is
    ``mass (2 p0)^S (2 (1 - p0))^(observations - S)`` (all outcomes share p0 under the null)."""

    p0: np.ndarray
    interim: np.ndarray
    stat: np.ndarray
    mass: np.ndarray
    successes: np.ndarray
    observations: int
    complete: bool = True
    """False: the recursion stopped once ``interim`` (the early reverts so far) passed the
    limit it was given (``revert_limit``); the cap's cells are then left empty."""

    @classmethod
    def stopped(cls, p0: np.ndarray, interim: np.ndarray) -> NullPass:
        """A recursion stopped with early reverts ``interim`` over its limit."""
        empty = np.zeros(0)
        return cls(p0, interim, empty, empty, empty.astype(np.int64), 0, complete=False)

    def within(self, target: float) -> bool:
        """Early reverts at most ``target`` at every grid p0 (``tolerance.at_most``); a
        stopped recursion's are not (they passed ``target``'s limit)."""
        return self.complete and bool(at_most(self.interim.max(), target))


CHUNK = 64
TIE = 1e-9
"""Cap statistics closer than this (relative) count as equal: a boundary is placed only in
a real gap, so rounding in the last bits cannot move a cell across it."""


def fill_levels(gate: Any, revert_default: float, accept_default: float) -> None:
    """Set a calibrated gate's ``revert_level`` and ``accept_level`` (None: the defaults,
    Wald's boundaries) and refuse a level that is not a number (a bool, a string or NaN;
    ``final_level`` too, None meaning calibrated), or boundaries that cross
    (``accept_level >= revert_level``: no calibration exists for them)."""
    for field, default in (("revert_level", revert_default), ("accept_level", accept_default),
                           ("final_level", None)):  # fmt: skip
        value = getattr(gate, field)
        if value is None:
            if default is not None:
                object.__setattr__(gate, field, float(default))
        elif isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            none = "the default" if default is not None else "calibrated"
            raise ParameterError(field, value, f"a number (or None: {none})")
    if gate.accept_level >= gate.revert_level:
        raise ParameterError(
            "accept_level",
            gate.accept_level,
            f"below revert_level={gate.revert_level:g}: the boundaries must not cross",
        )


def final_level(null: NullPass, target: float) -> float:
    """The lowest cap boundary ``c`` (revert at the cap iff ``stat >= c``) whose worst case
    over the grid is at most ``target``; +inf when only "never revert at the cap" is."""
    return final_and_worst(null, target)[0]


def final_and_worst(null: NullPass, target: float) -> tuple[float, float]:
    """``final_level`` and the worst case over the grid of the gate it builds (the
    early reverts alone when the level is +inf)."""
    stat = np.where(np.isfinite(null.stat), null.stat, -np.inf)
    order = np.argsort(-stat, kind="stable")
    s = stat[order]
    mass, succ = null.mass[order], null.successes[order]
    # the cumulative sums move only at cells holding mass (adding 0.0 is exact): take them
    # there, and read every other cell's at the last such cell before it
    held = np.flatnonzero(mass != 0)
    mass, succ = mass[held], succ[held]
    worst_held = np.full(held.size, -np.inf)
    for lo in range(0, null.p0.size, CHUNK):
        up, down = powers(null.p0[lo : lo + CHUNK], null.observations)
        cells = gathered(up, succ, down, null.observations - succ, order="C") * mass
        part = null.interim[lo : lo + CHUNK, None] + np.cumsum(cells, axis=1)
        worst_held = np.maximum(worst_held, part.max(axis=0))
    at = np.searchsorted(held, np.arange(s.size), side="right") - 1  # -1: none held yet
    worst = np.where(at >= 0, worst_held[np.maximum(at, 0)], null.interim.max())
    ends = np.r_[s[:-1] - s[1:] > TIE * np.maximum(1.0, np.abs(s[1:])), True]
    ok = np.flatnonzero(at_most(worst, target) & ends & np.isfinite(s))
    if ok.size == 0:
        return float("inf"), float(null.interim.max())
    j = int(ok[-1])
    below = s[j + 1] if j + 1 < s.size and np.isfinite(s[j + 1]) else s[j] - 1.0
    # ``ends`` puts ``j`` at the end of its tie group, so ``below`` is in the next group
    return float((s[j] + below) / 2.0), float(worst[j])


@dataclass(frozen=True)
class Calibration:
    """The calibrated boundaries and the worst case that certifies them."""

    revert_level: float
    final_level: float
    worst: WorstCase | None


NullPassFn = Callable[[float, np.ndarray, float | None], NullPass]
"""``null_pass(revert_level, grid, limit)``: the recursion with the cap undecided; with a
``limit`` it may stop as soon as the early reverts at some grid p0 exceed it (then
``NullPass.complete`` is False)."""


def lowered(target: float, bound: float, alpha: float) -> float:
    """The next round's target when the grid met ``target`` but the bound between grid
    points, ``bound``, exceeds ``alpha``: lowered by the excess (plus ``1e-4 alpha``), or,
    when the bound's slack is larger than the target itself (a tiny alpha: 1e-8 at a
    20-run ledger has a slack of 1.9e-8), scaled by ``alpha / bound``, so the target stays
    positive (a negative one asked the bisection for impossible early reverts)."""
    lower = target - (bound - alpha + 1e-4 * alpha)
    return lower if lower > 0.0 else target * (alpha / bound)


def limit_of(target: float) -> float:
    """The early reverts above which ``at_most(value, target)`` fails."""
    return target * (1.0 - MARGIN)


def calibrate(
    null_pass: NullPassFn,
    certify: Callable[[float, float, int], WorstCase] | None,
    alpha: float,
    grid: np.ndarray,
    revert_level: float,
    start: Calibration | None = None,
    finished: Collection[float] = (),
) -> Calibration:
    """Boundaries with certified worst-case false revert <= alpha (module docstring).

        ``null_pass(revert_level, grid, limit)``: the recursion with the cap undecided
    (``NullPassFn``);
        ``certify(revert_level, final_level, max_points)``: the worst case of the gate so built,
        refined within ``max_points`` (None: stop after step 1, calibrated on the grid only:
        what a design search uses). ``start``: the result of step 1 on this grid at ``alpha``
        (the uncertified calibration, cached by the gate modules), which the first round then
        reuses. ``finished``: the levels whose recursion ``null_pass`` holds complete (a live
    view, e.g. its cache's keys), for ``passes_by_monotony``.
    """
    target, last = alpha, None
    for round_ in range(ROUNDS):
        if round_ == 0 and start is not None:
            revert_level, final = start.revert_level, start.final_level
        else:
            null = null_pass(revert_level, grid, limit_of(target))
            if not null.within(target):
                revert_level, null = _raise_revert(null_pass, grid, revert_level, target, finished)
            final, worst_here = final_and_worst(null, target)
            if (revert_level, final) == last and np.isfinite(final):
                target = min(target, worst_here * (1.0 - MARGIN))  # one lattice step up
                final = final_level(null, target)
        if certify is None:
            return Calibration(revert_level, final, None)
        worst = certify(revert_level, final, CERTIFY_POINTS)
        if worst.bound is not None and at_most(worst.bound, alpha):
            return Calibration(revert_level, final, worst)
        last = (revert_level, final)
        top = np.argsort(worst.value)[-GRID_ADDS:]
        grid = np.union1d(grid, worst.p0[np.union1d(top, np.flatnonzero(worst.value > target))])
        if worst.worst <= target:  # no grid point over target: the bound's slack is the excess
            target = lowered(target, worst.bound or worst.worst, alpha)
    raise GateError(
        f"could not calibrate the boundaries to alpha={alpha:g} in {ROUNDS} rounds (last "
        f"round: worst false revert {worst.worst:.3g} on the grid, bound between grid points "
        f"{worst.bound if worst.bound is not None else float('nan'):.3g})"
    )


def passes_by_monotony(
    null_pass: NullPassFn, grid: np.ndarray, below: float, target: float
) -> bool:
    """True when every early revert level above ``below``, a level whose recursion is
    finished, keeps its early reverts within ``target`` on ``grid``: ``below``'s own early
    reverts are within ``target (1 - MONOTONY_SLACK)`` (with the target's margin).

    Proof. Raising the early revert level only shrinks the early revert region (cells with
    statistic ``>= level``, before the cap) and, where the accept region excludes it, only
    grows the accept region; so a path that reverts early at a level above ``below`` did not
    accept earlier at ``below`` either and reverts there no later: ``P_p0(early revert |
    level) <= P_p0(early revert | below)`` at every p0 of the grid (the monotony the
    bisection already rests on). Both sides are computed as sums of nonnegative terms within
    about 1e-14 relative of their exact values, far inside ``MONOTONY_SLACK``, so the
    higher level's own recursion would give early reverts below ``target (1 - MARGIN)``:
    its ``NullPass.within`` would be True. False says nothing (the trial is then run)."""
    known = null_pass(below, grid, None)  # finished: no recursion, the grid's sums only
    return known.complete and bool(at_most(known.interim.max(), target * (1.0 - MONOTONY_SLACK)))


def _raise_revert(
    null_pass: NullPassFn,
    grid: np.ndarray,
    level: float,
    target: float,
    finished: Collection[float] = (),
) -> tuple[float, NullPass]:
    """The lowest early revert boundary (by bisection) whose early reverts alone stay
    within ``target`` on the grid; P(early revert) falls as the boundary rises. A trial
    stops as soon as its early reverts fail the target (``revert_limit``), and a trial that
    a finished lower level shows to pass runs no recursion (``passes_by_monotony``): the
    same steps, so the same level, and its pass computed once at the end."""
    lo, hi, limit = level, level + 1.0, limit_of(target)

    bounds: dict[float, bool] = {}  # finished level -> passes_by_monotony on this grid

    def trial(x: float) -> tuple[bool, NullPass | None]:
        below = max((y for y in finished if y < x), default=None)
        if x not in finished and below is not None:
            if below not in bounds:
                bounds[below] = passes_by_monotony(null_pass, grid, below, target)
            if bounds[below]:
                return True, None
        null = null_pass(x, grid, limit)
        return null.within(target), null

    ok, best = trial(hi)
    for _ in range(RAISE_STEPS):
        if ok:
            break
        lo, hi = hi, hi + 2.0 * (hi - lo)
        ok, best = trial(hi)
    else:
        raise GateError(f"no early revert boundary keeps early reverts within {target:g}")
    for _ in range(RAISE_STEPS):
        mid = (lo + hi) / 2.0
        ok, found = trial(mid)
        if not ok:
            lo = mid
        else:
            hi, best = mid, found
        if hi - lo < LEVEL_TOLERANCE:
            break
    if best is None:
        best = null_pass(hi, grid, limit)
        if not best.within(target):  # cannot happen (passes_by_monotony's proof)
            raise GateError(f"early revert level {hi:g} was inferred within {target:g}, is not")
    return hi, best


def grid_calibrated_gate(cls: type[G], calibrated: Callable, params: dict) -> G:
    """``cls`` with its boundaries calibrated on the coarse grid only, not certified between
    grid points: fast, for design searches (``gates.design``), which certify the gate they
    answer with. ``calibrated(key, certified)`` is the gate module's cached calibration,
    keyed as the gate's own (``key_at``: the certified calibration then starts from it)."""
    probe = cls(**{**params, "final_level": 0.0})
    cal = calibrated(probe.key_at(probe.ledger), certified=False)
    levels = {"revert_level": cal.revert_level, "final_level": cal.final_level}
    return cls(**{**field_values(probe), **levels})
