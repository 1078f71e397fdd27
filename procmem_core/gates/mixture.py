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

from dataclasses import dataclass

import numpy as np
from scipy import stats

from procmem_core.gates.verdicts import ACCEPT_CODE, REVERT_CODE


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
