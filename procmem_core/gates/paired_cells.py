"""The cell tables behind ``procmem_core.gates.paired``: a paired gate's decided cells
``(k, W, B)`` as sparse arrays, their probability masses and the operating curves summed
from them (the forward recursion's output, ``PairedGate.pair_masses``); split from
``paired`` to keep each module readable."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from procmem_core.gates.base import Recursions
from procmem_core.gates.verdicts import ACCEPT_CODE, CONTINUE_CODE, REVERT_CODE


def decided_pairs(codes: np.ndarray, held: np.ndarray) -> tuple[tuple, tuple, np.ndarray]:
    """Of one step's verdict codes: the revert and the accept cells that can hold mass
    (each ``(W, B)`` in row-major order: a cell ``held`` by the last step's undecided
    mass, or one step from one) and the mask of every decided cell."""
    reach = held.copy()
    reach[1:, :] |= held[:-1, :]
    reach[:, 1:] |= held[:, :-1]
    revert = np.nonzero((codes == REVERT_CODE) & reach)
    accept = np.nonzero((codes == ACCEPT_CODE) & reach)
    return revert, accept, codes != CONTINUE_CODE


def take_cells(m: np.ndarray, cells: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``sparse_cells`` of ``m`` restricted to ``cells``: the cells with nonzero mass, in order."""
    w, b = cells
    mass = m[w, b]
    keep = mass != 0
    return w[keep], b[keep], mass[keep]


def weighted_masses(masses: list[tuple], p0: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``out[g, k] = sum_{W,B} masses[k][W, B] (3 pc)^k (pw/pc)^W (pb/pc)^B`` in logs
    (row-scaled, so no power overflows); under no change (``pw = pb``) by ``W + B``.
    A boundary cell ``(W, B)`` is decided at many pairs ``k`` (the concordant pairs
    vary), so the weights are taken once per distinct cell and every pair's sum is one
    matrix product with the masses by (cell, pair) (``CellTable``)."""
    pw, pb = p0 * (1.0 - p), (1.0 - p0) * p
    pc = 1.0 - pw - pb
    if np.array_equal(p0, p):
        return _weighted_null(masses, pw, pc)
    out = np.zeros((p0.size, len(masses)))
    some = pc > 0  # pc = 0 (p0 = 1, p = 0 or p0 = 0, p = 1): every pair is discordant
    if some.any():
        out[some] = _weighted_off(masses, pw[some], pb[some], pc[some])
    if not some.all():
        out[~some] = _weighted_discordant(masses, pw[~some], pb[~some])
    return out


def _weighted_off(masses: list[tuple], pw: np.ndarray, pb: np.ndarray, pc: np.ndarray):
    """``weighted_masses`` off the null at ``pc > 0``: the weights in logs, one matrix
    product per row block (``CellTable``)."""
    table = cell_table(masses)
    cells = np.arange(table.size)[None, :]
    with np.errstate(divide="ignore"):
        lw = special.xlogy(cells, pw[:, None]) - special.xlogy(cells, pc[:, None])
        lb = special.xlogy(cells, pb[:, None]) - special.xlogy(cells, pc[:, None])
        lc = np.log(3.0 * pc)
    sw, sb = lw.max(axis=1, keepdims=True), lb.max(axis=1, keepdims=True)
    x, y = np.exp(lw - sw), np.exp(lb - sb)
    total = np.zeros((pw.size, len(masses)))  # a gate that accepts only at the cap: 1 column
    live = table.live if 4 * table.live.size <= len(masses) else slice(None)
    total[:, live] = (x[:, table.w] * y[:, table.b]) @ table.mass[:, live]
    steps = np.arange(len(masses))[None, :]
    with np.errstate(divide="ignore"):
        out = np.exp(np.log(total) + steps * lc[:, None] + sw + sb)
    out[:, 0] = 0.0
    return out


def _weighted_discordant(masses: list[tuple], pw: np.ndarray, pb: np.ndarray) -> np.ndarray:
    """``weighted_masses`` at ``pc = 0``: after ``k`` pairs only the cells with
    ``W + B = k`` hold mass, each weighed by ``(3 pw)^W (3 pb)^B`` (the factor
    ``(pw/pc)^W (pb/pc)^B (3 pc)^k`` of the other rows, which is 0 * inf here)."""
    out = np.zeros((pw.size, len(masses)))
    for k, (w, b, mass) in enumerate(masses):
        keep = w + b == k
        if k == 0 or not keep.any():
            continue
        w, b, mass = w[keep][None, :], b[keep][None, :], mass[keep][None, :]
        with np.errstate(divide="ignore"):
            log = special.xlogy(w, 3.0 * pw[:, None]) + special.xlogy(b, 3.0 * pb[:, None])
        out[:, k] = (mass * np.exp(log)).sum(axis=1)
    return out


@dataclass(frozen=True)
class CellTable:
    """The decided masses of ``pair_masses`` by distinct cell: ``mass[c, k]`` is the mass
    decided at pair ``k`` in cell ``(w[c], b[c])``; ``size``: the largest index plus one.
    Few cells (those on the boundaries: 81 of 7,748 cell-pairs for the discordant SPRT at
    200 pairs), so the weights of ``weighted_masses`` are taken per cell, not per cell and pair."""

    w: np.ndarray
    b: np.ndarray
    mass: np.ndarray
    size: int
    live: np.ndarray
    """The pairs at which some cell decides (every other column of ``mass`` is 0)."""

    @property
    def by_total(self) -> np.ndarray:
        """``[m, k]``: the mass decided at pair ``k`` in the cells with ``W + B = m``."""
        if "_by_total" not in self.__dict__:
            k = self.mass.shape[1]  # np.add.at's sums in its order (row by row), bit for bit
            flat = ((self.w + self.b)[:, None] * k + np.arange(k)[None, :]).ravel()
            out = np.bincount(flat, self.mass.ravel(), minlength=(2 * self.size - 1) * k)
            self.__dict__["_by_total"] = out.reshape(2 * self.size - 1, k)
        return self.__dict__["_by_total"]


CELL_TABLES = Recursions()


def cell_table(masses: list[tuple]) -> CellTable:
    """``CellTable`` of ``masses`` (remembered while ``masses`` is: keyed by identity)."""
    return CELL_TABLES.get(id(masses), lambda: _cell_table(masses))[1]


def _cell_table(masses: list[tuple]) -> tuple[list, CellTable]:
    size = self_size(masses)
    w = np.concatenate([m[0] for m in masses]).astype(np.int64)
    b = np.concatenate([m[1] for m in masses]).astype(np.int64)
    k = np.repeat(np.arange(len(masses)), [m[0].size for m in masses])
    cell, at = np.unique(w * size + b, return_inverse=True)
    table = np.zeros((cell.size, len(masses)))
    table[at.ravel(), k] = np.concatenate([m[2] for m in masses])
    live = np.flatnonzero(table.any(axis=0))
    return masses, CellTable(cell // size, cell % size, table, size, live)


def self_size(masses: list[tuple]) -> int:
    """The largest count a cell index reaches, plus one."""
    return 1 + max((int(max(w.max(), b.max())) for w, b, _ in masses if w.size), default=0)


def _weighted_null(masses: list[tuple], pw: np.ndarray, pc: np.ndarray) -> np.ndarray:
    """``weighted_masses`` at ``pw = pb``: a cell's weight depends on ``m = W + B`` only,
    ``(3 pw)^m (3 pc)^(k - m) = (3 pc)^k (pw / pc)^m`` (``pw <= 1/4 <= 1/2 <= pc``, so no
    factor overflows), and every pair's sum is one matrix product with the masses by
    ``(m, k)`` (``CellTable.by_total``)."""
    by_total = cell_table(masses).by_total
    totals = np.arange(by_total.shape[0])[None, :]
    steps = np.arange(len(masses))[None, :]
    with np.errstate(divide="ignore", under="ignore"):
        ratio = np.exp(special.xlogy(totals, pw[:, None]) - special.xlogy(totals, pc[:, None]))
        out = (ratio @ by_total) * np.exp(special.xlogy(steps, 3.0 * pc[:, None]))
    out[:, 0] = 0.0
    return out
