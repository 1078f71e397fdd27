"""Many procedures at once: adjusted p-values for a family of comparisons.

A deployment compares every procedure its packs withhold; reading each at level 0.05
finds an "effect" somewhere by chance alone far more often than 0.05. Two adjustments,
along the last axis (one family per row), NaN entries (no comparison) left out of the
family and returned as NaN:

- ``holm``: Holm's step-down (Holm 1979), family-wise error <= alpha under any
  dependence: ``adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))``.
- ``benjamini_hochberg``: the step-up of Benjamini and Hochberg (1995), false discovery
  rate <= alpha for independent (or positively dependent) p-values:
  ``adj_(i) = min_{j >= i} min(1, m p_(j) / j)``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.errors import ParameterError


def _sorted(p: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(p as 2-D, order, sorted p with NaN last, family sizes m)``."""
    a = np.asarray(p, dtype=float)
    if a.ndim == 0:
        a = a[None]
    rows = a.reshape(-1, a.shape[-1])
    finite = rows[~np.isnan(rows)]
    if ((finite < 0) | (finite > 1)).any():
        raise ParameterError(
            "p", float(finite[(finite < 0) | (finite > 1)][0]), "p-values in [0, 1]"
        )
    order = np.argsort(np.where(np.isnan(rows), np.inf, rows), axis=1, kind="stable")
    ps = np.take_along_axis(rows, order, axis=1)
    m = (~np.isnan(rows)).sum(axis=1, keepdims=True)
    return a, order, ps, m


def _unsort(a: np.ndarray, order: np.ndarray, adj: np.ndarray) -> np.ndarray:
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=1)
    return out.reshape(a.shape)


def holm(p: ArrayLike) -> np.ndarray:
    """Holm-adjusted p-values (family-wise error), one family per row of ``p``."""
    if np.size(p) == 0:  # no comparison (a log where no procedure matched): none to adjust
        return np.asarray(p, dtype=float).copy()
    a, order, ps, m = _sorted(p)
    j = np.arange(1, ps.shape[1] + 1)[None, :]
    scaled = np.minimum(1.0, (m - j + 1) * ps)
    adj = np.fmax.accumulate(np.where(np.isnan(ps), -np.inf, scaled), axis=1)
    adj = np.where(np.isnan(ps), np.nan, adj)
    return _unsort(a, order, adj)


def benjamini_hochberg(p: ArrayLike) -> np.ndarray:
    """Benjamini-Hochberg-adjusted p-values (false discovery rate), one family per row."""
    if np.size(p) == 0:
        return np.asarray(p, dtype=float).copy()
    a, order, ps, m = _sorted(p)
    j = np.arange(1, ps.shape[1] + 1)[None, :]
    scaled = np.where(np.isnan(ps), np.inf, np.minimum(1.0, m * ps / j))
    adj = np.flip(np.minimum.accumulate(np.flip(scaled, axis=1), axis=1), axis=1)
    adj = np.where(np.isnan(ps), np.nan, adj)
    return _unsort(a, order, adj)


ADJUSTMENTS = {"holm": holm, "bh": benjamini_hochberg}
"""Adjustment name -> function; "holm" controls family-wise error, "bh" false discoveries."""
GUARANTEES = {"holm": "family-wise error", "bh": "false discovery rate"}
