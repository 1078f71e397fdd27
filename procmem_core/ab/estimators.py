"""The fixed-n lift estimators of withheld-vs-shown sessions (docs/statistics.md), each one
class on ``LiftEstimator`` (``ab.base``): difference in means (with Newcombe's interval,
its p-value and its peeked path), Hajek IPW, Horvitz-Thompson IPW and AIPW. Style after
Open Bandit Pipeline's ``obp.ope.estimators``: one class per formula, the formula and its
source in the docstring.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from procmem_core.ab.base import Estimate, LiftEstimator, check_sessions, normal_z, wald_estimate
from procmem_core.proportions import wilson_interval


def _arm_sums(y: np.ndarray, arm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return (y * arm).sum(axis=1), arm.sum(axis=1)


def _safe_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.divide(a, b, out=np.full(np.shape(a), np.nan), where=b > 0)


@dataclass(frozen=True)
class DifferenceInMeans(LiftEstimator):
    """``tau = mean(Y | shown) - mean(Y | withheld)``, SE ``sqrt(p1 q1 / n1 + p0 q0 / n0)``.

    Interval: Newcombe's hybrid score interval from two Wilson intervals (Newcombe 1998,
    method 10), which keeps its coverage near 0 and 1 where the Wald interval fails.
    """

    name: ClassVar[str] = "dim"
    one_propensity: ClassVar[bool] = True

    def compute(
        self,
        y: np.ndarray,
        shown: np.ndarray,
        x: np.ndarray,
        mask: np.ndarray,
        propensity: np.ndarray | float,
        level: float,
    ) -> Estimate:
        s1, n1 = _arm_sums(y, shown & mask)
        s0, n0 = _arm_sums(y, ~shown & mask)
        return newcombe_estimate(s1, n1, s0, n0, level)


def newcombe_bounds(
    s1: np.ndarray, n1: np.ndarray, s0: np.ndarray, n0: np.ndarray, z: float | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Newcombe's hybrid score interval for ``p1 - p0`` (Newcombe 1998, method 10):
    ``tau - sqrt((p1 - l1)^2 + (u0 - p0)^2)``, ``tau + sqrt((u1 - p1)^2 + (p0 - l0)^2)``
    with ``(l_a, u_a)`` the Wilson intervals of the two arms at ``z``."""
    p1, p0 = _safe_div(s1, n1), _safe_div(s0, n0)
    tau = p1 - p0
    l1, u1 = wilson_interval(s1, n1, z)
    l0, u0 = wilson_interval(s0, n0, z)
    low = tau - np.sqrt((p1 - l1) ** 2 + (u0 - p0) ** 2)
    high = tau + np.sqrt((u1 - p1) ** 2 + (p0 - l0) ** 2)
    return low, high


def newcombe_p(
    s1: np.ndarray, n1: np.ndarray, s0: np.ndarray, n0: np.ndarray, iterations: int = 60
) -> np.ndarray:
    """The p-value of "no lift" that goes with Newcombe's interval: ``2 Phi(-z*)`` where
    ``z*`` puts the interval's near end on 0 (the Wilson intervals widen with ``z``, so
    bisection finds it); 1 when the arms' rates are equal, NaN when an arm is empty."""
    s1, n1, s0, n0 = (np.asarray(a, dtype=float) for a in (s1, n1, s0, n0))
    tau = _safe_div(s1, n1) - _safe_div(s0, n0)
    lo, hi = np.zeros_like(tau), np.full_like(tau, 40.0)
    for _ in range(iterations):
        mid = (lo + hi) / 2
        low, high = newcombe_bounds(s1, n1, s0, n0, mid)
        still_excludes = np.where(tau > 0, low > 0, high < 0)
        lo, hi = np.where(still_excludes, mid, lo), np.where(still_excludes, hi, mid)
    p = 2.0 * stats.norm.sf((lo + hi) / 2)
    return np.where(np.isfinite(tau), np.where(tau == 0, 1.0, p), np.nan)


def newcombe_estimate(
    s1: np.ndarray, n1: np.ndarray, s0: np.ndarray, n0: np.ndarray, level: float
) -> Estimate:
    """Difference in means of two arms' counts with Newcombe's interval and its p-value."""
    p1, p0 = _safe_div(s1, n1), _safe_div(s0, n0)
    se = np.sqrt(_safe_div(p1 * (1 - p1), n1) + _safe_div(p0 * (1 - p0), n0))
    low, high = newcombe_bounds(s1, n1, s0, n0, normal_z(level))
    return Estimate(tau=p1 - p0, se=se, low=low, high=high, p=newcombe_p(s1, n1, s0, n0))


def newcombe_path(
    y: np.ndarray, shown: np.ndarray, mask: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """Newcombe's fixed-n interval recomputed after every session (what peeking reads):
    ``(low, high)`` of shape ``(R, n)``, ``(-inf, inf)`` until both arms have a session."""
    a1, a0 = shown & mask, ~shown & mask
    n1, n0 = np.cumsum(a1, axis=1), np.cumsum(a0, axis=1)
    s1, s0 = np.cumsum(y * a1, axis=1), np.cumsum(y * a0, axis=1)
    low, high = newcombe_bounds(s1, n1, s0, n0, normal_z(level))
    both = (n1 > 0) & (n0 > 0)
    return np.where(both, low, -np.inf), np.where(both, high, np.inf)


@dataclass(frozen=True)
class HajekIPW(LiftEstimator):
    """Self-normalized IPW: ``sum(w1 Y) / sum(w1) - sum(w0 Y) / sum(w0)``.

    ``w1 = A / e``, ``w0 = (1 - A) / (1 - e)`` with the known propensity ``e``
    (Hajek 1971). With a constant propensity the point estimate equals the difference
    in means; its SE here is the sandwich (linearization) SE, each arm's part inflated
    by ``n_a / (n_a - 1)`` (HC1), with a Wald interval.
    """

    name: ClassVar[str] = "ipw"

    def compute(
        self,
        y: np.ndarray,
        shown: np.ndarray,
        x: np.ndarray,
        mask: np.ndarray,
        propensity: np.ndarray | float,
        level: float,
    ) -> Estimate:
        w1 = (shown & mask) / propensity
        w0 = (~shown & mask) / (1.0 - propensity)
        n = mask.sum(axis=1)
        mu1 = _safe_div((w1 * y).sum(axis=1), w1.sum(axis=1))
        mu0 = _safe_div((w0 * y).sum(axis=1), w0.sum(axis=1))
        m1 = _safe_div(w1.sum(axis=1), n)
        m0 = _safe_div(w0.sum(axis=1), n)
        c1 = _dof(shown & mask, 1)[:, None]
        c0 = _dof(~shown & mask, 1)[:, None]
        infl = (
            c1 * w1 * (y - mu1[:, None]) / m1[:, None] - c0 * w0 * (y - mu0[:, None]) / m0[:, None]
        )
        se = np.sqrt(_safe_div((infl**2 * mask).sum(axis=1), n**2))
        return wald_estimate(mu1 - mu0, se, level)


@dataclass(frozen=True)
class HorvitzThompsonIPW(LiftEstimator):
    """Plain IPW: ``mean(w1 Y - w0 Y)`` (Horvitz and Thompson 1952), SE from its sample
    variance. Unbiased but with far larger variance than the Hajek form at small epsilon."""

    name: ClassVar[str] = "ipw_ht"

    def compute(
        self,
        y: np.ndarray,
        shown: np.ndarray,
        x: np.ndarray,
        mask: np.ndarray,
        propensity: np.ndarray | float,
        level: float,
    ) -> Estimate:
        psi = ((shown & mask) / propensity - (~shown & mask) / (1.0 - propensity)) * y
        return _mean_estimate(psi, mask, level)


def _mean_estimate(psi: np.ndarray, mask: np.ndarray, level: float) -> Estimate:
    n = mask.sum(axis=1)
    tau = _safe_div((psi * mask).sum(axis=1), n)
    dev = (psi - tau[:, None]) * mask
    var = _safe_div((dev**2).sum(axis=1), n - 1)
    return wald_estimate(tau, np.sqrt(_safe_div(var, n)), level)


def _dof(arm: np.ndarray, parameters: int) -> np.ndarray:
    """``sqrt(n_a / (n_a - k))``: the HC1 small-sample factor of one arm's residuals
    (MacKinnon and White 1985); NaN when the arm has at most ``k`` sessions."""
    n = arm.sum(axis=1).astype(float)
    return np.sqrt(_safe_div(n, n - parameters))


def _arm_regression(y: np.ndarray, x: np.ndarray, arm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least squares ``y ~ a + b x`` within one arm, per replication (b = 0 if x is constant)."""
    n = arm.sum(axis=1)
    mx = _safe_div((x * arm).sum(axis=1), n)
    my = _safe_div((y * arm).sum(axis=1), n)
    dx = (x - mx[:, None]) * arm
    sxx = (dx**2).sum(axis=1)
    sxy = (dx * (y - my[:, None])).sum(axis=1)
    slope = np.divide(sxy, sxx, out=np.zeros_like(sxx), where=sxx > 1e-12)
    return my - slope * mx, slope


@dataclass(frozen=True)
class AugmentedIPW(LiftEstimator):
    """Doubly robust AIPW (Robins, Rotnitzky and Zhao 1994) with a per-user outcome model.

    ``psi = m1(x) - m0(x) + A (Y - m1(x)) / e - (1 - A) (Y - m0(x)) / (1 - e)``,
    ``tau = mean(psi)``, SE ``sd(psi) / sqrt(n)`` with each arm's residuals inflated by
    ``n_a / (n_a - 2)`` (HC1, the line's two parameters), Wald interval. The outcome model
    ``m_a(x)`` is a least-squares line in the user's trait ``x`` (the user's base success
    rate) fitted within arm ``a``; where users differ it removes their variance.
    """

    name: ClassVar[str] = "aipw"

    def compute(
        self,
        y: np.ndarray,
        shown: np.ndarray,
        x: np.ndarray,
        mask: np.ndarray,
        propensity: np.ndarray | float,
        level: float,
    ) -> Estimate:
        return _mean_estimate(self._psi(y, shown, x, mask, propensity), mask, level)

    def influence(
        self, y: ArrayLike, shown: ArrayLike, x: ArrayLike, mask: ArrayLike, propensity: ArrayLike
    ) -> np.ndarray:
        """Each session's ``psi`` (class docstring; ``tau`` is its mean over ``mask``), for
        a variance that sums it by cluster (users seen many times)."""
        s = check_sessions(y, shown, x, mask, propensity)
        return self._psi(s.y, s.shown, s.x, s.mask, s.propensity)

    def _psi(self, y, shown, x, mask, propensity) -> np.ndarray:
        a1 = shown & mask
        a0 = ~shown & mask
        c1, b1 = _arm_regression(y, x, a1)
        c0, b0 = _arm_regression(y, x, a0)
        m1 = c1[:, None] + b1[:, None] * x
        m0 = c0[:, None] + b0[:, None] * x
        # each arm's residuals inflated by n_a / (n_a - 2) (two fitted parameters, HC1):
        # in-sample fits shrink residuals, and a small withheld arm undercovers without it
        k1 = _dof(a1, 2)[:, None]
        k0 = _dof(a0, 2)[:, None]
        return m1 - m0 + k1 * a1 * (y - m1) / propensity - k0 * a0 * (y - m0) / (1.0 - propensity)
