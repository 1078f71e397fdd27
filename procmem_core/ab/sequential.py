"""Confidence sequences for the lift: intervals valid at every session at once.

A researcher who reads a fixed-n interval after every session and stops when it excludes
0 has a false-positive rate far above its level (docs/statistics.md, "Reading an
explore-rate experiment online"). A confidence sequence ``CS_t`` covers the lift at every
``t`` simultaneously with probability ``1 - alpha``, so it can be read after every
session and the experiment stopped at any time, for any reason (Howard et al. 2021).

Each class here is a ``LiftEstimator`` (its ``estimate`` is the sequence at the last
session, valid there as at any stopping time) with ``path``: the whole sequence, one
column per session, and its always-valid p-value. ``tuning_sessions`` (None: the number
of sessions) is where the boundary is tightest. Guarantees (docs/ab.md):

- ``cs_aipw``, ``cs_ipw``: the two-sided normal mixture on AIPW / IPW pseudo-outcomes with
  their running variance (the asymptotic confidence sequence of Waudby-Smith, Arbour,
  Sinha, Kennedy and Ramdas 2024, "Time-uniform central limit theory and asymptotic
  confidence sequences", Ann. Statist.): always valid as the sample grows.
  ``cs_aipw_linear``: the same with the two-point mixture, narrowest at the tuned size.
- ``cs_eb_aipw``, ``cs_eb_ipw``: the empirical-Bernstein sequence on the bounded
  pseudo-outcomes (Waudby-Smith and Ramdas 2023): valid in finite samples.
- ``cs_arms``: a Beta-mixture sequence for each arm's success rate at ``alpha / 2``,
  differenced (``[L1 - U0, U1 - L0]``): valid in finite samples for 0/1 outcomes and
  computable from the arms' counts alone.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.ab.base import (
    ALWAYS_VALID,
    ConfidencePath,
    Estimate,
    LiftEstimator,
    check_sessions,
    normal_z,
)
from procmem_core.ab.boundaries import (
    MixtureBoundary,
    NormalMixture,
    TwoPointMixture,
    beta_concentration,
    beta_log_marginal,
    beta_log_mixture,
    beta_mixture_bounds,
    empirical_bernstein_bounds,
)
from procmem_core.ab.pseudo import PseudoOutcomes, aipw_pseudo_outcomes, ipw_pseudo_outcomes
from procmem_core.errors import ParameterError, check_int


def design_sd(
    po: PseudoOutcomes, shown: np.ndarray, mask: np.ndarray, propensity: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Running count ``n_t``, sum ``S_t`` of ``psi`` and its design-based SD.

    ``E[psi^2] = E[e psi_1^2] + E[(1 - e) psi_0^2]`` (``psi_a``: the value had arm ``a``
    been drawn), each term estimated within its arm, self-normalized by the known
    propensities: ``(sum_{arm a} psi^2 + B^2) / (sum_{arm a} 1 / e_a + 1 / mean(e_a))``, one
    pseudo-session at the largest value the bounds allow (``B``). Normalizing by the
    design's shares rather than the shares drawn so far keeps the SD from shrinking
    exactly when a rare arm is under-drawn (the raw sample SD of IPW pseudo-outcomes
    does, and its sequence then misses 0.15 at 20 withheld sessions); the second moment
    is not centred, which overstates the variance by ``lift^2`` at most.
    """
    m = mask.astype(float)
    e = np.broadcast_to(np.asarray(propensity, dtype=float), po.psi.shape)
    b2 = max(po.low**2, po.high**2)
    var = np.zeros(po.psi.shape)
    for arm, share in ((shown & mask, e), (~shown & mask, 1.0 - e)):
        num = np.cumsum(po.psi**2 * arm, axis=1) + b2
        den = np.cumsum(arm / share, axis=1) + 1.0 / float(np.mean(share))
        var += num / den
    return np.cumsum(m, axis=1), np.cumsum(po.psi * m, axis=1), np.sqrt(var)


class SequentialLiftEstimator(LiftEstimator):
    """A confidence sequence for the lift (module docstring)."""

    guarantee: ClassVar[str] = ALWAYS_VALID
    fixed_counterpart: ClassVar[str | None] = "dim"
    traced: ClassVar[bool] = True
    """Whether ``monitor`` traces the whole sequence (False where that costs bisections
    at every session; ``path`` still does, on request)."""
    tuning_sessions: int | None

    def check_tuning(self) -> None:
        if self.tuning_sessions is not None:
            check_int("tuning_sessions", self.tuning_sessions, minimum=1)

    def tuning(self, sessions: int) -> float:
        """Sessions where the boundary is tightest: ``tuning_sessions``, else all of them."""
        return float(self.tuning_sessions if self.tuning_sessions is not None else sessions)

    def path(
        self,
        y: ArrayLike,
        shown: ArrayLike,
        x: ArrayLike,
        mask: ArrayLike,
        propensity: ArrayLike,
        level: float = 0.95,
    ) -> ConfidencePath:
        """The whole sequence, after checking every input."""
        normal_z(level)
        s = check_sessions(y, shown, x, mask, propensity, one_propensity=self.needs_one())
        return self.compute_path(s.y, s.shown, s.x, s.mask, s.propensity, level)

    def monitor(self, y, shown, x, mask, propensity, level=0.95) -> ConfidencePath | None:
        return self.path(y, shown, x, mask, propensity, level) if self.traced else None

    @abstractmethod
    def compute_path(
        self,
        y: np.ndarray,
        shown: np.ndarray,
        x: np.ndarray,
        mask: np.ndarray,
        propensity: np.ndarray | float,
        level: float,
    ) -> ConfidencePath:
        """The sequence on checked inputs."""

    def compute(self, y, shown, x, mask, propensity, level) -> Estimate:
        return self.compute_path(y, shown, x, mask, propensity, level).final()


Outcomes = Callable[..., PseudoOutcomes]


def _aipw(y, shown, x, mask, e) -> PseudoOutcomes:
    return aipw_pseudo_outcomes(y, shown, x, mask, e)


def _ipw(y, shown, x, mask, e) -> PseudoOutcomes:
    return ipw_pseudo_outcomes(y, shown, mask, e)


@dataclass(frozen=True)
class MixtureSequence(SequentialLiftEstimator):
    """Asymptotic CS: ``mean(psi) -+ sd_t b(t) / t`` (``sd_t`` from ``design_sd``), ``b``
    the mixture boundary in standardized time ``v = t`` tuned at ``v_opt = tuning`` (the
    Gaussian-mixture asymptotic CS of Waudby-Smith et al. 2024); p-value
    ``1 / max M(sum psi / sd_t, t)``."""

    tuning_sessions: int | None = None
    outcomes: ClassVar[Outcomes] = staticmethod(_aipw)
    boundary: ClassVar[type[MixtureBoundary]] = NormalMixture

    def __post_init__(self) -> None:
        self.check_tuning()

    def compute_path(self, y, shown, x, mask, propensity, level) -> ConfidencePath:
        po = self.outcomes(y, shown, x, mask, propensity)
        alpha = 1.0 - level
        n, s, sd = design_sd(po, shown, mask, propensity)
        mix = self.boundary(v_opt=self.tuning(y.shape[1]), alpha_opt=alpha)
        with np.errstate(divide="ignore", invalid="ignore"):
            centre = np.where(n > 0, s / n, np.nan)
            half = np.where(n > 0, sd * mix.bound(n, alpha) / n, np.inf)
            se = np.where(n > 0, sd / np.sqrt(n), np.nan)
        p = mix.p_value(s / sd, n)
        low = np.where(n > 0, centre - half, -np.inf)
        high = np.where(n > 0, centre + half, np.inf)
        return ConfidencePath(centre, se, low, high, p)


@dataclass(frozen=True)
class NormalMixtureAIPW(MixtureSequence):
    """Normal-mixture CS on AIPW pseudo-outcomes (predictable per-arm line in ``x``)."""

    name: ClassVar[str] = "cs_aipw"
    fixed_counterpart: ClassVar[str | None] = "aipw"


@dataclass(frozen=True)
class NormalMixtureIPW(MixtureSequence):
    """Normal-mixture CS on IPW (Horvitz-Thompson) pseudo-outcomes."""

    name: ClassVar[str] = "cs_ipw"
    fixed_counterpart: ClassVar[str | None] = "ipw_ht"
    outcomes: ClassVar[Outcomes] = staticmethod(_ipw)


@dataclass(frozen=True)
class TwoPointAIPW(MixtureSequence):
    """Two-point-mixture CS on AIPW pseudo-outcomes: narrowest at ``tuning_sessions``."""

    name: ClassVar[str] = "cs_aipw_linear"
    fixed_counterpart: ClassVar[str | None] = "aipw"
    boundary: ClassVar[type[MixtureBoundary]] = TwoPointMixture


@dataclass(frozen=True)
class BernsteinSequence(SequentialLiftEstimator):
    """Finite-sample CS: the pseudo-outcomes rescaled to [0, 1] by their bounds,
    ``z = (psi - lo) / (hi - lo)``, through ``empirical_bernstein_bounds`` and back."""

    tuning_sessions: int | None = None
    outcomes: ClassVar[Outcomes] = staticmethod(_aipw)

    def __post_init__(self) -> None:
        self.check_tuning()

    def compute_path(self, y, shown, x, mask, propensity, level) -> ConfidencePath:
        po = self.outcomes(y, shown, x, mask, propensity)
        width = po.high - po.low
        z = np.where(mask, (po.psi - po.low) / width, 0.0)
        eb = empirical_bernstein_bounds(
            z, mask, 1.0 - level, self.tuning(y.shape[1]), null=-po.low / width
        )
        n, _, sd = design_sd(po, shown, mask, propensity)
        with np.errstate(divide="ignore", invalid="ignore"):
            se = np.where(n > 0, sd / np.sqrt(n), np.nan)
        return ConfidencePath(
            po.low + width * eb.centre, se, po.low + width * eb.low, po.low + width * eb.high, eb.p
        )


@dataclass(frozen=True)
class BernsteinAIPW(BernsteinSequence):
    """Empirical-Bernstein CS on AIPW pseudo-outcomes."""

    name: ClassVar[str] = "cs_eb_aipw"
    fixed_counterpart: ClassVar[str | None] = "aipw"


@dataclass(frozen=True)
class BernsteinIPW(BernsteinSequence):
    """Empirical-Bernstein CS on IPW pseudo-outcomes."""

    name: ClassVar[str] = "cs_eb_ipw"
    fixed_counterpart: ClassVar[str | None] = "ipw_ht"
    outcomes: ClassVar[Outcomes] = staticmethod(_ipw)


@dataclass(frozen=True)
class BetaMixtureArms(SequentialLiftEstimator):
    """Per-arm Beta-mixture CS at ``alpha / 2`` each, differenced: ``[L1 - U0, U1 - L0]``.

    Each arm's rate has its own sequence in its own sample count, so the union bound
    gives ``P(exists t: lift outside) <= alpha`` for 0/1 outcomes, at any arm size. The
    prior of arm ``a`` is tuned to ``tuning`` times its expected share of sessions
    (``beta_concentration``). p-value: ``min(1, 2 exp(-min_p max(log M1(p), log M0(p))))``
    (the smallest alpha at which the two arms' sequences share no rate).
    """

    name: ClassVar[str] = "cs_arms"
    fixed_counterpart: ClassVar[str | None] = "dim"
    one_propensity: ClassVar[bool] = True
    traced: ClassVar[bool] = False
    tuning_sessions: int | None = None

    def __post_init__(self) -> None:
        self.check_tuning()

    def compute_path(self, y, shown, x, mask, propensity, level) -> ConfidencePath:
        if not np.isin(y[mask], (0.0, 1.0)).all():
            raise ParameterError("y", "values other than 0 and 1", "0/1 outcomes for cs_arms")
        a1, a0 = shown & mask, ~shown & mask
        counts = tuple(np.cumsum(a, axis=1) for a in (y * a1, a1, y * a0, a0))
        return self.bounds(*counts, float(np.mean(propensity)), y.shape[1], level)

    def compute(self, y, shown, x, mask, propensity, level) -> Estimate:
        if not np.isin(y[mask], (0.0, 1.0)).all():
            raise ParameterError("y", "values other than 0 and 1", "0/1 outcomes for cs_arms")
        a1, a0 = shown & mask, ~shown & mask
        counts = tuple(a.sum(axis=1, keepdims=True) for a in (y * a1, a1, y * a0, a0))
        return self.bounds(*counts, float(np.mean(propensity)), y.shape[1], level).final()

    def bounds(self, k1, n1, k0, n0, share: float, sessions: int, level: float) -> ConfidencePath:
        """The sequence from the arms' running counts (any shape; ``share`` = propensity)."""
        alpha = (1.0 - level) / 2.0
        c1 = beta_concentration(self.tuning(sessions) * share, alpha)
        c0 = beta_concentration(self.tuning(sessions) * (1.0 - share), alpha)
        k1, n1, k0, n0 = (np.asarray(a, dtype=float) for a in (k1, n1, k0, n0))
        l1, u1 = beta_mixture_bounds(k1, n1, alpha, c1)
        l0, u0 = beta_mixture_bounds(k0, n0, alpha, c0)
        p1 = np.divide(k1, n1, out=np.full(k1.shape, np.nan), where=n1 > 0)
        p0 = np.divide(k0, n0, out=np.full(k0.shape, np.nan), where=n0 > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            se = np.sqrt(p1 * (1 - p1) / n1 + p0 * (1 - p0) / n0)
        m = _min_max_log_mixture(k1, n1, c1, k0, n0, c0)
        p = np.minimum(1.0, 2.0 * np.exp(-m))
        return ConfidencePath(p1 - p0, se, l1 - u0, u1 - l0, p)


def _min_max_log_mixture(k1, n1, c1, k0, n0, c0, iterations: int = 48) -> np.ndarray:
    """``min_p max(log M1(p), log M0(p))`` by golden-section search (both are convex in p;
    48 steps shrink the bracket to 1e-10)."""
    g1 = beta_log_marginal(k1, n1, c1 / 2, c1 / 2)
    g0 = beta_log_marginal(k0, n0, c0 / 2, c0 / 2)

    def f(p: np.ndarray) -> np.ndarray:
        return np.maximum(beta_log_mixture(k1, n1, p, g1), beta_log_mixture(k0, n0, p, g0))

    ratio = (np.sqrt(5.0) - 1.0) / 2.0
    lo, hi = np.zeros(k1.shape), np.ones(k1.shape)
    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = f(a), f(b)
    for _ in range(iterations):
        left = fa <= fb  # the minimum lies in [lo, b]: b becomes the new upper end
        lo, hi = np.where(left, lo, a), np.where(left, b, hi)
        a_new = np.where(left, hi - ratio * (hi - lo), b)
        b_new = np.where(left, a, lo + ratio * (hi - lo))
        fresh = f(np.where(left, a_new, b_new))
        fa, fb = np.where(left, fresh, fb), np.where(left, fa, fresh)
        a, b = a_new, b_new
    return f((lo + hi) / 2.0)
