"""The two-sample gate's statistic on the lattice: ``drop_statistics`` (``lambda``,
the accept statistic; the formula is in ``gates.two_sample``'s docstring, after Whitehead
1997, ch. 3) and ``step_statistics``, one lattice step's statistics, computed once and kept for
every gate on the same lattice (the design search builds many)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

REF_VARIANCE = 0.25
"""``pbar (1 - pbar)`` at its largest: the accept statistic's variance."""


def drop_statistics(
    k: ArrayLike, a: ArrayLike, b: ArrayLike, n: ArrayLike, drop: float,
    shrink: float | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """``(lambda, accept statistic, valid)`` (0 where ``k = 0`` or ``n = 0``: no comparison
    yet). The accept statistic is ``lambda`` with the variance ``v``: 1/4 (``shrink=None``,
    ``lambda_ref``) or ``pc (1 - pc)``, ``pc = (a + B + c)/(n + k + 2c)`` with ``c = shrink``
    pseudo-runs at 1/2 (``c = 1`` is ``lambda`` itself; larger ``c`` trusts a rate near 0 or
    1 only once many runs show it)."""
    k, a, b, n = (np.asarray(x, dtype=float) for x in (k, a, b, n))
    valid = (k > 0) & (n > 0)
    kk, nn = np.maximum(k, 1.0), np.maximum(n, 1.0)
    centred = drop * (b / nn - a / kk - drop / 2.0)
    inv = 1.0 / nn + 1.0 / kk
    pbar = (a + b + 1.0) / (nn + kk + 2.0)
    lam = np.where(valid, centred / (pbar * (1.0 - pbar) * inv), 0.0)
    if shrink is None:
        var = REF_VARIANCE
    else:
        pc = (a + b + shrink) / (nn + kk + 2.0 * shrink)
        var = pc * (1.0 - pc)
    ref = np.where(valid, centred / (var * inv), 0.0)
    return lam, ref, valid


STATISTICS_CELLS = 6_000_000
"""Most cells (over every step) of one lattice whose statistics are kept for reuse: the
concurrent lattice of a 100-run ledger at 200 pairs (4.8 million cells, 77 MB) fits."""


@lru_cache(maxsize=4)
def _lattice_statistics(ledger: int, concurrent: bool, drop: float, shrink: float | None) -> dict:
    return {}


def step_statistics(
    ledger: int, concurrent: bool, k: int, drop: float, shrink: float | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``drop_statistics`` on every cell of step ``k`` of a lattice (``a`` a column, ``B``
    a row), kept for the lattice's other gates while the lattice is small enough."""
    shrink = None if shrink is None else float(shrink)
    cache = _lattice_statistics(int(ledger), bool(concurrent), float(drop), shrink)
    if k in cache:
        return cache[k]
    n = int(ledger) + (k if concurrent else 0)
    a, b = np.arange(k + 1)[:, None], np.arange(n + 1)[None, :]
    stats = drop_statistics(k, a, b, n, drop, shrink)
    size = (k + 1) * (n + 1)
    if cache.get("cells", 0) + size <= STATISTICS_CELLS:
        for x in stats:
            x.setflags(write=False)
        cache[k], cache["cells"] = stats, cache.get("cells", 0) + size
    return stats
