"""The two-sample lattice: exact operating characteristics of a gate that compares both arms.

State after the revision's ``k``-th run: its successes ``a`` (``0 <= a <= k``) and the
prior's successes ``B`` over the prior's runs ``n(k) = n0 + k`` in the concurrent design
(the prior's ledger of ``n0`` runs plus ``k`` concurrent runs, one paired with each
revision run) or ``n(k) = n0`` in the fixed design. A gate is a ``rule(k, a, B, n)`` of
verdict codes on these cells. With ``B_0 ~ Binomial(n0, p0)`` and each step adding a
revision run (success ``p``) and, concurrently, a prior run (success ``p0``),

    m_k(a, B) = sum_{x, y in {0, 1}} m_{k-1}(a - x, B - y) p^x (1-p)^(1-x) p0^y (1-p0)^(1-y),

decided cells absorbed. The recursion runs once, at ``p0 = p = 1/2`` (``half_masses``):
a path's probability depends on the parameters only through its cell, so every
``(p0, p)`` follows by reweighting the cells (``evaluate``: P(revert), P(accept), E[k],
the law of the stopping run and the mass left at the cap), O(K^2 (n0 + K)) once and a
matrix product per step for G parameter pairs. The weights are taken as ``(2c)^t r^u``
(``ratio_powers``: ``r <= 1``, one gather a factor); under no change a cell's weight
depends on its total successes only, so every step is one matrix product at once. Every
path (``decide``, ``decide_batch``, this recursion) evaluates the same rule, so they cannot
drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from procmem_core.errors import ParameterError, check_int
from procmem_core.gates.mixture import (
    RevertSteps,
    by_row,
    by_total,
    half_pmf,
    masked_cells,
    powers,
    ratio_powers,
    reweight,
    sparse_cells,
    transposed,
    weights,
)
from procmem_core.gates.revert_limit import RevertLimit
from procmem_core.gates.verdicts import ACCEPT_CODE, CONTINUE_CODE, REVERT_CODE

MAX_OBSERVATIONS = 1000
"""Largest ledger + runs the recursion takes (its masses at 1/2 stay above 2^-1000)."""
TwoSampleRule = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]
"""``rule(k, a, B, n) -> int8 verdict codes``, broadcasting its arguments."""


def check_observations(ledger: int, max_runs: int, per_run: int) -> None:
    """``ledger + per_run * max_runs`` outcomes (``per_run`` 2 with concurrent control, 1
    with a fixed ledger) at most ``MAX_OBSERVATIONS``, else a ``ParameterError`` naming
    the field at fault: ``max_runs`` when its runs alone are too many, else ``ledger``,
    each with the largest value allowed beside the other."""
    total = ledger + per_run * max_runs
    if total <= MAX_OBSERVATIONS:
        return
    if per_run * max_runs > MAX_OBSERVATIONS:  # too large whatever the ledger
        field, value = "max_runs", max_runs
        most = (MAX_OBSERVATIONS - ledger) // per_run
        allowed = (
            f"an integer <= {most} with a {ledger}-run ledger"
            if most >= 1
            else f"an integer <= {MAX_OBSERVATIONS // per_run}, with a ledger of at most "
            f"{MAX_OBSERVATIONS - per_run} runs"
        )
    else:
        field, value = "ledger", ledger
        allowed = f"at most {MAX_OBSERVATIONS - per_run * max_runs} runs at max_runs {max_runs}"
    raise ParameterError(
        field,
        value,
        f"{allowed}: the two-sample test's exact recursion takes ledger + runs of both "
        f"arms at most {MAX_OBSERVATIONS} (here {total})",
    )


@dataclass(frozen=True)
class TwoSampleLattice:
    """The cells of a two-sample gate: ledger ``n0``, design, cap ``max_runs``."""

    ledger: int
    concurrent: bool
    max_runs: int

    def __post_init__(self) -> None:
        check_int("ledger", self.ledger)
        check_int("max_runs", self.max_runs, minimum=1)
        check_observations(self.ledger, self.max_runs, 2 if self.concurrent else 1)

    def prior_runs(self, k: int) -> int:
        """The prior's runs beside the revision's ``k``-th: ``n0 + k`` or ``n0``."""
        return self.ledger + (k if self.concurrent else 0)

    @property
    def observations(self) -> int:
        """Bernoulli outcomes up to the cap: ledger, revision runs, concurrent prior runs."""
        return self.ledger + self.max_runs * (2 if self.concurrent else 1)

    def cells(self, k: int) -> tuple[np.ndarray, np.ndarray, int]:
        """``(a, B, n)`` of step ``k``: ``a`` as a column, ``B`` as a row."""
        n = self.prior_runs(k)
        return np.arange(k + 1)[:, None], np.arange(n + 1)[None, :], n

    def tables(self, rule: TwoSampleRule) -> list[np.ndarray]:
        """``rule`` on every cell of every step ``k = 0..max_runs``."""
        out = []
        for k in range(self.max_runs + 1):
            a, b, n = self.cells(k)
            codes = np.asarray(rule(np.int64(k), a, b, np.int64(n)), dtype=np.int8)
            out.append(np.broadcast_to(codes, (k + 1, n + 1)))
        return out


@dataclass(frozen=True)
class HalfMasses:
    """The recursion run once at ``p0 = p = 1/2``: ``revert[k]``, ``accept[k]`` (the
    mass decided at step ``k`` in each cell) and ``residual`` (undecided after the cap).

    Every path to cell ``(k, a, B)`` has probability ``p^a (1-p)^(k-a) p0^B (1-p0)^(n-B)``
    at any ``(p0, p)``, so a cell's mass there is its mass at 1/2 times
    ``(2p)^a (2(1-p))^(k-a) (2 p0)^B (2(1-p0))^(n-B)``: one recursion serves every
    parameter pair (``evaluate``), with a matrix product per step.
    """

    revert: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    accept: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    residual: np.ndarray

    def null_tables(self, lat: TwoSampleLattice) -> dict[str, np.ndarray]:
        """The decided masses by step ``k`` (row) and total successes ``S``, computed once:
        under no change that is all a cell's weight depends on. ``"S"``: rows ``[revert_k,
        accept_k]`` indexed by ``S``; ``"F"``: the same indexed by failures ``N_k - S``;
        ``"N"``: the outcomes ``N_k`` seen by step ``k``."""
        if "_null" not in self.__dict__:
            steps = len(self.revert)
            n = np.array([k + lat.prior_runs(k) for k in range(steps)])
            cells = (*self.revert, *self.accept)
            total, mass = [i + j for i, j, _ in cells], [m for _, _, m in cells]
            failures = [outcomes - t for outcomes, t in zip(np.tile(n, 2), total, strict=True)]
            by_s, by_f = (by_row(x, mass, int(n.max()) + 1) for x in (total, failures))
            self.__dict__["_null"] = {"S": by_s, "F": by_f, "N": n}
        return self.__dict__["_null"]


class Walk:
    """The recursion's undecided masses at 1/2, one step after another, in two buffers
    reused across steps (a fresh array a step cost more than the arithmetic). ``mass``:
    the current step's masses kept unscaled, times ``1/scale`` (a view: copy what must
    outlive the next ``step``); ``mass * scale`` are the masses at 1/2, bit for bit.

    Each run's sums are taken unscaled: a revision run (``a`` up by 0 or 1) and,
    concurrently, a prior run (``B`` up by 0 or 1), each with probability 1/2, and ``scale``
    is halved once per arm instead of halving every sum. Scaling by a power of 2 commutes
    with rounding (no overflow: at most ``2^MAX_OBSERVATIONS`` times a mass <= 1; no
    underflow: masses at 1/2 stay above 2^-1000), so ``mass * scale`` are the values of
    halving each term, one pass over the lattice a step fewer."""

    def __init__(self, lat: TwoSampleLattice) -> None:
        shape = (lat.max_runs + 1, lat.prior_runs(lat.max_runs) + 1)
        self.concurrent = lat.concurrent
        self.buffer, self.spare = np.empty(shape), np.empty(shape)
        self.mass = self.buffer[:1, : lat.ledger + 1]
        self.mass[0] = half_pmf(lat.ledger)
        self.scale = 1.0

    def step(self) -> np.ndarray:
        """The next step's unscaled masses before its decisions (class docstring)."""
        k, width = self.mass.shape
        m, nxt = self.mass, self.spare[: k + 1, :width]
        nxt[0], nxt[k] = m[0], m[k - 1]
        np.add(m[1:], m[:-1], out=nxt[1:k])
        if self.concurrent:
            out = self.buffer[: k + 1, : width + 1]
            out[:, 0], out[:, width] = nxt[:, 0], nxt[:, width - 1]
            np.add(nxt[:, 1:], nxt[:, :-1], out=out[:, 1:width])
            self.scale *= 0.25
        else:
            out = nxt  # now in ``spare``: the next step writes into the other buffer
            self.buffer, self.spare = self.spare, self.buffer
            self.scale *= 0.5
        self.mass = out
        return out

    def masses(self) -> np.ndarray:
        """The current step's masses at 1/2 (a fresh array)."""
        return self.mass * self.scale


def decided_cells(mass: np.ndarray, table: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(row, column, mass)`` of the cells holding mass whose verdict in ``table`` is
    not "continue", row-major (``mixture.masked_cells``)."""
    return masked_cells(mass, table != CONTINUE_CODE)


def half_masses(
    lat: TwoSampleLattice, tables: Sequence[np.ndarray], limit: RevertLimit | None = None
) -> HalfMasses | None:
    """The recursion of the module docstring at ``p0 = p = 1/2``; ``tables[k]`` is read at
    step ``k`` only (it may be computed then). With ``limit``: None as soon as the reverts
    so far pass it (``revert_limit``: a calibration trial that has failed)."""
    walk = Walk(lat)
    revert, accept = [sparse_cells(np.zeros((1, 1)))], [sparse_cells(np.zeros((1, 1)))]
    none = sparse_cells(np.zeros((1, 1)))  # no cell: what an empty split gives
    reverted = tables.reverted if isinstance(tables, RevertSteps) else None
    for k in range(1, lat.max_runs + 1):
        nxt = walk.step()
        found = None if reverted is None else reverted(k, nxt)
        if found is not None:  # every decided cell reverts: the same cells, no table
            i, j = found
            revert.append((i, j, nxt[i, j] * walk.scale))
            accept.append(none)
        else:
            table = tables[k]  # read once: it may be computed when read
            i, j, m = decided_cells(nxt, table)  # row-major, as split below
            m *= walk.scale  # the masses at 1/2 (exact: a power of 2)
            code = table[i, j]
            for out, which in ((revert, REVERT_CODE), (accept, ACCEPT_CODE)):
                hit = code == which
                out.append((i[hit], j[hit], m[hit]))
        if limit is not None and limit.add(revert[-1][0] + revert[-1][1], revert[-1][2],
                                           k + lat.prior_runs(k)):  # fmt: skip
            return None
        nxt[i, j] = 0.0  # the decided cells holding mass: the others are 0 already
    if limit is not None and limit.finish():
        return None
    return HalfMasses(revert, accept, walk.masses())


@dataclass(frozen=True)
class TwoSamplePass:
    """Per parameter pair ``g``: P(revert), P(accept), E[stopping run] (undecided mass
    counted at the cap) and ``stop[g, k]`` = P(decided at run k)."""

    revert: np.ndarray
    accept: np.ndarray
    runs: np.ndarray
    stop: np.ndarray


def evaluate(
    lat: TwoSampleLattice,
    masses: HalfMasses,
    p0: np.ndarray,
    p: np.ndarray,
) -> TwoSamplePass:
    """The operating characteristic at prior rates ``p0`` and revision rates ``p``
    (arrays of one shape ``(G,)``) from the masses at 1/2 (``HalfMasses``)."""
    p0 = np.asarray(p0, dtype=float).ravel()
    p = np.asarray(p, dtype=float).ravel()
    if np.array_equal(p0, p):
        return _evaluate_null(lat, masses, p)
    k_max, steps = lat.max_runs, len(masses.revert)
    low, log_c, ratio = ratio_powers(p, k_max)
    low0, log_c0, ratio0 = ratio_powers(p0, lat.prior_runs(k_max))
    per = np.zeros((p.size, 2 * steps))
    for lp, lp0 in ((True, True), (True, False), (False, True), (False, False)):
        g = np.flatnonzero((low == lp) & (low0 == lp0))
        if g.size:
            per[g] = _oriented(lat, masses, lp, lp0, ratio[g].T.copy(), ratio0[g].T.copy())
            n = np.array([lat.prior_runs(k) for k in range(steps)])  # (2c)^k (2c0)^n(k)
            scale = np.exp(np.arange(steps)[None, :] * log_c[g, None] + n * log_c0[g, None])
            per[g] *= np.tile(scale, 2)
    stop = per[:, :steps] + per[:, steps:]
    revert, accept = per[:, :steps].sum(axis=1), per[:, steps:].sum(axis=1)
    up, down = powers(p, k_max)
    up0, down0 = powers(p0, lat.prior_runs(k_max))
    rev, pri = transposed(up, down), transposed(up0, down0)
    i, j, m = sparse_cells(masses.residual)
    left = (weights(rev, i, k_max) * weights(pri, j, lat.prior_runs(k_max))) @ m
    runs = stop @ np.arange(k_max + 1) + k_max * left
    return TwoSamplePass(revert, accept, runs, stop)


def _oriented(
    lat: TwoSampleLattice,
    masses: HalfMasses,
    low: bool,
    low0: bool,
    rev_t: np.ndarray,
    pri_t: np.ndarray,
) -> np.ndarray:
    """Per step, the reverted and accepted mass without the ``(2c)^k (2c0)^n`` factor, for
    parameter pairs of one orientation (``ratio_powers``; ``rev_t``, ``pri_t`` transposed,
    row ``u`` the ``u``-th powers)."""
    steps = len(masses.revert)
    out = np.zeros((rev_t.shape[1], 2 * steps))
    for k in range(1, steps):
        n = lat.prior_runs(k)
        for col, (i, j, m) in ((k, masses.revert[k]), (steps + k, masses.accept[k])):
            u, v = (i if low else k - i), (j if low0 else n - j)
            out[:, col] = (rev_t[u] * pri_t[v]).T @ m
    return out


def _evaluate_null(lat: TwoSampleLattice, masses: HalfMasses, p: np.ndarray) -> TwoSamplePass:
    """``evaluate`` at ``p0 = p``: a cell's weight depends on its total successes ``S`` of
    ``N`` outcomes only, so every step's decided mass at every p is one matrix product with
    ``null_tables`` (``mixture.by_total``)."""
    k_max, steps = lat.max_runs, len(masses.revert)
    per = by_total(masses.null_tables(lat), p)
    stop = per[:, :steps] + per[:, steps:]
    revert, accept = per[:, :steps].sum(axis=1), per[:, steps:].sum(axis=1)
    up, down = powers(p, k_max + lat.prior_runs(k_max))
    i, j, m = sparse_cells(masses.residual)
    left = reweight(up, down, k_max + lat.prior_runs(k_max))[:, i + j] @ m
    runs = stop @ np.arange(k_max + 1) + k_max * left
    return TwoSamplePass(revert, accept, runs, stop)


def expected_arm_runs(
    revision_needed: np.ndarray, prior_needed: np.ndarray, share: float
) -> tuple[np.ndarray, np.ndarray]:
    """Expected runs each arm has when the revision has ``r`` and the prior ``c``
    concurrent runs, each session serving the prior with probability ``share``.

    With ``X ~ NegBin(c, share)`` the revision's sessions before the prior's ``c``-th and
    ``Y ~ NegBin(r, 1 - share)`` the prior's before the revision's ``r``-th, the arms hold
    ``max(r, X)`` and ``max(c, Y)`` runs; ``E[max(r, X)] = E[X] + sum_{x<r} (r-x) P(X=x)``.
    """
    r = np.atleast_1d(np.asarray(revision_needed, dtype=np.int64))
    c = np.atleast_1d(np.asarray(prior_needed, dtype=np.int64))
    return _expected_max(r, c, share), _expected_max(c, r, 1.0 - share)


def _expected_max(floor: np.ndarray, trials: np.ndarray, q: float) -> np.ndarray:
    """``E[max(floor, NegBin(trials, q))]`` elementwise (``trials = 0``: ``floor``), all
    cells at once: one pmf table over ``x < max(floor)`` for the distinct ``trials``."""
    out = floor.astype(float).copy()
    if q <= 0.0:  # the other arm never runs: only possible when it needs no runs
        return np.where(trials > 0, np.inf, out)
    live = trials > 0
    if not live.any():
        return out
    f, t = floor[live], trials[live]
    sizes, which = np.unique(t, return_inverse=True)
    x = np.arange(max(int(f.max()), 1))
    pmf = stats.nbinom.pmf(x[None, :], sizes[:, None], q)[which.ravel()]
    short = np.clip(f[:, None] - x[None, :], 0, None)
    out[live] = stats.nbinom.mean(t, q) + np.sum(short * pmf, axis=1)
    return out
