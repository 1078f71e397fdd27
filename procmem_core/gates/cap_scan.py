"""Every cap of a two-sample gate in one recursion: the design search's fast path.

A ``TwoSampleGate`` with cap ``K`` decides like the uncapped test before run ``K`` and, at
``K``, reverts exactly when ``lambda >= final_level``. So one forward recursion of the
uncapped test (``twolattice``, at ``p0 = p = 1/2``) gives, at every step ``k``, the
probability of an early revert before ``k`` and the mass on every cell of step ``k``
before its decision: with those, ``calibrate.final_level`` chooses the final boundary of
the gate capped at ``k`` on a grid of p0, and its worst false revert and least power
follow by reweighting the cells (``twolattice.HalfMasses``). ``cap_scan`` returns them for
every cap at once, on the grid (not certified between grid points: ``design`` certifies
the gate it answers with), with the worst expected runs when nothing changed and at the
drop: ``E[min(N, K)] = sum_{k<K} k P(N = k) + K P(N >= K)`` for the uncapped stopping run
``N`` (the cap changes which verdict is forced at ``K``, not when).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from procmem_core.gates.calibrate import NullPass, final_level
from procmem_core.gates.mixture import powers, sparse_cells, transposed, weights
from procmem_core.gates.tolerance import MARGIN, at_least, at_most
from procmem_core.gates.two_sample import TwoSampleGate, remember_uncapped
from procmem_core.gates.twolattice import HalfMasses, Walk, decided_cells
from procmem_core.gates.twostats import step_statistics
from procmem_core.gates.verdicts import REVERT_CODE


@dataclass(frozen=True)
class CapScan:
    """Per cap ``k`` (index ``k``): the calibrated final boundary, the worst false revert
    and the least power over the grid; ``early[k]`` is the worst probability of reverting
    before ``k`` (above alpha: that cap would need a higher early boundary)."""

    final: np.ndarray
    false_revert: np.ndarray
    power: np.ndarray
    early: np.ndarray
    runs_null: np.ndarray
    """Per cap, the largest expected runs (pairs) over the grid when nothing changed."""
    runs_alt: np.ndarray
    """Per cap, the largest expected runs over the grid at the drop."""


def cap_scan(
    gate: TwoSampleGate,
    grid: np.ndarray,
    drop: float,
    alpha: float,
    beta: float | None = None,
    caps: np.ndarray | None = None,
    power_floor: float | None = None,
) -> CapScan:
    """Scan every cap ``min_runs..gate.max_runs`` of ``gate`` (its early boundaries fixed)
    on the p0 ``grid``: no change at ``(p0, p0)``, the drop at ``(p0, p0 - drop)``. With
    ``beta``, stop at the first cap that meets both targets, or at the first whose early
    reverts already pass alpha (later caps stay NaN): the early reverts before cap ``k``
    are a sum over the runs before it of nonnegative terms, so they only grow with ``k``
    and no later cap can meet alpha. With ``caps``, evaluate only those (the others stay
    NaN). With ``power_floor`` (a caller that keeps only caps with early reverts
    ``at_most`` alpha and power ``at_least`` the floor, ``early_stop``), stop at the first
    cap that ``doomed`` shows no later cap can keep; the caps before it are scanned as
    without it (the tables of the steps after it are never computed)."""
    lat = gate.lattice
    k_max = lat.max_runs
    tables = gate.tables(lat, at_cap=False, lazy=True)  # a step's table when reached
    p_alt = grid - drop
    up0, down0 = powers(grid, k_max + lat.prior_runs(k_max))
    upa, downa = powers(p_alt, k_max)
    null_f, alt_f = transposed(up0, down0), transposed(upa, downa)
    walk = Walk(lat)
    early_null, early_alt = np.zeros(grid.size), np.zeros(grid.size)
    accepted_alt = np.zeros(grid.size)  # P(accept before k) at the drop
    done = np.zeros((2, grid.size))  # P(decided before k): null, drop
    spent = np.zeros((2, grid.size))  # sum_{j<k} j P(N = j)
    out = np.full((6, k_max + 1), np.nan)
    wanted = None if caps is None else {int(c) for c in np.asarray(caps).ravel()}
    decided = []  # per step (row, column, mass, reverted): split only once the scan is whole
    for k in range(1, k_max + 1):
        nxt = walk.step()
        n = lat.prior_runs(k)
        if beta is not None and k >= gate.min_runs and not at_most(early_null.max(), alpha):
            out[3, k] = early_null.max()
            break
        if power_floor is not None and doomed(early_null, accepted_alt, alpha, power_floor):
            out[3, k] = early_null.max()
            break
        if k >= gate.min_runs and (wanted is None or k in wanted):
            a, b = np.arange(k + 1)[:, None], np.arange(n + 1)[None, :]
            total = np.broadcast_to(a + b, nxt.shape).ravel()
            lam = step_statistics(lat.ledger, lat.concurrent, k, gate.min_drop)[0].ravel()
            held = walk.masses().ravel()
            live = held > 0  # unreachable cells cannot move the boundary's error
            null = NullPass(grid, early_null, lam[live], held[live], total[live], k + n)
            c = final_level(null, alpha)
            hit = (lam >= c) & live
            w_null = weights(null_f, total[hit], k + n)
            x = weights(alt_f, np.broadcast_to(a, nxt.shape).ravel()[hit], k)
            y = weights(null_f, np.broadcast_to(b, nxt.shape).ravel()[hit], n)
            fr = early_null + w_null @ held[hit]
            pw = early_alt + (x * y) @ held[hit]
            runs = spent + k * (1.0 - done)
            out[:, k] = (c, fr.max(), pw.min(), early_null.max(), *runs.max(axis=1))
            met = at_most(fr.max(), alpha) and at_most(early_null.max(), alpha)
            if beta is not None and met and at_least(pw.min(), 1.0 - beta):
                break
        table = tables[k]  # read once: computed when read
        i, j, stopped = decided_cells(nxt, table)
        stopped *= walk.scale  # the masses at 1/2 (exact: a power of 2)
        w_null = weights(null_f, i + j, k + n)
        w_alt = weights(alt_f, i, k) * weights(null_f, j, n)
        rev = table[i, j] == REVERT_CODE  # the reverted cells among those decided
        decided.append((i, j, stopped, rev))
        early_null += w_null[:, rev] @ stopped[rev]
        early_alt += w_alt[:, rev] @ stopped[rev]
        if power_floor is not None:
            accepted_alt += w_alt[:, ~rev] @ stopped[~rev]
        now = np.stack([w_null @ stopped, w_alt @ stopped])
        done += now
        spent += k * now
        nxt[i, j] = 0.0  # the decided cells holding mass: the others are 0 already
    else:  # the whole uncapped recursion: what a calibration of this gate's levels runs
        none = sparse_cells(np.zeros((1, 1)))
        revert = [none] + [(i[r], j[r], m[r]) for i, j, m, r in decided]
        accept = [none] + [(i[~r], j[~r], m[~r]) for i, j, m, r in decided]  # decided: 1 or 2
        remember_uncapped(gate, HalfMasses(revert, accept, walk.masses()))
    return CapScan(*out)


DOOM_SLACK = 1e-6
"""Absolute room ``doomed`` leaves between the accepts at the drop and what the power floor
allows: far above the rounding of the sums compared (nonnegative terms, at most about 1.2e7
of them a scan: the worst-case relative error ``n u`` is about 1.3e-9, measured about 1e-14)."""


def doomed(early_null: np.ndarray, accepted_alt: np.ndarray, alpha: float, floor: float) -> bool:
    """True when no cap from the current step on can have early reverts ``at_most(alpha)``
    and power ``at_least(floor)`` on the grid (``tolerance``), given the early reverts
    under no change and the accepts at the drop before the step.

    Proof. Both are sums over the runs before the cap of nonnegative terms, so they only
    grow with the cap. A later cap's early reverts are then at least ``early_null``: once
    ``at_most`` fails here it fails there. At any p0 a cap's power (revert before or at the
    cap) and the accepts before the cap are disjoint events, so ``power <= 1 - accepted``;
    once ``accepted`` passes ``1 - floor (1 + MARGIN)`` by ``DOOM_SLACK`` at some grid p0,
    every later cap's computed power there is below ``floor (1 + MARGIN)``: ``at_least``
    fails at it, so at the grid's least."""
    if not at_most(early_null.max(), alpha):
        return True
    return bool(accepted_alt.max() > 1.0 - floor * (1.0 + MARGIN) + DOOM_SLACK)
