"""Worst case over the nuisance: a gate's false-revert rate maximised over the prior's true
rate p0 in a range, exactly on a grid and bounded between grid points.

The prior's rate p0 is unknown, so what a researcher can promise is
``max over p0 in [low, high] of P_p0(revert | no change)`` (docs/statistics.md, "When p0
is unknown"). ``worst_case`` evaluates the gate's exact ``operating_curve`` on a grid
uniform in ``phi = arcsin(sqrt(p0))`` and bounds the curve between grid points:

*Bound between grid points.* Let ``f(p0)`` be the probability of an event (revert) of
the decision, which depends on at most ``N`` independent Bernoulli outcomes ``x_i`` (ledger
and runs, ``OperatingCurve.observations``) whose rates ``p_i`` move with p0 at unit slope
(the prior's at ``p0``, the revision's at ``p0 - drop``). With the scores
``s_i = (x_i - p_i) / (p_i q_i)`` (mean 0, variance ``1 / (p_i q_i)``) and ``U = sum s_i``,
the score ``U`` has variance at most ``I(p0) = N / min(p q, p1 q1)``, and
``f'(p0) = E[1_revert U]``, so by Cauchy-Schwarz ``|f'| <= sqrt(f (1 - f)) sqrt(I)`` and
``u = arcsin(sqrt(f))`` changes at rate ``|u'| <= r(p0) = sqrt(I(p0)) / 2``. ``r`` is
convex, so over a grid interval ``[a, b]`` ``int r <= S = (b - a)(r(a) + r(b)) / 2`` and
``u <= (u(a) + u(b) + S) / 2`` everywhere inside (``>= (u(a) + u(b) - S) / 2`` for a lower
bound on power): the first-order bound.

*Second order (issue 28, item 4).* Differentiating the likelihood twice, with
``d s_i / d p0 = -s_i^2``: ``f'' = E[1_revert W]``, ``W = U^2 - sum s_i^2 = sum_{i != j}
s_i s_j``. ``E[W] = 0`` and, the ``s_i`` independent with mean 0, ``E[W^2] = 2 sum_{i != j}
Var s_i Var s_j <= 2 I^2``; so ``|f''| = |E[(1_revert - f) W]| <= sqrt(2) sqrt(f (1 - f))
I(p0)``. On ``[a, b]`` let ``M`` bound that (``curvature_excess``: ``I`` at its larger end,
``min(p q, p1 q1)`` being concave, and ``f (1 - f)`` at its largest over the first-order
bounds of ``f`` there). Then ``g = f - l``, ``l`` the chord through ``(a, f(a))`` and ``(b,
f(b))``, has ``g(a) = g(b) = 0`` and ``|g''| = |f''| <= M``, so ``g - M (x - a)(b - x) / 2``
is convex (its second derivative is ``g'' + M >= 0``) and zero at both ends, hence ``<= 0``:
``f <= max(f(a), f(b)) + M (b - a)^2 / 8`` inside; likewise ``g + M (x - a)(b - x) / 2`` is
concave, hence ``>= 0``: ``f >= min(f(a), f(b)) - M (b - a)^2 / 8`` (for power). Each
interval takes the tighter of the two bounds. Near the worst value the second-order one is
far tighter (its excess shrinks as the square of the interval), so the certifications need
about a tenth of the points (the quickstart's power: 167 values of p0 instead of 2,620).

Intervals whose bound is not yet within target are split until it is
(``worst_case(target=...)``). The bound needs a rule that does not use the true p0: for
p0 known (``OperatingCurve.p0_dependent``) only the grid maximum is reported.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from procmem_core.errors import ParameterError, check_int, check_probability
from procmem_core.gates.base import Gate, OperatingCurve

P0_RANGE = (0.05, 0.95)
"""The default range of the prior's true rate over which worst cases are taken."""
GRID_POINTS = 61
MIN_STEP = 1e-6
"""Smallest grid interval (in arcsin(sqrt(p0))) the refinement splits down to."""
MAX_ROUNDS = 24
MAX_POINTS = 20_000


@dataclass(frozen=True)
class P0Range:
    """The range ``[low, high]`` of the prior's true rate, ``0 < low < high < 1``."""

    low: float = P0_RANGE[0]
    high: float = P0_RANGE[1]

    def __post_init__(self) -> None:
        low = check_probability("p0_low", self.low, open_low=True, open_high=True)
        high = check_probability("p0_high", self.high, open_low=True, open_high=True)
        if not low < high:
            raise ParameterError("p0_range", (low, high), "low < high, both in (0, 1)")

    def check_drop(self, drop: float, field: str = "min_drop") -> float:
        """``drop`` if ``0 < drop < low`` (so that ``p0 - drop > 0`` over the range)."""
        drop = check_probability(field, drop, open_low=True, open_high=True)
        if drop >= self.low:
            raise ParameterError(field, drop, f"below the low end of the p0 range ({self.low:g})")
        return drop

    def grid(self, points: int = GRID_POINTS) -> np.ndarray:
        """``points`` values uniform in ``arcsin(sqrt(p0))``, both ends included."""
        points = check_int("points", points, minimum=2)
        phi = np.linspace(*np.arcsin(np.sqrt([self.low, self.high])), points)
        return np.clip(np.sin(phi) ** 2, self.low, self.high)


@dataclass(frozen=True)
class WorstCase:
    """The worst value of a rate over the p0 range.

    ``p0``, ``value``: the grid (refined where needed) and the exact rate there;
    ``worst``/``at``: the grid's worst value and where; ``bound``: a bound on the rate at
    every p0 in the range (above for a false-revert rate, below for power; None when the
    rule uses the true p0); ``curve``: the operating curve at the grid points.
    """

    kind: str
    p0: np.ndarray
    value: np.ndarray
    worst: float
    at: float
    bound: float | None
    curve: OperatingCurve


def rate_bound(p0: np.ndarray, drop: float, observations: int) -> np.ndarray:
    """``r(p0) = sqrt(N / min(p q, p1 q1)) / 2``, ``p1 = p0 - drop`` (convex in p0)."""
    p0 = np.asarray(p0, dtype=float)
    p1 = p0 - drop
    v = np.minimum(p0 * (1.0 - p0), p1 * (1.0 - p1))
    return 0.5 * np.sqrt(observations / np.where(v > 0, v, np.nan))


def interval_bounds(
    p0: np.ndarray, value: np.ndarray, drop: float, observations: int, upper: bool
) -> np.ndarray:
    """Per grid interval, the bound on the rate anywhere inside: the tighter of the
    first-order bound (on ``arcsin(sqrt(f))``) and the second-order one (on ``f``; module
    docstring)."""
    u = np.arcsin(np.sqrt(np.clip(value, 0.0, 1.0)))
    r = rate_bound(p0, drop, observations)
    slack = np.diff(p0) * (r[:-1] + r[1:]) / 2.0
    mid = u[:-1] + u[1:]
    high = np.sin(np.clip((mid + slack) / 2.0, 0.0, np.pi / 2)) ** 2
    low = np.sin(np.clip((mid - slack) / 2.0, 0.0, np.pi / 2)) ** 2
    excess = curvature_excess(p0, low, high, r)
    f = np.clip(value, 0.0, 1.0)
    if upper:
        return np.minimum(high, np.maximum(f[:-1], f[1:]) + excess)
    return np.maximum(low, np.minimum(f[:-1], f[1:]) - excess)


def curvature_excess(
    p0: np.ndarray, low: np.ndarray, high: np.ndarray, r: np.ndarray
) -> np.ndarray:
    """Per grid interval ``[a, b]``, ``M (b - a)^2 / 8`` with ``M = sqrt(2) s I`` bounding
    ``|f''|`` inside: ``I = 4 max(r(a), r(b))^2`` (``rate_bound``; ``min(p q, p1 q1)`` is
    concave, so the information is largest at an end) and ``s`` the largest
    ``sqrt(f (1 - f))`` for ``f`` in ``[low, high]``, the first-order bounds there."""
    straddle = (low <= 0.5) & (high >= 0.5)
    spread = np.where(straddle, 0.25, np.maximum(low * (1.0 - low), high * (1.0 - high)))
    info = 4.0 * np.maximum(r[:-1], r[1:]) ** 2
    return np.sqrt(2.0 * spread) * info * np.diff(p0) ** 2 / 8.0


def worst_case(
    gate: Gate,
    drop: float = 0.0,
    prior_runs: int | None = None,
    p0_range: P0Range | None = None,
    points: int = GRID_POINTS,
    target: float | None = None,
    tol: float = 1e-3,
    max_points: int = MAX_POINTS,
) -> WorstCase:
    """Worst P(revert) over p0 in the range: the largest at ``drop = 0`` (false revert),
    the smallest at ``drop > 0`` (power), exact on a grid and bounded in between.

    Intervals whose bound is beyond ``target`` (default: the grid's worst value ``±
    tol``) are split at their midpoint in ``arcsin(sqrt(p0))`` and the gate evaluated
    there, until none is, the intervals reach ``MIN_STEP`` or the grid holds
    ``max_points`` (the bound then stays above the target: still a valid bound).
    """
    rng = p0_range or P0Range()
    drop = check_probability("drop", drop)
    if drop > 0:
        rng.check_drop(drop, "drop")
    kind = "false_revert" if drop == 0 else "power"
    upper = kind == "false_revert"
    grid = rng.grid(points)
    curve = gate.operating_curve(grid, drop, prior_runs)
    for _ in range(MAX_ROUNDS if not curve.p0_dependent else 0):
        value = curve.p_revert
        edge = value.max() + tol if upper else value.min() - tol
        met = target is not None and (target > value.max() if upper else target < value.min())
        goal = target if met else edge
        bounds = interval_bounds(grid, value, drop, curve.observations, upper)
        phi = np.arcsin(np.sqrt(grid))
        open_ = (bounds > goal) if upper else (bounds < goal)
        open_ &= np.diff(phi) > MIN_STEP
        if not open_.any() or grid.size + open_.sum() > max_points:
            break
        new = np.sin((phi[:-1][open_] + phi[1:][open_]) / 2.0) ** 2
        more = gate.operating_curve(new, drop, prior_runs)
        curve = _merge(curve, more)
        grid = curve.p0
    return _summary(kind, curve, drop, upper)


def _merge(a: OperatingCurve, b: OperatingCurve) -> OperatingCurve:
    order = np.argsort(np.concatenate([a.p0, b.p0]), kind="stable")
    fields = {}
    for name in ("p0", "p_revert", "p_accept", "expected_runs", "expected_prior_runs"):
        fields[name] = np.concatenate([getattr(a, name), getattr(b, name)])[order]
    if a.stop is not None and b.stop is not None:
        fields["stop"] = np.concatenate([a.stop, b.stop])[order]
    return OperatingCurve(
        drop=a.drop,
        prior_runs=a.prior_runs,
        observations=a.observations,
        p0_dependent=a.p0_dependent,
        **fields,
    )


def _summary(kind: str, curve: OperatingCurve, drop: float, upper: bool) -> WorstCase:
    value = curve.p_revert
    i = int(np.argmax(value) if upper else np.argmin(value))
    bound = None
    if not curve.p0_dependent:
        per = interval_bounds(curve.p0, value, drop, curve.observations, upper)
        edge = float(value[i])
        bound = max(edge, float(per.max())) if upper else min(edge, float(per.min()))
    return WorstCase(kind, curve.p0, value, float(value[i]), float(curve.p0[i]), bound, curve)
