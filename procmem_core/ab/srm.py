"""Sample-ratio mismatch: is the withheld share what the explore rate says it should be?

The pack withholds with probability epsilon, so the withheld count of ``n`` sessions is
``Binomial(n, epsilon)``. A withheld share far from epsilon means the comparison is
broken (sessions lost from one arm, a logging bug, an arm defined differently from the
draw), and no lift estimate from it should be trusted (Fabijan et al. 2019, "Diagnosing
sample ratio mismatch in online controlled experiments", KDD). Experimentation platforms
flag at ``p < 0.001``: at 0.05, most alerts across many experiments would be false.

- ``srm_p_value``: the exact two-sided binomial test of the withheld count,
  ``min(1, 2 min(P(K <= k), P(K >= k)))`` (the central, "doubled tail" p-value).
- ``srm_p_value_rates``: the same doubled tail when the logged rate changed during the
  log: the withheld count is then Poisson-binomial (one Bernoulli per session at its
  rate), its law the convolution of one binomial per distinct rate, computed exactly. A
  normal approximation flags honest logs with few expected withheld sessions far above
  the nominal level (0.0053 at 1.6 expected, against 0.001).
- ``sequential_srm_p_value``: always valid under checks after every session. The
  Beta-binomial mixture ``BF_t = B(a + k_t, b + t - k_t) / B(a, b) / (eps^k_t (1 - eps)^(t - k_t))``
  with ``a = c eps``, ``b = c (1 - eps)`` is a nonnegative martingale with mean 1 under
  the null, so ``p_t = min(1, 1 / max_{s <= t} BF_s)`` is an always-valid p-value
  (Ville's inequality; Lindon and Malek 2022, "Anytime-valid inference for multinomial
  count data", NeurIPS, with two arms). The concentration ``c`` is tuned to the sessions
  where the test should be most sensitive (``tuning_sessions``), as the normal mixture's rho.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import special, stats

from procmem_core.ab.boundaries import best_rho
from procmem_core.errors import ParameterError, check_int, check_probability, is_number

SRM_ALPHA = 0.001
"""The conventional flag level of a sample-ratio mismatch."""


def _counts(withheld: ArrayLike, sessions: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    k, n = np.asarray(withheld, dtype=float), np.asarray(sessions, dtype=float)
    try:
        k, n = np.broadcast_arrays(k, n)
    except ValueError:
        raise ParameterError("withheld", k.shape, f"the shape of sessions {n.shape}") from None
    if not (np.isfinite(n) & (n >= 0) & (n == np.round(n))).all():
        raise ParameterError(
            "sessions",
            float(n[~(np.isfinite(n) & (n >= 0) & (n == np.round(n)))][0]),
            "a whole number of sessions >= 0",
        )
    if (k < 0).any() or (k > n).any() or (k != np.round(k)).any():
        raise ParameterError(
            "withheld", "counts outside [0, sessions]", "0 <= withheld <= sessions"
        )
    return k, n


def srm_p_value(withheld: ArrayLike, sessions: ArrayLike, explore_rate: float) -> np.ndarray:
    """Exact two-sided binomial p-value of ``withheld`` among ``sessions`` (NaN when 0)."""
    eps = check_probability("explore_rate", explore_rate, open_low=True, open_high=True)
    k, n = _counts(withheld, sessions)
    low = stats.binom.cdf(k, n, eps)
    high = stats.binom.sf(k - 1, n, eps)
    p = np.minimum(1.0, 2.0 * np.minimum(low, high))
    return np.where(n > 0, p, np.nan)


def srm_p_value_rates(withheld: int, rates: ArrayLike) -> float:
    """Exact two-sided p-value of ``withheld`` sessions among sessions logged at
    ``rates`` (one per session, each in [0, 1)): the doubled tail of the Poisson-binomial
    law, built as the product of one binomial per distinct rate (rates equal to 12
    digits are one), convolved pairwise; NaN with no session."""
    r = np.round(np.asarray(rates, dtype=float).ravel(), 12)
    if ((r < 0) | (r >= 1)).any():
        raise ParameterError("explore_rate", float(r[(r < 0) | (r >= 1)][0]), "a rate in [0, 1)")
    kf = float(withheld) if is_number(withheld) else math.nan
    if not (0 <= kf <= r.size and kf == round(kf)):  # NaN fails; 2.7 is no count
        raise ParameterError("withheld", withheld, f"a whole count in [0, {r.size}]")
    k = int(kf)
    if r.size == 0:
        return float("nan")
    law = _poisson_binomial(*np.unique(r, return_counts=True))
    return float(min(1.0, 2.0 * min(law[: k + 1].sum(), law[k:].sum())))


def _poisson_binomial(rates: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The law of a sum of ``Binomial(counts_j, rates_j)``: one padded row per binomial,
    convolved in pairs (sums of non-negative products: the tails keep their relative
    precision), many short rows at once, long ones one pair at a time."""
    laws = stats.binom.pmf(np.arange(counts.max() + 1)[None, :], counts[:, None], rates[:, None])
    while laws.shape[0] > 1:
        if laws.shape[0] % 2:
            laws = np.vstack([laws, np.eye(1, laws.shape[1])])  # the law of 0
        a, b = laws[0::2], laws[1::2]
        pairs, width = a.shape
        if pairs * width * width <= 1 << 20:  # out[p, i + j] += a[p, i] b[p, j], at once
            at = (np.arange(pairs)[:, None, None] * (2 * width - 1)
                  + np.arange(width)[None, :, None] + np.arange(width)[None, None, :])  # fmt: skip
            flat = np.bincount(at.ravel(), (a[:, :, None] * b[:, None, :]).ravel(),
                               pairs * (2 * width - 1))  # fmt: skip
            laws = flat.reshape(pairs, 2 * width - 1)
        else:
            laws = np.stack([np.convolve(x, y) for x, y in zip(a, b, strict=True)])
        laws = laws[:, : np.flatnonzero(laws.any(axis=0))[-1] + 1]  # padding's zeros
    return laws[0]


def srm_flagged(p: ArrayLike, alpha: float = SRM_ALPHA) -> np.ndarray:
    """True where the mismatch p-value is below ``alpha`` (NaN: not flagged)."""
    alpha = check_probability("srm_alpha", alpha, open_low=True, open_high=True)
    p = np.asarray(p, dtype=float)
    return np.where(np.isnan(p), False, p < alpha)


def srm_concentration(tuning_sessions: int, alpha: float = SRM_ALPHA) -> float:
    """``c`` with ``c + 1 = best_rho(tuning_sessions, alpha)`` (in units of
    ``eps (1 - eps)``; at least 1): a Beta prior of concentration ``c`` on the withheld
    share acts as a normal mixture with ``rho = eps (1 - eps) (c + 1)``."""
    check_int("tuning_sessions", tuning_sessions, minimum=1)
    return max(1.0, best_rho(tuning_sessions, alpha) - 1.0)


def sequential_srm_p_value(
    withheld: ArrayLike, explore_rate: float, tuning_sessions: int, alpha: float = SRM_ALPHA
) -> np.ndarray:
    """Always-valid SRM p-value after each session: ``withheld`` is ``(R, n)`` (or a 1-D
    log) of 0/1 per session, in order; ``alpha`` is the level ``c`` is tuned for."""
    eps = check_probability("explore_rate", explore_rate, open_low=True, open_high=True)
    w = np.asarray(withheld)
    w = w[None, :] if w.ndim == 1 else w
    if w.ndim != 2 or not np.isin(w, (0, 1)).all():
        raise ParameterError("withheld", "not a 0/1 array", "0/1 per session, (R, n) or 1-D")
    c = srm_concentration(tuning_sessions, alpha)
    a, b = c * eps, c * (1.0 - eps)
    k = np.cumsum(w, axis=1, dtype=float)
    t = np.arange(1, w.shape[1] + 1, dtype=float)
    log_bf = (
        special.betaln(a + k, b + t - k)
        - special.betaln(a, b)
        - k * np.log(eps)
        - (t - k) * np.log1p(-eps)
    )
    return np.minimum(1.0, np.exp(-np.maximum.accumulate(log_bf, axis=1)))
