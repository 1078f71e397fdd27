"""Estimates of a success rate from ``(successes, runs)`` counts, each formula once.

- ``smoothed_rate``: Laplace's rule of succession ``(s + 1) / (n + 2)``: never 0 or 1,
  1/2 with no runs. The matcher's utility term and the SPRT gate's plug-in p0 both use it.
- ``clopper_pearson_lower``: the exact one-sided lower confidence bound
  ``Beta^-1(alpha; s, n - s + 1)`` (Clopper and Pearson 1934), 0 when ``s = 0``.
- ``wilson_interval``: the Wilson score interval (Wilson 1927).

All take scalars or numpy arrays alike.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats


def smoothed_rate(successes: ArrayLike, runs: ArrayLike) -> np.ndarray:
    """Laplace-smoothed success rate ``(successes + 1) / (runs + 2)`` (0.5 with no runs).

    Two Python ints (one procedure's counts) skip numpy: the same float64 operations give
    the same value, returned as a numpy float64 as the array path returns for scalars."""
    if type(successes) is int and type(runs) is int:
        return np.float64(smoothed_rate_of(successes, runs))
    return (np.asarray(successes, dtype=float) + 1.0) / (np.asarray(runs, dtype=float) + 2.0)


def smoothed_rate_of(successes: int, runs: int) -> float:
    """``smoothed_rate`` of one procedure's counts (Python ints) as a Python float: the
    same float64 operations, without the numpy scalar (a match asks it once per pack)."""
    return (successes + 1.0) / (runs + 2.0)


def clopper_pearson_lower(successes: ArrayLike, runs: ArrayLike, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson lower bound at level ``alpha``: ``Beta^-1(alpha; s, n-s+1)``.

    ``P(p < bound) <= alpha`` for every p; the bound is 0 when ``s = 0``.
    """
    s = np.asarray(successes, dtype=float)
    n = np.asarray(runs, dtype=float)
    safe_s = np.where(s > 0, s, 1.0)
    return np.where(s > 0, stats.beta.ppf(alpha, safe_s, n - s + 1.0), 0.0)


def wilson_interval(successes: ArrayLike, n: ArrayLike, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a binomial proportion (Wilson 1927); NaN where n = 0.

    ``(p + z^2/2n) / (1 + z^2/n) -+ z / (1 + z^2/n) sqrt(p q / n + z^2 / 4n^2)``.
    """
    n = np.asarray(n, dtype=float)
    nn = np.where(n > 0, n, np.nan)
    p = np.asarray(successes, dtype=float) / nn
    shrink = 1.0 + z * z / nn
    centre = (p + z * z / (2 * nn)) / shrink
    half = z / shrink * np.sqrt(np.maximum(p * (1 - p), 0.0) / nn + z * z / (4 * nn * nn))
    return centre - half, centre + half
