"""Variance reduction with a pre-session covariate: CUPED-style regression adjustment.

What the system knows before a session (the user's base rate, the task's difficulty)
predicts its outcome but cannot depend on the arm, which is drawn after it. Subtracting
the predictable part leaves the lift unchanged and removes that part's variance
(Deng, Xu, Kohavi and Walker 2013, "Improving the sensitivity of online controlled
experiments by utilizing pre-experiment data", WSDM):

``y' = y - theta (x - mean(x))``, ``theta = cov(y, x) / var(x)`` over the usable sessions
of both arms, ``tau = mean(y' | shown) - mean(y' | withheld)``, SE
``sqrt(s1'^2 / n1 + s0'^2 / n0)`` (each arm's sample variance of ``y'``), Wald interval.
``theta = 0`` is the unadjusted difference in means with the same SE formula, so the
width reduction ``1 - se' / se`` measures what the covariate bought. Several covariates:
pass one prediction made from them (CUPAC, Tang et al. 2020). With separate slopes per
arm the same idea is Lin's (2013) estimator, which the in-sample ``aipw`` estimator is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from procmem_core.ab.base import Estimate, LiftEstimator, check_sessions, wald_estimate


def _mean(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    n = w.sum(axis=1)
    return np.divide((a * w).sum(axis=1), n, out=np.full(n.shape, np.nan), where=n > 0)


def _arm_se(yy: np.ndarray, shown: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, ...]:
    """Difference of arm means of ``yy`` and ``sqrt(s1^2 / n1 + s0^2 / n0)``."""
    parts = []
    for arm in (shown & mask, ~shown & mask):
        w = arm.astype(float)
        n = w.sum(axis=1)
        mu = _mean(yy, w)
        ss = (w * (yy - np.nan_to_num(mu)[:, None]) ** 2).sum(axis=1)
        var = np.divide(ss, n - 1, out=np.full(n.shape, np.nan), where=n > 1)
        parts.append((mu, var / np.where(n > 0, n, np.nan)))
    (m1, v1), (m0, v0) = parts
    return m1 - m0, np.sqrt(v1 + v0)


def cuped_theta(y: np.ndarray, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``cov(y, x) / var(x)`` over the usable sessions of each replication (0 where x is
    constant)."""
    w = mask.astype(float)
    dx = x - np.nan_to_num(_mean(x, w))[:, None]
    dy = y - np.nan_to_num(_mean(y, w))[:, None]
    sxx, sxy = (w * dx * dx).sum(axis=1), (w * dx * dy).sum(axis=1)
    return np.divide(sxy, sxx, out=np.zeros(sxx.shape), where=sxx > 1e-12)


@dataclass(frozen=True)
class AdjustedComparison:
    """The adjusted estimate, the unadjusted one (``theta = 0``) and ``1 - se' / se``."""

    adjusted: Estimate
    unadjusted: Estimate
    width_reduction: np.ndarray


def regression_adjustment(
    y: np.ndarray,
    shown: np.ndarray,
    x: np.ndarray,
    mask: np.ndarray,
    propensity: np.ndarray | float = 0.5,
    level: float = 0.95,
) -> AdjustedComparison:
    """CUPED beside the unadjusted difference in means (same SE formula), checked inputs."""
    s = check_sessions(y, shown, x, mask, propensity, one_propensity="cuped")
    adjusted = RegressionAdjusted().compute(s.y, s.shown, s.x, s.mask, s.propensity, level)
    tau, se = _arm_se(s.y, s.shown, s.mask)
    unadjusted = wald_estimate(tau, se, level)
    with np.errstate(divide="ignore", invalid="ignore"):
        reduction = 1.0 - adjusted.se / unadjusted.se
    return AdjustedComparison(adjusted, unadjusted, reduction)


@dataclass(frozen=True)
class RegressionAdjusted(LiftEstimator):
    """CUPED with the pre-session covariate ``x`` (module docstring)."""

    name: ClassVar[str] = "cuped"
    one_propensity: ClassVar[bool] = True

    def compute(self, y, shown, x, mask, propensity, level) -> Estimate:
        theta = cuped_theta(y, x, mask)
        w = mask.astype(float)
        y_adj = y - theta[:, None] * (x - np.nan_to_num(_mean(x, w))[:, None])
        tau, se = _arm_se(y_adj, shown, mask)
        return wald_estimate(tau, se, level)
