"""Exact operating characteristics of lattice gates along many p0 at once, ledger mixed in.

A lattice gate's verdict is a table over the revision's ``(runs n, successes s)`` for each
value of its p0 (``lattice.verdict_table``). When p0 is estimated from the prior's ledger
of ``n0`` runs with ``S ~ Binomial(n0, p0)`` successes, the gate uses table ``u = S`` and

    P(revert | p0) = sum_u Binomial(u; n0, p0) P_p(revert | table u),   p = max(0, p0 - drop),

where ``P_p(revert | table)`` is the forward recursion of ``lattice.lattice_absorption``
(``m_n(s) = p m_{n-1}(s-1) + (1-p) m_{n-1}(s)``, decided cells absorbed). ``mixture_pass``
runs that recursion for every table and every p0 at once, and also returns the mass still
undecided at the last run (what a cap rule decides): ``calibrate`` uses it to choose a
final boundary without re-running the recursion. ``diagonal_pass`` is the p0-known case
(table ``g`` goes with ``p0[g]``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
from scipy import special, stats

from procmem_core.gates.ratio import RATIO_TOP, ratio_powers
from procmem_core.gates.verdicts import ACCEPT_CODE, CONTINUE_CODE, REVERT_CODE

if TYPE_CHECKING:
    from procmem_core.gates.revert_limit import RevertLimit


@dataclass(frozen=True)
class LatticePass:
    """Result of one recursion: per grid point ``g`` the probability of each verdict, the
    expected stopping run (undecided mass counted at the last run) and ``residual[g, u, s]``,
    the probability of table ``u`` *and* of reaching the last run undecided with ``s``
    successes."""

    revert: np.ndarray
    accept: np.ndarray
    runs: np.ndarray
    residual: np.ndarray


def ledger_weights(p0: np.ndarray, prior_runs: int) -> np.ndarray:
    """``w[g, u] = Binomial(u; prior_runs, p0[g])``: the law of the ledger's successes."""
    u = np.arange(prior_runs + 1)
    return stats.binom.pmf(u[None, :], prior_runs, np.asarray(p0, float)[:, None])


def mixture_pass(tables: np.ndarray, p: np.ndarray, weights: np.ndarray) -> LatticePass:
    """The recursion for tables ``(U, T+1, T+1)`` (shared by every grid point), success
    probabilities ``p`` ``(G,)`` and table weights ``(G, U)`` (rows sum to 1)."""
    p = np.asarray(p, dtype=float)
    t = tables.shape[1] - 1
    mass = np.zeros((tables.shape[0], p.size, t + 1))
    mass[:, :, 0] = weights.T
    return _run(mass, tables[:, None, :, :], p[None, :, None], t)


def diagonal_pass(tables: np.ndarray, p: np.ndarray) -> LatticePass:
    """The recursion with table ``g`` at success probability ``p[g]`` (p0 known)."""
    p = np.asarray(p, dtype=float)
    t = tables.shape[1] - 1
    mass = np.zeros((1, p.size, t + 1))
    mass[0, :, 0] = 1.0
    return _run(mass, tables[None, :, :, :], p[None, :, None], t)


def _run(mass: np.ndarray, tables: np.ndarray, p: np.ndarray, t: int) -> LatticePass:
    """``mass[u, g, s]``; ``tables[u or 1, g or 1, n, s]``; ``p[1, g, 1]``."""
    shape = mass.shape[1]
    revert = np.zeros(shape)
    accept = np.zeros(shape)
    runs = np.zeros(shape)
    for n in range(1, t + 1):
        nxt = mass[:, :, : n + 1] * (1.0 - p)
        nxt[:, :, 1:] += mass[:, :, :n] * p
        row = tables[:, :, n, : n + 1]
        acc = row == ACCEPT_CODE
        rev = row == REVERT_CODE
        a = np.where(acc, nxt, 0.0).sum(axis=(0, 2))
        r = np.where(rev, nxt, 0.0).sum(axis=(0, 2))
        accept += a
        revert += r
        runs += n * (a + r)
        nxt[np.broadcast_to(acc | rev, nxt.shape)] = 0.0
        mass[:, :, : n + 1] = nxt
    residual = mass.transpose(1, 0, 2)
    runs += t * residual.sum(axis=(1, 2))
    return LatticePass(revert, accept, runs, residual)


@dataclass(frozen=True)
class LedgerMasses:
    """The recursion of a ledger mixture run once, at ``p0 = p = 1/2``.

    A path through table ``u`` (the ledger's successes) to ``s`` successes in ``n``
    revision runs has probability ``C(n0, u) p0^u (1-p0)^(n0-u) x (paths) p^s (1-p)^(n-s)``,
    so its mass at any ``(p0, p)`` is its mass at 1/2 times
    ``(2 p0)^u (2 (1-p0))^(n0-u) (2p)^s (2 (1-p))^(n-s)``; under no change (``p = p0``)
    that depends on the total ``S = u + s`` only. ``revert[n]``/``accept[n]``: the cells
    ``(u, s, mass)`` decided at run ``n`` (few: they lie on the boundaries);
    ``residual[u, s]`` what is left undecided at the last run.
    """

    prior_runs: int
    revert: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    accept: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    residual: np.ndarray


@dataclass(frozen=True)
class Steps(Sequence):
    """A lattice's per-step tables computed when read: ``step(k)`` for ``k < size``."""

    step: Callable[[int], np.ndarray]
    size: int

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, k):  # type: ignore[override]
        if not isinstance(k, int | np.integer) or not 0 <= k < self.size:
            raise IndexError(k)
        return self.step(int(k))


@dataclass(frozen=True)
class RevertSteps(Steps):
    """``Steps`` that can also give a step's decided cells holding mass without its table,
    where only the revert boundary decides there: ``reverted(k, mass)`` is ``(row, column)``
    of those cells, row-major (the cells ``masked_cells(mass, table != CONTINUE_CODE)``
    finds, every one a revert), or None (then the table is read)."""

    reverted: Callable[[int, np.ndarray], tuple[np.ndarray, np.ndarray] | None] = lambda k, m: None


def sparse_cells(m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(row, column, value)`` of the nonzero cells of ``m``."""
    i, j = np.nonzero(m)
    return i, j, m[i, j]


def ledger_masses(
    tables: np.ndarray | Steps, prior_runs: int, limit: RevertLimit | None = None
) -> LedgerMasses | None:
    """``LedgerMasses`` of tables ``(prior_runs + 1, T+1, T+1)`` (one per ledger count),
    or of ``Steps`` giving run ``n``'s rows ``(prior_runs + 1, n + 1)`` when read. With
    ``limit``: None as soon as the reverts so far pass it (``revert_limit``)."""
    lazy = isinstance(tables, Steps)
    t = len(tables) - 1 if lazy else tables.shape[1] - 1
    # two buffers in turn: run n's masses from run n - 1's (a fresh array a run cost more
    # than the arithmetic). Up to ``UNSCALED_TOP`` outcomes they are kept unscaled, times
    # 2^n, and ``scale`` = 2^-n turns them into the masses at 1/2: the values of halving
    # each term, as scaling by a power of 2 is exact without overflow (unscaled masses are
    # at most 2^n) or underflow (masses at 1/2 stay above 2^-(prior_runs + n))
    halve_each = prior_runs + t > UNSCALED_TOP
    buffer, spare = np.empty((prior_runs + 1, t + 1)), np.empty((prior_runs + 1, t + 1))
    mass, scale = buffer[:, :1], 1.0
    mass[:, 0] = half_pmf(prior_runs)
    empty = sparse_cells(np.zeros((1, 1)))
    revert, accept = [empty], [empty]
    for n in range(1, t + 1):
        nxt = spare[:, : n + 1]
        nxt[:, 0], nxt[:, n] = mass[:, 0], mass[:, n - 1]
        np.add(mass[:, 1:], mass[:, :-1], out=nxt[:, 1:n])
        if halve_each:
            nxt *= 0.5
        else:
            scale *= 0.5
        row = tables[n] if lazy else tables[:, n, : n + 1]
        i, j, m = masked_cells(nxt, row != CONTINUE_CODE)  # codes are 0, 1 or 2
        m *= scale
        code = row[i, j]  # row-major, so each part below is in masked_cells' order
        for out, which in ((revert, REVERT_CODE), (accept, ACCEPT_CODE)):
            hit = code == which
            out.append((i[hit], j[hit], m[hit]))
        if limit is not None and limit.add(revert[-1][0] + revert[-1][1], revert[-1][2],
                                           prior_runs + n):  # fmt: skip
            return None
        nxt[i, j] = 0.0  # the decided cells holding mass: the others are 0 already
        mass, buffer, spare = nxt, spare, buffer
    if limit is not None and limit.finish():
        return None
    return LedgerMasses(prior_runs, revert, accept, mass * scale)


UNSCALED_TOP = 1000
"""Most outcomes (ledger and runs) for which ``ledger_masses`` keeps its masses unscaled."""


@lru_cache(maxsize=64)
def half_pmf(runs: int) -> np.ndarray:
    """``Bin(runs, 1/2)``'s pmf at ``0..runs``, the ledger's masses at 1/2 every recursion
    starts from (computed once per size: scipy's pmf costs more than a recursion's step;
    read-only, shared)."""
    out = stats.binom.pmf(np.arange(runs + 1), runs, 0.5)
    out.setflags(write=False)
    return out


def powers(p: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:
    """``((2p)^j, (2(1-p))^j)`` for ``j = 0..top``, each ``(G, top + 1)`` (``0^0 = 1``)."""
    q = np.asarray(p, dtype=float)[:, None]
    j = np.arange(top + 1)[None, :]
    return (
        np.exp(special.xlogy(j, 2.0 * q)),
        np.exp(special.xlogy(j, 2.0 * (1.0 - q))),
    )


def reweight(up: np.ndarray, down: np.ndarray, total: int) -> np.ndarray:
    """``(2p)^S (2(1-p))^(total - S)`` for ``S = 0..total`` from ``powers``."""
    return up[:, : total + 1] * down[:, total::-1]


GATHER_BLOCK = 64
GATHER_ROWS = 16
"""Cells (rows) per block in ``gathered``: a block's gathers stay in cache."""


def gathered(
    up: np.ndarray, i: np.ndarray, down: np.ndarray, j: np.ndarray, order: str = "F"
) -> np.ndarray:
    """``up[:, i] * down[:, j]``, each cell the same product, built a block at a time so
    the gathers stay in cache. ``order="F"``: the column-major layout numpy gives that
    expression (so the matrix products that follow sum in the same order), from row
    gathers of the transposed factors; ``"C"``: row-major, for sums along a row."""
    i, j = np.asarray(i).ravel(), np.asarray(j).ravel()
    if order == "C":
        out = np.empty((up.shape[0], i.size))
        for lo in range(0, up.shape[0], GATHER_ROWS):
            rows = slice(lo, lo + GATHER_ROWS)
            np.multiply(up[rows].take(i, axis=1), down[rows].take(j, axis=1), out=out[rows])
        return out
    up_t, down_t = np.ascontiguousarray(up.T), np.ascontiguousarray(down.T)
    out = np.empty((i.size, up.shape[0]))
    for lo in range(0, i.size, GATHER_BLOCK):
        cells = slice(lo, lo + GATHER_BLOCK)
        np.multiply(up_t.take(i[cells], axis=0), down_t.take(j[cells], axis=0), out=out[cells])
    return out.T


def transposed(up: np.ndarray, down: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``powers`` transposed, row ``j`` the j-th powers of every p: for ``weights``."""
    return np.ascontiguousarray(up.T), np.ascontiguousarray(down.T)


def weights(factors: tuple[np.ndarray, np.ndarray], s: np.ndarray, total: int) -> np.ndarray:
    """``reweight(up, down, total)[:, s]`` from ``transposed(up, down)``: the same values in
    the same (column-major) layout, gathering rows of ``len(s)`` cells, not whole rows."""
    up_t, down_t = factors
    return (up_t[s] * down_t[total - s]).T


def masked_cells(m: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``sparse_cells(np.where(mask, m, 0))`` without the intermediate array."""
    flat = np.flatnonzero(mask & (m != 0))  # a flat index is found faster than a 2-D one
    i, j = np.divmod(flat, m.shape[1])
    return i, j, m[i, j]


def _null_tables(masses: LedgerMasses) -> dict[str, np.ndarray]:
    """The decided masses by run ``n`` (row) and total successes ``S = u + s`` (``"S"``),
    the same by failures ``n0 + n - S`` (``"F"``), rows ``[revert_n, accept_n]``, and the
    outcomes ``"N" = n0 + n``: under no change all a cell's weight depends on (cached)."""
    if "_null" not in masses.__dict__:
        steps, n0 = len(masses.revert), masses.prior_runs
        n = n0 + np.arange(steps)
        cells = (*masses.revert, *masses.accept)
        total, mass = [u + s for u, s, _ in cells], [m for _, _, m in cells]
        failures = [outcomes - t for outcomes, t in zip(np.tile(n, 2), total, strict=True)]
        by_s, by_f = (by_row(x, mass, n[-1] + 1) for x in (total, failures))
        masses.__dict__["_null"] = {"S": by_s, "F": by_f, "N": n}
    return masses.__dict__["_null"]


def by_row(index: Sequence[np.ndarray], mass: Sequence[np.ndarray], width: int) -> np.ndarray:
    """``out[r, x]`` = the sum of ``mass[r]`` over its cells with ``index[r] == x``, shape
    ``(len(mass), width)``: one ``np.bincount`` for every row, which adds each bin's cells
    in their order from 0.0, as ``np.add.at`` row by row does (the same values, bit for
    bit; 400 calls of ``np.add.at`` a recursion cost more than the sums)."""
    rows = np.repeat(np.arange(len(mass)), [m.size for m in mass])
    flat = rows * width + np.concatenate([np.asarray(x, dtype=np.int64) for x in index])
    out = np.bincount(flat, weights=np.concatenate(mass), minlength=len(mass) * width)
    return out.reshape(len(mass), width)


def by_total(tables: dict[str, np.ndarray], p: np.ndarray) -> np.ndarray:
    """``out[g, row]`` = the decided mass of row ``row`` of ``tables`` at ``p0 = p = p[g]``,
    from masses at 1/2 by total successes ``S`` (``"S"``) and failures (``"F"``) of ``"N"``
    outcomes per row (rows ``[revert steps, accept steps]``): a cell weighs ``(2c)^N r^S``
    or ``(2c)^N r^(N-S)`` (``ratio_powers``), so every step is one matrix product."""
    low, log_c, ratio = ratio_powers(p, int(tables["N"].max()))
    out = np.zeros((p.size, tables["S"].shape[0]))
    for part, key in ((low, "S"), (~low, "F")):
        if part.any():
            scale = np.exp(tables["N"][None, :] * log_c[part, None])
            out[part] = (ratio[part] @ tables[key].T) * np.tile(scale, 2)
    return out


def _steps(masses: LedgerMasses, f0: tuple, f1: tuple, null: bool) -> tuple:
    """``(revert, accept, E[runs] before the cap)`` run by run (``ledger_curve``)."""
    n0, t = masses.prior_runs, len(masses.revert) - 1
    revert, accept, runs = (np.zeros(f0[0].shape[1]) for _ in range(3))
    # the ledger's factor per count u, once: the rows ``weights(f0, u, n0)`` gathers
    ledger = f0[0][: n0 + 1] * f0[1][n0::-1]
    for n in range(1, t + 1):
        if null:
            r, a = (weights(f0, u + s, n0 + n) @ m for u, s, m in (masses.revert[n],
                                                                   masses.accept[n]))  # fmt: skip
        else:
            r, a = ((ledger[u].T * weights(f1, s, n)) @ m
                    for u, s, m in (masses.revert[n], masses.accept[n]))  # fmt: skip
        revert, accept, runs = revert + r, accept + a, runs + n * (r + a)
    return revert, accept, runs


def ledger_curve(masses: LedgerMasses, p0: np.ndarray, p: np.ndarray) -> LatticePass:
    """P(revert), P(accept) and E[runs] at each ``(p0[g], p[g])`` from ``LedgerMasses``
    (``residual`` of the result is empty: the cap cells' masses are in ``masses``)."""
    n0, t = masses.prior_runs, len(masses.revert) - 1
    p0, p = np.asarray(p0, dtype=float).ravel(), np.asarray(p, dtype=float).ravel()
    null = np.array_equal(p0, p)
    up, down = powers(p0, n0 + t)
    up1, down1 = (up, down) if null else powers(p, t)
    f0 = transposed(up, down)
    f1 = f0 if null else transposed(up1, down1)
    if null and n0 + t <= RATIO_TOP:  # every run at once (``by_total``)
        per = by_total(_null_tables(masses), p0)
        revert, accept = per[:, : t + 1].sum(axis=1), per[:, t + 1 :].sum(axis=1)
        runs = (per[:, : t + 1] + per[:, t + 1 :]) @ np.arange(t + 1)
    else:
        revert, accept, runs = _steps(masses, f0, f1, null)
    u, s, m = sparse_cells(masses.residual)
    cap = weights(f0, u + s, n0 + t) if null else weights(f0, u, n0) * weights(f1, s, t)
    left = cap @ m
    runs += t * left
    return LatticePass(revert, accept, runs, np.zeros((p0.size, 0, 0)))
