"""Sequential decisions on the (runs, successes) lattice, for one revision or a million.

A revision gate that looks only at the number of runs ``n`` and successes ``s`` of the
revision is a *rule* ``rule(successes, runs, p0) -> verdict code`` (int8, see
``verdicts.VERDICT_CODES``) that works on scalars and broadcast numpy arrays alike. This module
holds what every such gate shares:

- ``verdict_table``: the rule evaluated on every lattice cell ``(n, s)``, ``0 <= s <= n``;
- ``first_decisions``: the first run at which each row of an outcome matrix gets a
  verdict other than "continue" (the vectorized path the simulators use);
- ``lattice_absorption``: the exact probability of each verdict and the expected stopping
  run, by forward recursion over the lattice (the exact path of ``LatticeGate.operating_point``).

All three call the gate's own rule, so the object path (``gate.decide``), the vectorized
path and the exact analysis cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from procmem_core.errors import ParameterError
from procmem_core.gates.verdicts import ACCEPT_CODE, CONTINUE_CODE, REVERT_CODE

Rule = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
"""``rule(successes, runs, p0) -> int8 verdict codes``, broadcasting its arguments."""

CHUNK_ELEMENTS = 1 << 18
"""Outcome cells processed per block in ``first_decisions`` (bounds memory, fits cache)."""
TABLE_CELLS_BUDGET = 1 << 24
"""Largest total size of per-p0 verdict tables before ``first_decisions`` evaluates the
rule cell by cell instead of looking verdicts up."""


def check_outcomes(outcomes: np.ndarray) -> np.ndarray:
    """Return ``outcomes`` if it is a 2-D boolean (replications, runs) matrix."""
    arr = np.asarray(outcomes)
    if arr.dtype != np.bool_ or arr.ndim != 2:
        raise ParameterError(
            "outcomes",
            f"array of dtype {arr.dtype} and shape {arr.shape}",
            "a 2-D boolean array (replications, runs), True = successful run",
        )
    return arr


def check_p0_array(p0: float | np.ndarray, rows: int, field: str = "p0") -> np.ndarray:
    """Return ``p0`` as a float array of shape ``(rows,)`` (a scalar is broadcast)."""
    arr = np.asarray(p0, dtype=float)
    if arr.ndim == 0:
        arr = np.full(rows, float(arr))
    if arr.shape != (rows,):
        raise ParameterError(field, f"array of shape {arr.shape}", f"a scalar or shape ({rows},)")
    if not np.all((arr >= 0.0) & (arr <= 1.0)):
        bad = arr[~((arr >= 0.0) & (arr <= 1.0))][0]
        raise ParameterError(field, float(bad), "every value in [0, 1]")
    return arr


def verdict_table(rule: Rule, p0: np.ndarray, max_runs: int) -> np.ndarray:
    """The rule on every lattice cell: ``table[u, n, s]`` for ``p0[u]``, ``0 <= s <= n``.

    Shape ``(len(p0), max_runs + 1, max_runs + 1)``; unreachable cells ``s > n`` hold
    "continue".
    """
    p0 = np.asarray(p0, dtype=float).reshape(-1, 1, 1)
    n = np.arange(max_runs + 1).reshape(1, -1, 1)
    s = np.arange(max_runs + 1).reshape(1, 1, -1)
    table = np.asarray(rule(s, n, p0), dtype=np.int8)
    table = np.broadcast_to(table, (p0.shape[0], max_runs + 1, max_runs + 1)).copy()
    table[:, s[0, 0] > n[0, :, 0][:, None]] = CONTINUE_CODE
    return table


def first_decisions(
    outcomes: np.ndarray, p0: np.ndarray, rule: Rule, min_runs: int, max_runs: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """First verdict other than "continue" of each row, looking at runs 1..max_runs.

    Returns ``(verdict, runs_used, successes)`` where ``successes`` is the count at
    ``runs_used``. Rows undecided after ``T = min(outcomes.shape[1], max_runs)`` runs
    keep "continue" with ``runs_used = T``. Runs past ``max_runs`` are ignored.

    Speed: when the distinct values of ``p0`` are few, the rule is tabulated once per
    value on the lattice and each cell's verdict is a table look-up at
    ``(n, cumulative successes)``; otherwise the rule is evaluated on the cumulative
    counts block by block. Either way memory is bounded by ``CHUNK_ELEMENTS``.
    """
    rows = outcomes.shape[0]
    t = min(outcomes.shape[1], max_runs)
    verdict = np.zeros(rows, dtype=np.int8)
    runs_used = np.full(rows, t, dtype=np.int64)
    successes = np.zeros(rows, dtype=np.int64)
    if rows == 0 or t == 0:
        return verdict, runs_used, successes
    values, which = np.unique(p0, return_inverse=True)
    first_col = min_runs - 1  # column j holds run n = j + 1; nothing decides before min_runs
    use_table = values.size * (t + 1) ** 2 <= TABLE_CELLS_BUDGET
    if use_table:
        flat_table = verdict_table(rule, values, t).ravel()
        index_dtype = np.int32 if flat_table.size < 2**31 else np.int64  # half the bytes
        which = which.astype(index_dtype) * (t + 1) ** 2
        offsets = ((np.arange(first_col, t) + 1) * (t + 1)).astype(index_dtype)[None, :]
    cols = np.arange(first_col, t)
    n = cols + 1
    count_dtype = np.int16 if t < np.iinfo(np.int16).max else np.int64
    step = max(1, CHUNK_ELEMENTS // t)
    for lo in range(0, rows, step):
        hi = min(rows, lo + step)
        counts = np.cumsum(outcomes[lo:hi, :t], axis=1, dtype=count_dtype)
        if first_col >= t:
            successes[lo:hi] = counts[:, -1]
            continue
        counts = counts[:, first_col:]
        if use_table:
            index = counts.astype(index_dtype)
            index += offsets
            if values.size > 1:  # one p0 for every row: its table starts at 0
                index += which[lo:hi, None]
            codes = flat_table.take(index)
        else:
            codes = np.asarray(rule(counts, n[None, :], p0[lo:hi, None]), dtype=np.int8)
        decided = codes != CONTINUE_CODE
        first = decided.argmax(axis=1)
        r = np.arange(hi - lo)
        hit = decided[r, first]
        verdict[lo:hi] = np.where(hit, codes[r, first], CONTINUE_CODE)
        runs_used[lo:hi] = np.where(hit, n[first], t)
        successes[lo:hi] = np.where(hit, counts[r, first], counts[:, -1])
    return verdict, runs_used, successes


def lattice_absorption(
    table: np.ndarray, p: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact verdict probabilities and expected stopping run, by forward recursion.

    ``table[n, s]`` is a verdict table (one p0) up to the cap ``T = table.shape[0] - 1``;
    runs succeed independently with probability ``p`` (an array). With ``m_n(s)`` the
    probability of reaching ``(n, s)`` undecided,
    ``m_n(s) = p m_{n-1}(s-1) + (1-p) m_{n-1}(s)``, after which the mass on decided cells
    is absorbed. Returns ``(P(accept), P(revert), E[stopping run])``, where undecided mass
    at ``T`` (only when the rule leaves cells undecided at its cap) counts as stopping
    at ``T`` without accept or revert. Cost O(T^2) per value of ``p``.
    """
    p = np.asarray(p, dtype=float).reshape(-1, 1)
    t = table.shape[0] - 1
    mass = np.zeros((p.shape[0], t + 1))
    mass[:, 0] = 1.0
    accept = np.zeros(p.shape[0])
    revert = np.zeros(p.shape[0])
    runs = np.zeros(p.shape[0])
    for n in range(1, t + 1):
        nxt = mass[:, : n + 1] * (1.0 - p)
        nxt[:, 1:] += mass[:, :n] * p
        row = table[n, : n + 1]
        acc = row == ACCEPT_CODE
        rev = row == REVERT_CODE
        a = nxt[:, acc].sum(axis=1)
        b = nxt[:, rev].sum(axis=1)
        accept += a
        revert += b
        runs += n * (a + b)
        nxt[:, acc | rev] = 0.0
        mass[:, : n + 1] = nxt
    runs += t * mass.sum(axis=1)
    return accept, revert, runs
