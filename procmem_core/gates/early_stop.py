"""Accept boundaries that stop early when nothing changed: the design objective and frontier.

A two-sample gate (``TwoSampleGate``) with the accept boundary far away (``accept_level``
-60) is the most powerful member of its family, so it meets the power target at the
smallest cap; but it then runs to its cap when nothing changed (about 153 of 157 pairs for
the quickstart's question). Raising the accept boundary trades power for early accepts;
a later cap buys the power back. ``frontier`` maps that trade exactly: for caps from the
smallest feasible one to the question's ``max_runs`` and accept levels ``f ln B``
(``ln B = ln(beta/(1-alpha))``, Wald's; ``f`` in ``FACTORS``), one cap scan per level
(``cap_scan``: every cap from one recursion, the final boundary calibrated to alpha on the
grid) gives the worst false revert, the least power and the worst expected pairs when
nothing changed and at the drop; per cap the loosest level meeting both targets is the
frontier's point (expected pairs fall as the level rises). ``choose`` picks a point by the
``Objective``, and ``refine`` bisects its level between the grid's neighbours.

The accept statistic is the drop statistic with its variance from ``pc = (a + B + c)/(n +
k + 2c)``, ``c = SHRINK`` pseudo-runs at 1/2 (``twostats``): a two-sided SPRT in the drop
statistic. Measured for the quickstart's question at cap 200 (docs/gates.md): variance
at 1/4 (``lambda_ref``) meets the targets with 59 pairs when nothing changed but is 1.5
times the Wald-Wolfowitz bound at p0 0.95 (it ignores that a high p0 carries more
information); the plain pooled variance (``c = 1``) loses power at high p0 (0.65 at level
-1.5: a few early successes make the variance look small); ``c`` from 3 to 5 keeps both
(57 pairs, within 1.19 of the bound everywhere).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from procmem_core.errors import ParameterError, check_choice, check_probability
from procmem_core.gates.cap_scan import cap_scan
from procmem_core.gates.pairbound import null_runs_bound as bound_of
from procmem_core.gates.tolerance import at_least, at_most
from procmem_core.gates.two_sample import TwoSampleGate
from procmem_core.gates.worst import interval_bounds

OBJECTIVES = ("null_runs", "max_runs", "mixed")
SHRINK = 4.0
FACTORS = (0.85, 1.0, 1.07, 1.15, 1.25, 1.4, 1.7, 2.3, 3.2)
"""Accept levels searched, as multiples of Wald's ``ln B`` (loosest first)."""
FRONTIER_CAPS = 7
POWER_MARGIN = 0.002
"""Power the search keeps above ``1 - beta`` on its grid, for the bound between grid points."""
TIE_TOLERANCE = 0.01
"""``null_runs``: points within this share of the fewest expected pairs tie; the smallest
cap among them wins (the frontier flattens: a larger cap buys almost nothing)."""
REFINE_STEPS = 3


@dataclass(frozen=True)
class Objective:
    """What the design minimises among the configurations meeting both targets:
    ``null_runs`` (expected pairs when nothing changed at the worst p0), ``max_runs``
    (the cap: the tool's former objective) or ``mixed`` with ``weight`` w:
    ``w E[pairs | no change] + (1 - w) max_runs``."""

    kind: str = "null_runs"
    weight: float = 1.0

    def __post_init__(self) -> None:
        check_choice("objective", self.kind, OBJECTIVES)
        w = self.weight
        if isinstance(w, bool) or not isinstance(w, int | float) or not 0.0 <= w <= 1.0:
            raise ParameterError("weight", w, "a number in [0, 1] (the mixed objective's weight)")
        if self.kind != "mixed" and w != 1.0:  # it would be ignored: say so, as the CLI does
            raise ParameterError(
                "weight",
                w,
                f"1 (the default): only the mixed objective has a weight, not {self.kind}",
            )

    def score(self, max_runs: float, runs_null: float) -> float:
        """The quantity minimised (pairs)."""
        if self.kind == "null_runs":
            return float(runs_null)
        if self.kind == "max_runs":
            return float(max_runs)
        return self.weight * float(runs_null) + (1.0 - self.weight) * float(max_runs)

    def label(self) -> str:
        return f"mixed {self.weight:g}" if self.kind == "mixed" else self.kind


@dataclass(frozen=True)
class FrontierPoint:
    """One cap's best configuration on the search grid: its accept level, worst expected
    pairs when nothing changed and at the drop, worst false revert and least power."""

    max_runs: int
    accept_level: float
    runs_null: float
    runs_alt: float
    false_revert: float
    power: float
    accept_shrink: float | None = SHRINK
    """The accept statistic's pseudo-runs (``SHRINK``), or None: variance at 1/4."""


def frontier(
    params: dict, grid: np.ndarray, alpha: float, beta: float, caps: np.ndarray
) -> tuple[FrontierPoint, ...]:
    """Per cap in ``caps``, the configuration with the fewest expected pairs when nothing
    changed among the loosest accept level of ``FACTORS`` meeting both targets on ``grid``
    with each accept statistic: the shrunk one (``params["accept_shrink"]``) and the
    variance at 1/4 (None), which needs fewer pairs at some questions (fixed ledger 100,
    concurrent family: 48.7 against 72.8); caps no level meets are left out. ``params``:
    the ``TwoSampleGate`` parameters other than the cap and the boundaries."""
    best: dict[int, FrontierPoint] = {}
    for shrink in dict.fromkeys((params.get("accept_shrink"), None)):
        for point in _loosest(dict(params, accept_shrink=shrink), grid, alpha, beta, caps):
            kept = best.get(point.max_runs)
            if kept is None or point.runs_null < kept.runs_null:
                best[point.max_runs] = point
    return tuple(best[k] for k in sorted(best))


def _loosest(
    params: dict, grid: np.ndarray, alpha: float, beta: float, caps: np.ndarray
) -> list[FrontierPoint]:
    """Per cap, the loosest accept level of ``FACTORS`` meeting both targets, for one
    accept statistic."""
    wald_b = math.log(beta / (1.0 - alpha))
    best: dict[int, FrontierPoint] = {}
    for factor in FACTORS:
        level = factor * wald_b
        # a cap a looser level already meets keeps that level: scan only the others, and
        # only up to the largest of them (a cap's figures do not depend on later runs)
        left = np.array([k for k in np.asarray(caps, dtype=int) if int(k) not in best])
        found = _scan_points(params, level, grid, alpha, beta, left, int(left.max()))
        for point in found:
            best.setdefault(point.max_runs, point)
        if len(best) == len(caps):
            break
    return [best[k] for k in sorted(best)]


def _scan_points(params, level, grid, alpha, beta, caps, top) -> list[FrontierPoint]:
    gate = TwoSampleGate(**params, max_runs=top, accept_level=level, final_level=0.0)
    floor = 1.0 - beta + POWER_MARGIN
    res = cap_scan(gate, grid, params["min_drop"], alpha, None, caps, power_floor=floor)
    out = []
    for k in np.asarray(caps, dtype=int):
        ok = at_most(res.false_revert[k], alpha) and at_most(res.early[k], alpha)
        if ok and at_least(res.power[k], floor):
            out.append(FrontierPoint(int(k), level, float(res.runs_null[k]),
                                     float(res.runs_alt[k]), float(res.false_revert[k]),
                                     float(res.power[k]), params.get("accept_shrink")))  # fmt: skip
    return out


def choose(points: tuple[FrontierPoint, ...], objective: Objective) -> FrontierPoint:
    """The frontier point the objective prefers (``null_runs``: fewest expected pairs when
    nothing changed, within ``TIE_TOLERANCE``, then the smallest cap)."""
    scores = np.array([objective.score(p.max_runs, p.runs_null) for p in points])
    if objective.kind == "null_runs":
        near = np.flatnonzero(scores <= scores.min() * (1.0 + TIE_TOLERANCE))
        return points[int(near[np.argmin([points[i].max_runs for i in near])])]
    return points[int(np.argmin(scores))]


def refine(
    params: dict, point: FrontierPoint, grid: np.ndarray, alpha: float, beta: float
) -> FrontierPoint:
    """Raise the point's accept level towards the next looser level of the search grid
    while both targets still hold at its cap (bisection, ``REFINE_STEPS``), with the point's
    accept statistic."""
    params = dict(params, accept_shrink=point.accept_shrink)
    wald_b = math.log(beta / (1.0 - alpha))
    looser = [f * wald_b for f in FACTORS if f * wald_b > point.accept_level]
    if not looser:
        return point
    lo, hi = point.accept_level, min(looser)
    caps = np.array([point.max_runs])
    for _ in range(REFINE_STEPS):
        mid = (lo + hi) / 2.0
        found = _scan_points(params, mid, grid, alpha, beta, caps, point.max_runs)
        if found:
            point, lo = found[0], mid
        else:
            hi = mid
    return point


def frontier_caps(smallest: int, largest: int) -> np.ndarray:
    """``FRONTIER_CAPS`` caps from the smallest feasible one to the largest allowed."""
    return np.unique(np.round(np.linspace(smallest, largest, FRONTIER_CAPS)).astype(int))


@dataclass(frozen=True)
class NullRunsBound:
    """Expected pairs when nothing changed against the Wald-Wolfowitz bound
    (``pairbound.null_runs_bound``) at the gate's achieved error rates, on a grid of p0:
    at the p0 where the gate's expected pairs are largest, and the largest ratio."""

    p0: float
    runs: float
    bound: float
    ratio: float
    worst_ratio: float
    worst_ratio_p0: float


def null_runs_bound(gate, grid: np.ndarray, drop: float, prior_runs: int) -> NullRunsBound:
    """``NullRunsBound`` of ``gate`` on ``grid`` (exact rates at each grid point; the
    alternatives ``q`` are the grid's points)."""
    check_probability("drop", drop, open_low=True, open_high=True)
    null = gate.operating_curve(grid, 0.0, prior_runs)
    alt = gate.operating_curve(grid, drop, prior_runs)
    concurrent = gate.design == "concurrent"
    b = bound_of(grid, null.p_revert, grid, 1.0 - alt.p_revert, drop, prior_runs, concurrent)
    ratio = null.expected_runs / b
    i, j = int(np.argmax(null.expected_runs)), int(np.argmax(ratio))
    return NullRunsBound(float(grid[i]), float(null.expected_runs[i]), float(b[i]),
                         float(ratio[i]), float(ratio[j]), float(grid[j]))  # fmt: skip


def null_runs_ceiling(gate, p0_range, prior_runs: int, points: int = 201) -> tuple[float, float]:
    """``(grid worst, bound)`` of the expected pairs when nothing changed over the range.
    ``E[min(N, K)] / K`` is the mean of a [0, 1]-valued function of the outcomes, so the
    derivative bounds of ``worst.interval_bounds`` (first and second order: both use only
    ``Var g <= f (1 - f)`` for ``g`` in [0, 1]) bound it between grid points as they bound
    a probability."""
    grid = p0_range.grid(points)
    curve = gate.operating_curve(grid, 0.0, prior_runs)
    f = curve.expected_runs / gate.max_runs
    per = interval_bounds(curve.p0, f, 0.0, curve.observations, upper=True)
    return float(curve.expected_runs.max()), float(max(per.max(), f.max()) * gate.max_runs)
