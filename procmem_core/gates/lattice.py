"""Sequential decisions on the (runs, successes) lattice, for one revision or a million.

A revision gate that looks only at the number of runs ``n`` and successes ``s`` of the
revision is a *rule* ``rule(successes, runs, p0) -> verdict code`` (int8, see
``verdicts.VERDICT_CODES``) that works on scalars and broadcast numpy arrays alike. This module
holds what every such gate shares:

- ``verdict_table``: the rule evaluated on every lattice cell ``(n, s)``, ``0 <= s <= n``;
- ``first_decisions``: the first run at which each row of an outcome matrix gets a
  verdict other than "continue" (the vectorized path the simulators use; with few
  distinct p0 it reads the runs 8 at a time, bit-packed, through ``byte_tables``: the
  first decision within a byte given the successes before it, from the verdict table);
- ``lattice_absorption``: the exact probability of each verdict and the expected stopping
  run, by forward recursion over the lattice (the exact path of ``LatticeGate.operating_point``).

All three call the gate's own rule, so the object path (``gate.decide``), the vectorized
path and the exact analysis cannot drift apart.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from procmem_core.errors import ParameterError, check_int
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


EXACT_LATTICE_BYTES = 2**30
"""The exact analysis of a gate holds its ``(max_runs + 1)^2`` lattice of float64 cells
per prior rate (``verdict_table``, the LLR table of ``calibrated_sprt.ledger_statistics``):
``registry.MAX_RUNS_LIMIT`` keeps one lattice, ``check_ledger_size`` the ledger's mixture
(one per ledger count), within 1 GiB."""
MAX_RUNS_LIMIT = math.isqrt(EXACT_LATTICE_BYTES // 8) - 1


def check_ledger_size(field: str, ledger: object, max_runs: int) -> int:
    """``ledger`` as an int if the exact mixture over its counts, ``ledger + 1`` lattices of
    ``(max_runs + 1)^2`` 8-byte cells, fits ``EXACT_LATTICE_BYTES`` (a ``ParameterError``
    naming ``field`` otherwise: a prior of 100,000 runs asked for 2e9 bytes and more for
    temporaries, and the process was killed)."""
    n = check_int(field, ledger, minimum=0)
    cells = (int(max_runs) + 1) ** 2
    if 8 * cells > EXACT_LATTICE_BYTES:
        raise ParameterError(
            "max_runs",
            max_runs,
            f"an integer <= {MAX_RUNS_LIMIT}: the exact analysis keeps a (max_runs + 1)^2 "
            f"lattice of 8-byte cells per prior rate, {8 * cells:.3g} bytes here "
            f"(limit {EXACT_LATTICE_BYTES:.3g})",
        )
    size = 8 * (n + 1) * cells
    if size > EXACT_LATTICE_BYTES:
        largest = EXACT_LATTICE_BYTES // (8 * cells) - 1
        raise ParameterError(
            field,
            ledger,
            f"an integer <= {largest} at max_runs {max_runs}: the exact mixture over the "
            f"ledger's counts keeps a (max_runs + 1)^2 lattice of 8-byte cells per count, "
            f"{size:.3g} bytes here (limit {EXACT_LATTICE_BYTES:.3g})",
        )
    return n


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


BYTE_RUNS = 8
"""Runs per byte of bit-packed outcomes (``np.packbits``) in ``first_decisions``' byte path."""
BYTE_PATH_MAX_VALUES = 64
"""Most distinct p0 values for which ``first_decisions`` walks bytes of runs; beyond it
(and where ``TABLE_CELLS_BUDGET`` allows) it looks verdicts up run by run."""
BYTE_PATH_MAX_RUNS = (1 << 11) - 1
"""The byte path's entries hold the run in 11 bits, the verdict in 4, the successes in 16."""
BYTE_TABLE_BUDGET = 1 << 22
"""Most entries (int32) of the byte tables one call of ``first_decisions`` may use."""
BYTE_TABLE_CACHE_SIZE = 128
"""Byte tables kept (one per distinct per-p0 verdict table, ~180 kB at 50 runs)."""
_BYTE_TABLES: dict[bytes, np.ndarray] = {}
_POPCOUNT = np.array([bin(b).count("1") for b in range(256)], dtype=np.int32)
_BITS = (np.arange(256)[:, None] >> np.arange(BYTE_RUNS - 1, -1, -1)[None, :]) & 1
"""``_BITS[b, j]``: run ``j`` of a byte ``b`` (``np.packbits`` order: the first run is
the most significant bit)."""


def _byte_offsets(t: int) -> np.ndarray:
    """Start of block ``k``'s entries in one p0's byte table: block ``k`` (runs
    ``8k+1 .. 8k+8``) has a row of 256 entries for each success count ``0 .. 8k`` before it."""
    blocks = -(-t // BYTE_RUNS)
    sizes = (BYTE_RUNS * np.arange(blocks) + 1) * 256
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)


def _build_byte_table(codes: np.ndarray, t: int) -> np.ndarray:
    """One p0's byte table from its verdict table ``codes[n, s]`` (runs before min_runs
    already "continue"): for block ``k``, successes ``s`` before it and byte ``b`` of its
    runs, the first cell ``(n, s')`` in the block with a verdict other than continue, as
    ``n << 20 | verdict << 16 | s'``, else ``(t + 1) << 20`` (sorts after every decision)."""
    offsets = _byte_offsets(t)
    table = np.empty(offsets[-1], dtype=np.int32)
    cum = np.cumsum(_BITS, axis=1)
    for k in range(offsets.size - 1):
        n0 = BYTE_RUNS * k
        s0 = np.arange(n0 + 1)[:, None]
        block = np.full((n0 + 1, 256), (t + 1) << 20, dtype=np.int32)
        for j in range(min(BYTE_RUNS, t - n0) - 1, -1, -1):  # earliest run last: it wins
            n = n0 + j + 1
            s = s0 + cum[None, :, j]
            code = codes[n, s].astype(np.int32)
            block = np.where(code != CONTINUE_CODE, (n << 20) | (code << 16) | s, block)
        table[offsets[k] : offsets[k + 1]] = block.ravel()
    return table


def byte_tables(tables: np.ndarray) -> np.ndarray:
    """The byte tables of verdict tables ``tables[u, n, s]``, one after another (cached by
    each verdict table's bytes: a pure function of them)."""
    t = tables.shape[1] - 1
    parts = []
    for codes in tables:
        key = codes.tobytes()
        part = _BYTE_TABLES.get(key)
        if part is None:
            part = _build_byte_table(codes, t)
            if len(_BYTE_TABLES) >= BYTE_TABLE_CACHE_SIZE:
                _BYTE_TABLES.clear()  # rare: more distinct p0 than kept
            _BYTE_TABLES[key] = part
        parts.append(part)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _popcount(packed: np.ndarray) -> np.ndarray:
    """Set bits of each byte (successes among its runs)."""
    if hasattr(np, "bitwise_count"):  # numpy >= 2
        return np.bitwise_count(packed)
    return _POPCOUNT.take(packed)


def _pack_rows(outcomes: np.ndarray) -> np.ndarray:
    """``np.packbits(outcomes, axis=1)``, by packing a copy padded to whole bytes per row
    as one flat run of bits (several times faster than packing row by row)."""
    rows, t = outcomes.shape
    width = -(-t // BYTE_RUNS) * BYTE_RUNS
    if width == t and outcomes.flags.c_contiguous:
        padded = outcomes
    else:
        padded = np.zeros((rows, width), dtype=bool)
        padded[:, :t] = outcomes
    return np.packbits(padded.reshape(-1)).reshape(rows, width // BYTE_RUNS)


def _byte_block(outcomes, table, which, t, out) -> None:
    """``first_decisions`` on one block of rows by bytes of runs: each row's bytes are
    looked up in ``table`` (``byte_tables``) at the successes before each byte (the
    popcounts of the bytes before it), and the smallest entry is the first decision."""
    packed = np.ascontiguousarray(_pack_rows(outcomes).T)  # (bytes, rows)
    pop = _popcount(packed)
    index = np.empty(packed.shape, dtype=np.int32)
    index[0] = 0
    for k in range(1, packed.shape[0]):  # successes before byte k (a loop: faster here
        np.add(index[k - 1], pop[k - 1], out=index[k])  # than cumsum along axis 0)
    total = index[-1] + pop[-1]
    index <<= 8  # 256 entries per success count
    index += packed
    index += _byte_offsets(t)[:-1, None]
    if which is not None:
        index += which[None, :]
    first = table.take(index).min(axis=0)
    verdict, runs_used, successes = out
    verdict[:] = (first >> 16) & 0xF
    np.minimum(first >> 20, t, out=runs_used)  # undecided rows: t
    successes[:] = np.where(verdict != CONTINUE_CODE, first & 0xFFFF, total)


def one_value(p0: np.ndarray) -> bool:
    """True when every entry of the float array ``p0`` (at least one) is the same double,
    bit for bit."""
    bits = p0.view(np.int64) if p0.dtype == np.float64 and p0.flags.c_contiguous else None
    return p0.size > 0 and bits is not None and bool((bits == bits[0]).all())


def decision_tables(rule: Rule, values: np.ndarray, t: int, min_runs: int) -> np.ndarray:
    """``verdict_table(rule, values, t)`` with every cell before ``min_runs`` "continue"
    (nothing decides there): the tables ``first_decisions`` walks."""
    tables = verdict_table(rule, values, t)
    tables[:, :min_runs] = CONTINUE_CODE
    return tables


def first_decisions(
    outcomes: np.ndarray,
    p0: np.ndarray,
    rule: Rule,
    min_runs: int,
    max_runs: int,
    tables: Callable[[np.ndarray, int], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """First verdict other than "continue" of each row, looking at runs 1..max_runs.

    Returns ``(verdict, runs_used, successes)`` where ``successes`` is the count at
    ``runs_used``. Rows undecided after ``T = min(outcomes.shape[1], max_runs)`` runs
    keep "continue" with ``runs_used = T``. Runs past ``max_runs`` are ignored.

    Speed: when the distinct values of ``p0`` are few, the rule is tabulated once per
    value on the lattice. With at most ``BYTE_PATH_MAX_VALUES`` values the runs are
    bit-packed 8 to a byte and each byte is looked up whole (``byte_tables``: the first
    decision within it, given the successes before it); otherwise each cell's verdict is
    a table look-up at ``(n, cumulative successes)``, or, past ``TABLE_CELLS_BUDGET``,
    the rule is evaluated on the cumulative counts. Memory is bounded by
    ``CHUNK_ELEMENTS`` per block of rows either way. ``tables(values, T)``, if given,
    returns ``decision_tables(rule, values, T, min_runs)`` (a gate that keeps them).
    """
    rows = outcomes.shape[0]
    t = min(outcomes.shape[1], max_runs)
    verdict = np.zeros(rows, dtype=np.int8)
    runs_used = np.full(rows, t, dtype=np.int64)
    successes = np.zeros(rows, dtype=np.int64)
    if rows == 0 or t == 0:
        return verdict, runs_used, successes
    if one_value(p0):  # the usual case: no sort
        values, which = p0[:1], np.zeros(rows, dtype=np.intp)
    else:
        values, which = np.unique(p0, return_inverse=True)
    if values.size * (t + 1) ** 2 > TABLE_CELLS_BUDGET:
        _rule_blocks(outcomes, p0, rule, min_runs, t, (verdict, runs_used, successes))
        return verdict, runs_used, successes
    tables = decision_tables(rule, values, t, min_runs) if tables is None else tables(values, t)
    step = max(1, CHUNK_ELEMENTS // t)
    per_value = int(_byte_offsets(t)[-1])
    if (
        values.size <= BYTE_PATH_MAX_VALUES
        and t < BYTE_PATH_MAX_RUNS
        and values.size * per_value <= BYTE_TABLE_BUDGET
        and tables.min() >= 0
        and tables.max() <= 0xF
    ):
        table = byte_tables(tables)
        offset = None if values.size == 1 else (which * per_value).astype(np.int32)
        for lo in range(0, rows, step):
            hi = min(rows, lo + step)
            out = (verdict[lo:hi], runs_used[lo:hi], successes[lo:hi])
            part = None if offset is None else offset[lo:hi]
            _byte_block(outcomes[lo:hi, :t], table, part, t, out)
        return verdict, runs_used, successes
    _cell_blocks(outcomes, tables, which, min_runs, t, (verdict, runs_used, successes))
    return verdict, runs_used, successes


def _first_of(codes, counts, n, t, out) -> None:
    """Write each row's first non-continue code of ``codes`` (columns at runs ``n``), its
    run and the successes ``counts`` there (else continue, ``t`` and the last count)."""
    verdict, runs_used, successes = out
    decided = codes != CONTINUE_CODE
    first = decided.argmax(axis=1)
    r = np.arange(codes.shape[0])
    hit = decided[r, first]
    verdict[:] = np.where(hit, codes[r, first], CONTINUE_CODE)
    runs_used[:] = np.where(hit, n[first], t)
    successes[:] = np.where(hit, counts[r, first], counts[:, -1])


def _cumulative(outcomes: np.ndarray, lo: int, hi: int, t: int) -> np.ndarray:
    count_dtype = np.int16 if t < np.iinfo(np.int16).max else np.int64
    return np.cumsum(outcomes[lo:hi, :t], axis=1, dtype=count_dtype)


def _cell_blocks(outcomes, tables, which, min_runs, t, out) -> None:
    """``first_decisions`` by one verdict-table look-up per cell, block by block."""
    flat_table = tables.ravel()
    index_dtype = np.int32 if flat_table.size < 2**31 else np.int64  # half the bytes
    which = which.astype(index_dtype) * (t + 1) ** 2
    first_col = min_runs - 1  # column j holds run n = j + 1
    offsets = ((np.arange(first_col, t) + 1) * (t + 1)).astype(index_dtype)[None, :]
    n = np.arange(first_col, t) + 1
    step = max(1, CHUNK_ELEMENTS // t)
    for lo in range(0, len(which), step):
        hi = min(len(which), lo + step)
        counts = _cumulative(outcomes, lo, hi, t)
        if first_col >= t:
            out[2][lo:hi] = counts[:, -1]
            continue
        counts = counts[:, first_col:]
        index = counts.astype(index_dtype)
        index += offsets
        if tables.shape[0] > 1:  # one p0 for every row: its table starts at 0
            index += which[lo:hi, None]
        _first_of(flat_table.take(index), counts, n, t, tuple(o[lo:hi] for o in out))


def _rule_blocks(outcomes, p0, rule, min_runs, t, out) -> None:
    """``first_decisions`` by the rule on the cumulative counts, block by block."""
    first_col = min_runs - 1
    n = np.arange(first_col, t) + 1
    step = max(1, CHUNK_ELEMENTS // t)
    for lo in range(0, outcomes.shape[0], step):
        hi = min(outcomes.shape[0], lo + step)
        counts = _cumulative(outcomes, lo, hi, t)
        if first_col >= t:
            out[2][lo:hi] = counts[:, -1]
            continue
        counts = counts[:, first_col:]
        codes = np.asarray(rule(counts, n[None, :], p0[lo:hi, None]), dtype=np.int8)
        _first_of(codes, counts, n, t, tuple(o[lo:hi] for o in out))


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
