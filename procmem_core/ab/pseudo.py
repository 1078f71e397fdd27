"""Pseudo-outcomes of withheld-vs-shown sessions: one number per session whose mean given
the past is the lift, because the propensity is known (the pack drew it).

- IPW (Horvitz and Thompson 1952): ``psi = A Y / e - (1 - A) Y / (1 - e)``.
- AIPW (Robins, Rotnitzky and Zhao 1994) with a *predictable* outcome model:
  ``psi = m1 - m0 + A (Y - m1) / e - (1 - A) (Y - m0) / (1 - e)``, where ``m_a`` is a line
  in the covariate ``x`` fitted on the earlier sessions of arm ``a`` only, clipped to
  [0, 1]. Because ``m_a`` is fixed before session ``t`` and ``A_t`` is drawn with the known
  ``e_t``, ``E[psi_t | past] = lift`` whatever the model, so the running sum of
  ``psi - lift`` is a martingale: what a confidence sequence needs (Waudby-Smith, Wu,
  Ramdas, Karampatziakis and Mineiro 2024, "Anytime-valid off-policy inference for
  contextual bandits", ACM/IMS Journal of Data Science).

Both are bounded for outcomes in [0, 1]: ``psi_ipw`` in ``[-1/(1 - e), 1/e]`` and
``psi_aipw`` in ``[-1/min(e, 1 - e), 1/min(e, 1 - e)]`` (each arm's term is at most
``1/e_a`` in size and the model term shares its sign range), which the bounded-outcome
boundaries use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_FIT = 3
"""Earlier sessions of an arm before its outcome model uses a slope (else its mean)."""


@dataclass(frozen=True)
class PseudoOutcomes:
    """``psi`` (0 where ``mask`` is False) and the bounds every session's value lies in."""

    psi: np.ndarray
    low: float
    high: float


def _exclusive_cumsum(a: np.ndarray) -> np.ndarray:
    return np.cumsum(a, axis=1) - a


def predictable_line(y: np.ndarray, x: np.ndarray, arm: np.ndarray) -> np.ndarray:
    """At each session, ``mean_y + slope (x - mean_x)`` from the arm's earlier sessions,
    clipped to [0, 1]. The mean is ``(sum y + 1/2) / (n + 1)`` (1/2 with no data); the
    least-squares slope is used from ``MIN_FIT`` sessions on where ``x`` varies."""
    w = arm.astype(float)
    n = _exclusive_cumsum(w)
    sx, sy = _exclusive_cumsum(w * x), _exclusive_cumsum(w * y)
    sxx, sxy = _exclusive_cumsum(w * x * x), _exclusive_cumsum(w * x * y)
    with np.errstate(divide="ignore", invalid="ignore"):
        mx = np.where(n > 0, sx / n, 0.0)
        cxx = sxx - n * mx * mx
        cxy = sxy - mx * sy
        use = (n >= MIN_FIT) & (cxx > 1e-9 * np.maximum(n, 1.0))
        slope = np.where(use, cxy / np.where(use, cxx, 1.0), 0.0)
    mean = (sy + 0.5) / (n + 1.0)
    return np.clip(mean + slope * (x - mx), 0.0, 1.0)


def ipw_pseudo_outcomes(
    y: np.ndarray, shown: np.ndarray, mask: np.ndarray, propensity: np.ndarray | float
) -> PseudoOutcomes:
    """``A Y / e - (1 - A) Y / (1 - e)`` on the usable sessions."""
    e = np.broadcast_to(propensity, y.shape)
    psi = np.where(mask, np.where(shown, y / e, -y / (1.0 - e)), 0.0)
    return PseudoOutcomes(psi, -1.0 / float(np.min(1.0 - e)), 1.0 / float(np.min(e)))


def aipw_pseudo_outcomes(
    y: np.ndarray,
    shown: np.ndarray,
    x: np.ndarray,
    mask: np.ndarray,
    propensity: np.ndarray | float,
) -> PseudoOutcomes:
    """The AIPW pseudo-outcome with the predictable line of each arm (module docstring)."""
    e = np.broadcast_to(propensity, y.shape)
    a1, a0 = shown & mask, ~shown & mask
    m1 = predictable_line(y, x, a1)
    m0 = predictable_line(y, x, a0)
    psi = m1 - m0 + np.where(shown, (y - m1) / e, -(y - m0) / (1.0 - e))
    bound = 1.0 / float(np.min(np.minimum(e, 1.0 - e)))
    return PseudoOutcomes(np.where(mask, psi, 0.0), -bound, bound)
