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
    parts = _parts(k, a, b, n, drop)
    return _lambda(parts), _accept_statistic(parts, shrink), parts[0]


def _parts(k, a, b, n, drop: float) -> tuple:
    """What both statistics share: ``(valid, k, n, a + B, centred, 1/n + 1/k)``."""
    k, a, b, n = (np.asarray(x, dtype=float) for x in (k, a, b, n))
    valid, kk, nn, centred, inv = _centred(k, a, b, n, drop)
    return valid, kk, nn, a + b, centred, inv


def _centred(k, a, b, n, drop: float) -> tuple:
    """``(valid, k, n, centred, 1/n + 1/k)`` from float arrays: the observed drop centred,
    ``drop (B/n - a/k - drop/2)``, with ``k, n`` at least 1."""
    valid = (k > 0) & (n > 0)
    kk, nn = np.maximum(k, 1.0), np.maximum(n, 1.0)
    centred = drop * (b / nn - a / kk - drop / 2.0)
    return valid, kk, nn, centred, 1.0 / nn + 1.0 / kk


def _valid_only(valid: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``np.where(valid, value, 0.0)``; a valid scalar (one lattice step) keeps ``value``
    itself, the same numbers without the copy."""
    if valid.ndim == 0 and valid and np.ndim(value) > 0:
        return value
    return np.where(valid, value, 0.0)


def _lambda(parts: tuple) -> np.ndarray:
    valid, kk, nn, total, centred, inv = parts
    return _valid_only(valid, centred / _lambda_scale(total, kk, nn, inv))


def _accept_statistic(parts: tuple, shrink: float | None) -> np.ndarray:
    valid, kk, nn, total, centred, inv = parts
    return _valid_only(valid, centred / _accept_scale(total, kk, nn, inv, shrink))


def _lambda_scale(total, kk, nn, inv):
    """``lambda``'s denominator ``pbar (1 - pbar) (1/n + 1/k)``, ``pbar = (S + 1)/(n + k
    + 2)`` with ``S = a + B`` the total successes."""
    pbar = (total + 1.0) / (nn + kk + 2.0)
    return pbar * (1.0 - pbar) * inv


def _accept_scale(total, kk, nn, inv, shrink: float | None):
    """The accept statistic's denominator ``v (1/n + 1/k)`` (``drop_statistics``)."""
    if shrink is None:
        return REF_VARIANCE * inv
    pc = (total + shrink) / (nn + kk + 2.0 * shrink)
    return pc * (1.0 - pc) * inv


def _step_statistics(k: int, n: int, drop: float, shrink: float | None, known) -> tuple:
    """``drop_statistics`` on a step's cells with ``k, n >= 1`` (every cell valid), each
    value by the same operations: the denominators depend on the cell only through its
    total successes ``S = a + B``, so they are computed once per ``S`` (the same values)
    and gathered. ``known``: the step's ``(lambda, valid)`` if kept already."""
    a, b = np.arange(k + 1, dtype=float)[:, None], np.arange(n + 1, dtype=float)[None, :]
    valid, kk, nn, centred, inv = _centred(np.asarray(float(k)), a, b, np.asarray(float(n)), drop)
    total = np.arange(k + n + 1, dtype=float)  # every S = a + B, exactly
    at = np.add.outer(np.arange(k + 1), np.arange(n + 1))  # S of each cell
    lam = centred / _lambda_scale(total, kk, nn, inv).take(at) if known is None else known[0]
    scale = _accept_scale(total, kk, nn, inv, shrink)  # one value when it is 1/4 (1/n + 1/k)
    ref = centred / (scale if shrink is None else scale.take(at))
    return lam, ref, valid


STATISTICS_CELLS = 6_000_000
"""Most cells (over every step) of one lattice whose statistics are kept for reuse: the
concurrent lattice of a 100-run ledger at 200 pairs (4.8 million cells, 77 MB) fits."""


@lru_cache(maxsize=4)
def _lattice_statistics(ledger: int, concurrent: bool, drop: float) -> dict:
    """Per step ``k``: ``(lambda, valid)``, and per ``shrink`` the accept statistic
    (``lambda`` does not depend on it: gates with another accept statistic share it)."""
    return {}


def step_statistics(
    ledger: int, concurrent: bool, k: int, drop: float, shrink: float | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``drop_statistics`` on every cell of step ``k`` of a lattice (``a`` a column, ``B``
    a row), kept for the lattice's other gates while the lattice is small enough."""
    shrink = None if shrink is None else float(shrink)
    cache = _lattice_statistics(int(ledger), bool(concurrent), float(drop))
    if (k, shrink) in cache:
        return cache[(k, shrink)]
    n = int(ledger) + (k if concurrent else 0)
    a, b = np.arange(k + 1)[:, None], np.arange(n + 1)[None, :]
    if k == 0 or n == 0:  # no comparison yet: every cell invalid
        parts = _parts(k, a, b, n, drop)
        lam, valid = cache[k] if k in cache else (_lambda(parts), parts[0])
        stats = lam, _accept_statistic(parts, shrink), valid
    else:
        stats = _step_statistics(k, n, drop, shrink, cache.get(k))
    size = (k + 1) * (n + 1)
    kept = cache.get(("cells", shrink), 0)
    if kept + size <= STATISTICS_CELLS:  # per accept statistic, as when none was shared
        for x in stats:
            x.setflags(write=False)
        cache[k], cache[(k, shrink)] = (stats[0], stats[2]), stats
        cache[("cells", shrink)] = kept + size
    return stats


def accept_floor(
    ledger: int, concurrent: bool, k: int, drop: float, shrink: float | None = None
) -> float:
    """The least accept statistic on step ``k``'s cells (``step_statistics``), kept with
    them: an accept boundary below it accepts no cell of the step."""
    shrink = None if shrink is None else float(shrink)
    cache = _lattice_statistics(int(ledger), bool(concurrent), float(drop))
    key = ("floor", k, shrink)
    if key not in cache:
        ref = step_statistics(ledger, concurrent, k, drop, shrink)[1]
        cache[key] = float(ref.min())
    return cache[key]
