"""Time-uniform boundaries: the curves a running sum stays inside at every time at once.

A boundary comes from a nonnegative supermartingale ``M_t`` with ``M_0 <= 1``: by
Ville's inequality ``P(exists t: M_t >= 1/alpha) <= alpha``, so the set where
``log M_t < log(1/alpha)`` is a confidence sequence, valid under any stopping rule
(Howard, Ramdas, McAuliffe and Sekhon 2021, "Time-uniform, nonparametric,
nonasymptotic confidence sequences", Ann. Statist. 49(2)). Each boundary here is tuned
by the intrinsic time ``v_opt`` where it is tightest (confseq's ``v_opt``),
and gives the always-valid p-value ``min(1, 1 / max_{s <= t} M_s)``.

- ``NormalMixture``: the two-sided normal mixture for sub-Gaussian sums (Robbins 1970;
  Howard et al. 2021; confseq's ``TwoSidedNormalMixture``): ``log M = 1/2 log(rho /
  (v + rho)) + s^2 / (2 (v + rho))``, boundary
  ``sqrt((v + rho) (log(1 + v / rho) + 2 log(1/alpha)))``.
- ``TwoPointMixture``: the same exponential process mixed over ``lambda = +-lambda*`` only,
  ``log M = log cosh(lambda* s) - lambda*^2 v / 2``: tightest possible at ``v_opt``
  (a line-crossing boundary, Howard, Ramdas, McAuliffe and Sekhon 2020, "Time-uniform
  Chernoff bounds via nonnegative supermartingales", Probab. Surveys, made two-sided),
  wider elsewhere.
- ``empirical_bernstein_bounds``: the predictable-mixture empirical-Bernstein confidence
  sequence for observations in [0, 1] (Waudby-Smith and Ramdas 2023, "Estimating means
  of bounded random variables by betting", JRSS B 86(1), 2024, Theorem 2; confseq's
  ``predmix_empbern_twosided_cs``): finite-sample valid.
- ``beta_mixture_bounds``: the conjugate Beta mixture for Bernoulli observations
  (Robbins 1970): ``M_n(p) = B(a + k, b + n - k) / B(a, b) / (p^k (1 - p)^(n - k))``,
  finite-sample valid for every ``n`` from the counts alone.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from procmem_core.errors import ParameterError, check_number, check_probability


def best_rho(v_opt: float, alpha: float) -> float:
    """The normal mixture's ``rho`` that makes its boundary (nearly) tightest at ``v_opt``:
    ``v_opt / (2 log(1/alpha) + log(1 + 2 log(1/alpha)))`` (Howard et al. 2021;
    confseq's ``TwoSidedNormalMixture::best_rho``); 12.60056 for ``v_opt = 100``,
    ``alpha = 0.05``."""
    v_opt = check_number("v_opt", v_opt, minimum=0, open_low=True)
    alpha = check_probability("alpha", alpha, open_low=True, open_high=True)
    ell = math.log(1.0 / alpha)
    return v_opt / (2.0 * ell + math.log(1.0 + 2.0 * ell))


class MixtureBoundary(ABC):
    """A two-sided boundary on a sum ``s`` with intrinsic time ``v`` (see module docs)."""

    @abstractmethod
    def log_supermartingale(self, s: ArrayLike, v: ArrayLike) -> np.ndarray:
        """``log M(s, v)``."""

    @abstractmethod
    def bound(self, v: ArrayLike, alpha: float) -> np.ndarray:
        """The ``b(v)`` with ``log M(+-b, v) = log(1/alpha)``: ``|s| < b(v)`` at every ``v``."""

    def p_value(self, s: ArrayLike, v: ArrayLike) -> np.ndarray:
        """Always-valid p-value along the last axis (time): ``min(1, exp(-max log M))``."""
        log_m = np.maximum.accumulate(self.log_supermartingale(s, v), axis=-1)
        return np.minimum(1.0, np.exp(-log_m))


@dataclass(frozen=True)
class NormalMixture(MixtureBoundary):
    """The two-sided normal mixture tuned to be tightest at intrinsic time ``v_opt``
    for level ``alpha_opt`` (``rho = best_rho(v_opt, alpha_opt)``)."""

    v_opt: float
    alpha_opt: float = 0.05

    def __post_init__(self) -> None:
        best_rho(self.v_opt, self.alpha_opt)

    @property
    def rho(self) -> float:
        return best_rho(self.v_opt, self.alpha_opt)

    def log_supermartingale(self, s: ArrayLike, v: ArrayLike) -> np.ndarray:
        s, v, rho = np.asarray(s, dtype=float), np.asarray(v, dtype=float), self.rho
        return 0.5 * np.log(rho / (v + rho)) + s * s / (2.0 * (v + rho))

    def bound(self, v: ArrayLike, alpha: float) -> np.ndarray:
        alpha = check_probability("alpha", alpha, open_low=True, open_high=True)
        v, rho = np.asarray(v, dtype=float), self.rho
        return np.sqrt((v + rho) * (np.log1p(v / rho) + 2.0 * math.log(1.0 / alpha)))


@dataclass(frozen=True)
class TwoPointMixture(MixtureBoundary):
    """``exp(lambda s - lambda^2 v / 2)`` mixed half and half over ``lambda = +-lambda*``,
    ``lambda* = sqrt(2 log(2 / alpha_opt) / v_opt)``: at ``v_opt`` its boundary is
    ``sqrt(2 v_opt log(2 / alpha))``, the narrowest of any mixture there (1.386 times the
    fixed-n normal interval at alpha 0.05, against the normal mixture's 1.549)."""

    v_opt: float
    alpha_opt: float = 0.05

    def __post_init__(self) -> None:
        best_rho(self.v_opt, self.alpha_opt)

    @property
    def lam(self) -> float:
        return math.sqrt(2.0 * math.log(2.0 / self.alpha_opt) / self.v_opt)

    def log_supermartingale(self, s: ArrayLike, v: ArrayLike) -> np.ndarray:
        s, v, lam = np.asarray(s, dtype=float), np.asarray(v, dtype=float), self.lam
        a = np.abs(lam * s)
        log_cosh = a + np.log1p(np.exp(-2.0 * a)) - math.log(2.0)
        return log_cosh - lam * lam * v / 2.0

    def bound(self, v: ArrayLike, alpha: float) -> np.ndarray:
        alpha = check_probability("alpha", alpha, open_low=True, open_high=True)
        v, lam = np.asarray(v, dtype=float), self.lam
        u = math.log(1.0 / alpha) + lam * lam * v / 2.0  # solve cosh(lam b) = e^u
        return (u + np.log1p(np.sqrt(-np.expm1(-2.0 * u)))) / lam


@dataclass(frozen=True)
class BernsteinPath:
    """The empirical-Bernstein confidence sequence of a mean in [0, 1] along the last
    axis: bounds, the lambda-weighted centre and the always-valid p-value of ``null``."""

    centre: np.ndarray
    low: np.ndarray
    high: np.ndarray
    p: np.ndarray


def empirical_bernstein_bounds(
    z: np.ndarray,
    mask: np.ndarray,
    alpha: float,
    tuning: float,
    null: float | np.ndarray = 0.5,
    truncation: float = 0.5,
) -> BernsteinPath:
    """Waudby-Smith and Ramdas (2024), Theorem 2, two-sided at ``alpha / 2`` per side.

    For ``z_i`` in [0, 1] with conditional mean ``mu``: regularized estimates
    ``mu_t = (1/2 + sum z) / (t + 1)``, ``s2_t = (1/4 + sum (z - mu_i)^2) / (t + 1)``;
    predictable bets ``lambda_t = min(truncation, sqrt(2 log(2/alpha) / (tuning s2_{t-1})))``
    (tightest near ``tuning`` observations, confseq's ``fixed_n``); ``v_t = (z_t -
    mu_{t-1})^2``, ``psi(l) = -log(1 - l) - l``. Bounds ``sum(l z) / sum(l) -+ (log(2/alpha)
    + sum v psi(l)) / sum(l)``. Unused sessions (``mask`` False) bet nothing.
    """
    m = mask.astype(float)
    t = np.cumsum(m, axis=-1)
    mu = (0.5 + np.cumsum(z * m, axis=-1)) / (t + 1.0)
    mu_prev = np.concatenate([np.full((*mu.shape[:-1], 1), 0.5), mu[..., :-1]], axis=-1)
    s2 = (0.25 + np.cumsum(m * (z - mu) ** 2, axis=-1)) / (t + 1.0)
    s2_prev = np.concatenate([np.full((*s2.shape[:-1], 1), 0.25), s2[..., :-1]], axis=-1)
    log2a = math.log(2.0 / alpha)
    lam = m * np.minimum(truncation, np.sqrt(2.0 * log2a / (tuning * s2_prev)))
    penalty = np.cumsum(m * (z - mu_prev) ** 2 * (-np.log1p(-lam) - lam), axis=-1)
    lam_sum = np.cumsum(lam, axis=-1)
    lam_z = np.cumsum(lam * z, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        centre = np.where(lam_sum > 0, lam_z / lam_sum, np.nan)
        margin = np.where(lam_sum > 0, (log2a + penalty) / lam_sum, np.inf)
    gain = lam_z - lam_sum * np.asarray(null, dtype=float)[..., None]
    log_k = np.maximum.accumulate(np.abs(gain) - penalty, axis=-1)
    p = np.minimum(1.0, 2.0 * np.exp(-log_k))
    low = np.maximum(centre - margin, 0.0)
    high = np.minimum(centre + margin, 1.0)
    return BernsteinPath(
        centre, np.where(np.isnan(low), 0.0, low), np.where(np.isnan(high), 1.0, high), p
    )


def beta_log_marginal(k: np.ndarray, n: np.ndarray, a: float, b: float) -> np.ndarray:
    """``log B(a + k, b + n - k) - log B(a, b)``: the mixture's marginal likelihood."""
    return special.betaln(a + k, b + n - k) - special.betaln(a, b)


def beta_log_mixture(
    k: np.ndarray, n: np.ndarray, p: np.ndarray, marginal: np.ndarray
) -> np.ndarray:
    """``log M_n(p) = marginal - k log p - (n - k) log(1 - p)`` for ``k`` successes in ``n``
    Bernoulli trials (``marginal`` from ``beta_log_marginal``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return marginal - special.xlogy(k, p) - special.xlogy(n - k, 1.0 - p)


def beta_concentration(tuning: float, alpha: float) -> float:
    """Prior Beta(c/2, c/2) with ``c = max(1, tuning / (2L + log(1 + 2L)))``, ``L =
    log(1/alpha)``: the normal mixture's best rho in units of ``p q`` (a Beta prior of
    concentration c is a normal mixture with ``rho = p q (c + 1)`` to first order)."""
    if tuning <= 0:
        raise ParameterError("tuning_sessions", tuning, "a number of sessions > 0")
    return max(1.0, best_rho(tuning, alpha))


def beta_mixture_bounds(
    k: ArrayLike, n: ArrayLike, alpha: float, c: float, iterations: int = 40
) -> tuple[np.ndarray, np.ndarray]:
    """``{p : log M_n(p) < log(1/alpha)}`` for prior Beta(c/2, c/2): an interval around
    ``k / n`` (``log M`` is convex in ``p``, at most 0 at the MLE); bisection on each side
    (40 halvings: to 1e-12). ``[0, 1]`` where ``n = 0``."""
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    marginal = beta_log_marginal(k, n, c / 2.0, c / 2.0)
    target = math.log(1.0 / alpha)
    mle = np.divide(k, n, out=np.full(k.shape, 0.5), where=n > 0)
    out = []
    for edge in (0.0, 1.0):
        inside, outside = mle.copy(), np.full(k.shape, edge)
        for _ in range(iterations):
            mid = (inside + outside) / 2.0
            ok = beta_log_mixture(k, n, mid, marginal) < target
            inside, outside = np.where(ok, mid, inside), np.where(ok, outside, mid)
        at_edge = beta_log_mixture(k, n, np.full(k.shape, edge), marginal) < target
        out.append(np.where(at_edge, edge, outside))
    return out[0], out[1]
