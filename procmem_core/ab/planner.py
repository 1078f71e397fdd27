"""Planning a withheld-vs-shown experiment: sessions needed at each explore rate, what
they cost in successes forgone, and which explore rate to use for a horizon.

The read is the difference in means with Newcombe's interval at level ``1 - alpha``
(``dim``), or, with ``sequential=True``, the normal-mixture confidence sequence on AIPW
pseudo-outcomes (``cs_aipw``). ``p0 = base``, ``p1 = base + lift``, ``v = p1 q1 / (1 - eps)
+ p0 q0 / eps`` (the variance of one session's contribution; docs/statistics.md):

- fixed-n, normal approximation (Chow, Shao and Wang 2008, "Sample size calculations in
  clinical research", 4.2, unequal allocation): ``n = (z_{1-alpha/2} + z_{power})^2 v /
  lift^2``, power ``Phi(|lift| / sqrt(v / n) - z_{1-alpha/2})``;
- fixed-n, exact: ``sum over n0 ~ Bin(n, eps), k0 ~ Bin(n0, p0), k1 ~ Bin(n - n0, p1)`` of
  the indicator that Newcombe's interval excludes 0 (an empty arm detects nothing), the
  unconditional exact power of the test actually read; used by ``method="auto"`` where
  the smaller arm is expected to hold at most ``EXACT_ARM`` sessions. The normal formula
  is the Wald test's power, not Newcombe's: near a rate of 0 or 1 Wilson's interval is
  narrower away from the bound, and the normal plan overstates the sessions however
  large the arms (base 0.9, lift 0.05, rate 0.1: 2,992 where 2,127 reach 0.8, exact
  power 0.904 at 2,992); ``method="exact"`` there (docs/ab.md);
- sequential: the sequence tuned at ``n*`` excludes 0 at session ``n`` when
  ``|mean| > sd c(n)/sqrt(n)``, ``c(n) = b(n; rho(n*)) / sqrt(n)`` (``NormalMixture``), so
  power at the horizon is about ``Phi(|lift| sqrt(n / v) - c(n))`` and, tuned at ``n* = n``,
  ``n = (c + z_{power})^2 v / lift^2`` with ``c = 3.035`` at alpha 0.05. Stopping at the first
  exclusion only adds power: this is the power of reading at the horizon, a lower bound.

Cost: the withheld sessions lose the lift, ``eps n lift`` successes forgone (negative:
gained, for a harmful procedure). For a horizon ``H`` the plan minimises sessions times
the cost per session, ``n(eps) * eps * |lift|``, over the rates whose ``n(eps) <= H``
(with ``n(eps)`` from the normal formula, ``eps n(eps)`` rises with ``eps``: the pick is
the smallest rate that fits the horizon).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

from procmem_core.ab.boundaries import NormalMixture
from procmem_core.ab.estimators import newcombe_bounds
from procmem_core.errors import (
    ParameterError,
    check_choice,
    check_int,
    check_probability,
    is_number,
)

EXACT_ARM = 100
"""Largest expected smaller arm (sessions) at which ``method="auto"`` uses the exact power."""
DEFAULT_RATES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)
METHODS = ("auto", "exact", "normal")


@dataclass(frozen=True)
class Design:
    """What is to be detected and how surely: two-sided ``alpha``, target ``power``."""

    lift: float
    base: float
    power: float = 0.8
    alpha: float = 0.05

    def __post_init__(self) -> None:
        base = check_probability("base", self.base)
        lift = float(self.lift) if is_number(self.lift) else math.nan
        if not (lift != 0 and 0 <= base + lift <= 1):  # NaN fails too
            raise ParameterError(
                "lift",
                self.lift,
                f"a non-zero number with 0 <= base + lift <= 1 (base {self.base})",
            )
        power = check_probability("power", self.power, open_low=True, open_high=True)
        alpha = check_probability("alpha", self.alpha, open_low=True, open_high=True)
        # stored as floats: a numpy float32 or a Fraction plans as the same design
        for field, value in (("lift", lift), ("base", base), ("power", power), ("alpha", alpha)):
            object.__setattr__(self, field, value)

    @property
    def certain(self) -> bool:
        """Whether both arms' outcomes are certain (base and base + lift each 0 or 1): the
        normal approximation has variance 0 there, the exact power does not need it."""
        return all(p in (0, 1) for p in (self.base, self.base + self.lift))

    def variance(self, explore_rate: float) -> float:
        """``v = p1 q1 / (1 - eps) + p0 q0 / eps``; refused where it is 0 (``certain``):
        no normal approximation (nor the sequential read's) plans from it."""
        eps = check_probability("explore_rate", explore_rate, open_low=True, open_high=True)
        if self.certain:
            raise ParameterError(
                "lift",
                self.lift,
                f"outcomes that vary for a normal approximation (base {self.base} and "
                "base + lift are both 0 or 1): plan the fixed-n read with method='exact'",
            )
        p0, p1 = self.base, self.base + self.lift
        return p1 * (1 - p1) / (1 - eps) + p0 * (1 - p0) / eps


def _z(alpha: float) -> float:
    return float(stats.norm.ppf(1 - alpha / 2))


def normal_power(design: Design, sessions: int, explore_rate: float) -> float:
    """``Phi(|lift| / sqrt(v / n) - z_{1-alpha/2})``."""
    se = math.sqrt(design.variance(explore_rate) / sessions)
    return float(stats.norm.cdf(abs(design.lift) / se - _z(design.alpha)))


def normal_sessions(design: Design, explore_rate: float) -> float:
    """``(z_{1-alpha/2} + z_power)^2 v / lift^2``."""
    z = _z(design.alpha) + stats.norm.ppf(design.power)
    return float(z * z * design.variance(explore_rate) / design.lift**2)


@functools.lru_cache(maxsize=4096)
def exact_power(design: Design, sessions: int, explore_rate: float) -> float:
    """Exact probability that Newcombe's interval excludes 0 (module docstring); cached,
    as the sample-size search and the horizon ask for the same values again."""
    n = check_int("sessions", sessions, minimum=1)
    eps = check_probability("explore_rate", explore_rate, open_low=True, open_high=True)
    p0, p1 = design.base, design.base + design.lift
    z = _z(design.alpha)
    n0s = _support(n, eps)
    weights = _pmf(n0s, n, eps)
    total = 0.0
    for n0, w in zip(n0s, weights, strict=True):
        if n0 == 0 or n0 == n:
            continue  # an empty arm: no interval, nothing detected
        n1 = n - n0
        k1 = _support(n1, p1)
        k0 = _support(n0, p0)
        low, high = newcombe_bounds(
            k1.astype(float)[:, None], np.float64(n1), k0.astype(float)[None, :], np.float64(n0), z
        )
        reject = (low > 0) | (high < 0)
        total += w * float(_pmf(k1, n1, p1) @ reject @ _pmf(k0, n0, p0))
    return total


def _support(n: int, p: float) -> np.ndarray:
    """The counts of Bin(n, p) within ``max(8 sd, 12)`` of the mean: outside, the
    binomial's mass is below 1e-12 (Chernoff), which no power figure can see."""
    half = max(8.0 * math.sqrt(n * p * (1 - p)), 12.0)
    lo, hi = max(0, math.floor(n * p - half)), min(n, math.ceil(n * p + half))
    return np.arange(lo, hi + 1)


def _pmf(k: np.ndarray, n: int, p: float) -> np.ndarray:
    """Binomial probabilities by log-gamma (no per-call overhead of ``scipy.stats``)."""
    k = k.astype(float)
    log = (
        special.gammaln(n + 1.0)
        - special.gammaln(k + 1.0)
        - special.gammaln(n - k + 1.0)
        + special.xlogy(k, p)
        + special.xlog1py(n - k, -p)
    )
    return np.exp(log)


def sequential_critical(sessions: float, alpha: float, tuning: float | None = None) -> float:
    """``c(n) = b(n; rho(n*)) / sqrt(n)`` of the normal mixture, ``n* = tuning or n``."""
    mix = NormalMixture(v_opt=float(tuning or sessions), alpha_opt=alpha)
    return float(mix.bound(sessions, alpha) / math.sqrt(sessions))


def sequential_power(
    design: Design, sessions: int, explore_rate: float, tuning: int | None = None
) -> float:
    """``Phi(|lift| sqrt(n / v) - c(n))``: the sequence excludes 0 at session ``n``."""
    c = sequential_critical(sessions, design.alpha, tuning)
    return float(
        stats.norm.cdf(abs(design.lift) * math.sqrt(sessions / design.variance(explore_rate)) - c)
    )


def _exact_sessions(design: Design, explore_rate: float, start: int) -> int:
    """The smallest ``n`` with exact power >= target, by bracketing then bisection (the
    exact power rises with ``n`` up to the binomial's sawtooth)."""
    lo, hi = max(1, start // 2), max(2, start)
    while exact_power(design, hi, explore_rate) < design.power:
        lo, hi = hi, hi * 2
    while exact_power(design, lo, explore_rate) >= design.power and lo > 1:
        lo = max(1, lo // 2)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if exact_power(design, mid, explore_rate) >= design.power:
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(frozen=True)
class RatePlan:
    """One explore rate: sessions needed, expected withheld, successes forgone, how."""

    explore_rate: float
    sessions: int
    withheld: float
    forgone: float
    method: str
    power_at_horizon: float | None = None

    def within(self, horizon: int | None) -> bool:
        return horizon is None or self.sessions <= horizon


def sized_exactly(normal_n: int, explore_rate: float) -> bool:
    """Whether ``method="auto"`` sizes a design exactly: its smaller arm at the normal
    approximation's sessions ``normal_n`` is expected to hold at most ``EXACT_ARM``."""
    return min(explore_rate, 1 - explore_rate) * normal_n <= EXACT_ARM


@functools.lru_cache(maxsize=1024)
def plan_rate(
    design: Design,
    explore_rate: float,
    sequential: bool = False,
    tuning: int | None = None,
    method: str = "auto",
) -> RatePlan:
    """Sessions needed at one explore rate (exact where ``method`` says or ``auto`` finds
    the smaller arm small; the sequential read always by its normal approximation)."""
    check_choice("method", method, METHODS)
    eps = check_probability("explore_rate", explore_rate, open_low=True, open_high=True)
    if sequential:
        n, how = _sequential_sessions(design, eps, tuning), "sequential, normal approx."
    else:
        # certain outcomes have no normal approximation: sized exactly unless "normal" asked
        certain = design.certain and method != "normal"
        n_norm = 2 if certain else math.ceil(normal_sessions(design, eps))
        exact = method == "exact" or (method == "auto" and (certain or sized_exactly(n_norm, eps)))
        n = _exact_sessions(design, eps, n_norm) if exact else n_norm
        how = "exact binomial" if exact else "normal approx."
    return RatePlan(eps, n, eps * n, eps * n * design.lift, how)


def _sequential_sessions(design: Design, eps: float, tuning: int | None) -> int:
    v = design.variance(eps)
    zb = stats.norm.ppf(design.power)
    if tuning is None:  # c(n) is the same at every n when tuned at n itself
        c = sequential_critical(100.0, design.alpha)
        return math.ceil((c + zb) ** 2 * v / design.lift**2)

    def gap(n: float) -> float:
        return (
            abs(design.lift) * math.sqrt(n / v) - sequential_critical(n, design.alpha, tuning) - zb
        )

    if gap(1.0) >= 0:  # one session already reaches the power: no root to bracket
        return 1
    hi = 2.0
    while gap(hi) < 0:
        hi *= 2
    return math.ceil(optimize.brentq(gap, hi / 2 if hi > 2 else 1.0, hi))


@dataclass(frozen=True)
class ExplorePlan:
    """Every rate's plan and the pick for ``horizon``: the least forgone among rates that
    reach the power within it (None when none does)."""

    design: Design
    rates: tuple[RatePlan, ...]
    horizon: int | None
    sequential: bool
    pick: RatePlan | None


def plan(
    design: Design,
    rates: tuple[float, ...] = DEFAULT_RATES,
    horizon: int | None = None,
    sequential: bool = False,
    tuning: int | None = None,
    method: str = "auto",
) -> ExplorePlan:
    """``plan_rate`` at each rate, each with its power at the horizon, and the pick."""
    if horizon is not None:
        check_int("horizon", horizon, minimum=2)
    if not rates:
        raise ParameterError("rates", rates, "at least one explore rate")
    rows = []
    for eps in rates:
        r = plan_rate(design, eps, sequential, tuning, method)
        at_h = None
        if horizon is not None:
            at_h = _power_at(design, horizon, eps, sequential, tuning, method)
        rows.append(RatePlan(r.explore_rate, r.sessions, r.withheld, r.forgone, r.method, at_h))
    feasible = [r for r in rows if r.within(horizon)]
    pick = min(feasible, key=lambda r: (abs(r.forgone), r.explore_rate)) if feasible else None
    return ExplorePlan(design, tuple(rows), horizon, sequential, pick)


def fixed_power(design: Design, sessions: int, explore_rate: float, method: str = "auto") -> float:
    """Fixed-n power at ``sessions``: exact where ``method`` says or, with ``auto``, where
    the smaller arm is expected to hold at most ``EXACT_ARM`` sessions; else normal."""
    check_choice("method", method, METHODS)
    small = design.certain or min(explore_rate, 1 - explore_rate) * sessions <= EXACT_ARM
    if method == "exact" or (method == "auto" and small):
        return exact_power(design, sessions, explore_rate)
    return normal_power(design, sessions, explore_rate)


def _power_at(
    design: Design, n: int, eps: float, sequential: bool, tuning: int | None, method: str
) -> float:
    if sequential:
        return sequential_power(design, n, eps, tuning)
    return fixed_power(design, n, eps, method)
