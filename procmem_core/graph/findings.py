"""What ``ProcedureStore.evolve`` finds in the ledger, as pure functions (seed: "Learning
from runs").

- ``proven_path``: from the entry node with the most successful runs, follow at each node
  the outgoing edge with the most successful traversals (ties: graph order) until an exit,
  a node with no successful way on, or a revisit.
- ``dead_ends``: step and action nodes no run used (reversible: a later run that uses one
  clears it, since the flag is recomputed from the aggregates at every evolve).
- ``fail_prone``: nodes and transitions whose failure rate clearly exceeds the base rate,
  by a one-sided Fisher exact test (``FAIL_PRONE_LEVEL`` with Bonferroni correction,
  at least ``FAIL_PRONE_MIN_RUNS`` runs through the item).

Only runs that report a path are evidence about nodes and transitions
(``RunAggregates.path_runs``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

try:  # the ufunc scipy.stats.hypergeom.sf evaluates inside its support (scipy >= 1.11)
    from scipy.special._ufuncs import _hypergeom_sf
except ImportError:  # pragma: no cover - another scipy: the public call
    _hypergeom_sf = None

from procmem_core.graph.graph import ProcedureGraph
from procmem_core.graph.ledger import RunAggregates, Tally

FAIL_PRONE_LEVEL = 0.05
FAIL_PRONE_MIN_RUNS = 5
SMALL_ITEMS = 16
"""``fail_prone`` tests at most this many items one by one on Python numbers (numpy's
per-call overhead dominates a few items), more as arrays."""
DEAD_END_KINDS = ("step", "action")


def fail_prone_pvalues(
    runs_through: ArrayLike, failures_through: ArrayLike, total_runs: int, total_failures: int
) -> np.ndarray:
    """One-sided Fisher exact p-values: is failing more likely in runs through the item?

    With N runs and F failures in all, an item used by n runs of which f failed:
    ``p = P(X >= f)``, ``X ~ Hypergeometric(N, F, n)`` (the null: the item's runs fail at
    the base rate; conditioning on the margins makes the test exact).
    """
    n = np.asarray(runs_through, dtype=np.int64)
    f = np.asarray(failures_through, dtype=np.int64)
    if total_runs <= 0:
        return np.ones(n.shape)
    return _hypergeom_survival(f - 1, total_runs, np.asarray(total_failures), n)


def _hypergeom_survival(k: np.ndarray, m: int, fails: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``stats.hypergeom.sf(k, m, fails, n)``, bit for bit, without the distribution
    machinery's argument parsing (about 100 times faster on a few items): for valid
    arguments 1 below the support, 0 at or above its top, else the same ufunc, clipped to
    [0, 1] (``rv_discrete.sf``; tests/procmem_core/graph/test_findings_fast.py checks a
    grid); any other argument goes to scipy."""
    integral = isinstance(m, int | np.integer) and fails.dtype.kind in "iu"
    valid = integral and _hypergeom_sf is not None
    if not valid or np.any((fails < 0) | (fails > m) | (n < 0) | (n > m)):
        return stats.hypergeom.sf(k, m, fails, n)
    k, fails, n = np.broadcast_arrays(k, fails, n)
    low, high = np.maximum(n - (m - fails), 0), np.minimum(fails, n)
    out = np.where(k < low, 1.0, 0.0)
    inside = (k >= low) & (k < high)
    if inside.any():
        out[inside] = np.clip(_hypergeom_sf(k[inside], fails[inside], n[inside], m), 0, 1)
    return out[()] if out.ndim == 0 else out


@dataclass(frozen=True, kw_only=True)
class FailProne:
    """A flagged node (``dst`` is None) or transition, with its evidence and test result."""

    src: str
    dst: str | None
    runs: int
    failures: int
    failure_rate: float
    base_failure_rate: float
    p_value: float


def fail_prone(
    counts: Mapping[str, Tally] | Mapping[tuple[str, str], Tally],
    total_runs: int,
    total_successes: int,
    level: float = FAIL_PRONE_LEVEL,
    min_runs: int = FAIL_PRONE_MIN_RUNS,
) -> tuple[FailProne, ...]:
    """Items (``{item: Tally(runs, successes)}``) flagged fail-prone, most significant first.

    Tested items have at least ``min_runs`` runs; an item is flagged when its failure
    rate exceeds the base rate and its p-value is at most ``level / tested`` (Bonferroni).
    """
    items = [(k, v) for k, v in counts.items() if v.runs >= min_runs]
    if not items or total_runs <= 0:
        return ()
    total_f = total_runs - total_successes
    base = total_f / total_runs
    # only an item failing more often than the base rate can be flagged: test those (the
    # failure rate f / n is one IEEE division, the same in Python as in numpy)
    if not any((v.runs - v.successes) / v.runs > base for _, v in items):
        return ()
    small = len(items) <= SMALL_ITEMS and _hypergeom_sf is not None
    if small and all(v.runs <= total_runs for _, v in items):  # scipy's valid arguments
        return _fail_prone_small(items, total_runs, total_f, level)
    n = np.array([v.runs for _, v in items])
    f = n - np.array([v.successes for _, v in items])
    worse = f / n > base
    p = np.ones(n.shape)
    p[worse] = fail_prone_pvalues(n[worse], f[worse], total_runs, total_f)
    flagged = (p <= level / len(items)) & worse
    out = []
    for i in np.flatnonzero(flagged):
        k = items[i][0]
        src, dst = (k, None) if isinstance(k, str) else k
        out.append(
            FailProne(
                src=src,
                dst=dst,
                runs=int(n[i]),
                failures=int(f[i]),
                failure_rate=float(f[i] / n[i]),
                base_failure_rate=base,
                p_value=float(p[i]),
            )
        )
    return tuple(sorted(out, key=lambda x: (x.p_value, x.src, x.dst or "")))


def _fail_prone_small(
    items: list[tuple[object, Tally]], total_runs: int, total_f: int, level: float
) -> tuple[FailProne, ...]:
    """``fail_prone``'s answer item by item: the same failure rates (one IEEE division of
    two ints, as numpy's), the same p-values (``_hypergeom_survival``'s branches, its ufunc
    on each item inside the support, clipped to [0, 1]; tests/procmem_core/graph/
    test_findings_fast.py compares both paths) and the same order."""
    base = total_f / total_runs
    bar = level / len(items)
    out = []
    for k, v in items:
        n, f = v.runs, v.runs - v.successes
        if not f / n > base:
            continue
        low, high = max(n - (total_runs - total_f), 0), min(total_f, n)
        if f - 1 < low:
            p = 1.0
        elif f - 1 >= high:
            p = 0.0
        else:
            p = _clip_unit(float(_hypergeom_sf(f - 1, total_f, n, total_runs)))
        if p <= bar:
            src, dst = (k, None) if isinstance(k, str) else k
            out.append(FailProne(src=src, dst=dst, runs=n, failures=f, failure_rate=f / n,
                                 base_failure_rate=base, p_value=p))  # fmt: skip
    return tuple(sorted(out, key=lambda x: (x.p_value, x.src, x.dst or "")))


def _clip_unit(x: float) -> float:
    """``float(np.clip(x, 0, 1))`` for one float, as numpy clips it: below 0 becomes 0.0,
    above 1 becomes 1.0, anything else (NaN, -0.0) stays."""
    if x < 0.0:
        return 0.0
    return 1.0 if x > 1.0 else x


def proven_path(graph: ProcedureGraph, agg: RunAggregates) -> tuple[str, ...]:
    """The path of most successful traversals (see the module doc); empty with no success."""
    entries = graph.entry_nodes()
    nodes, edges = agg.node_runs, agg.edge_runs
    if len(entries) == 1:
        start = entries[0]
    else:
        start = max(entries, key=lambda nid: (_successes(nodes, nid), -entries.index(nid)))
    if _successes(nodes, start) == 0:
        return ()
    path = [start]
    while True:
        best = None  # (successes, -position, dst): the most, then the first listed
        for i, e in enumerate(graph.out_edges(path[-1])):
            t = edges.get((e.src, e.dst))
            option = (0 if t is None else t.successes, -i, e.dst)
            if best is None or option > best:
                best = option
        if best is None or best[0] == 0 or best[2] in path:
            return tuple(path)
        path.append(best[2])


def dead_ends(graph: ProcedureGraph, agg: RunAggregates) -> tuple[str, ...]:
    """Step and action nodes that no run's path visited; none while no run reported a path
    (a run without a path, as ``run.complete`` records, says nothing about nodes)."""
    if agg.path_runs == 0:
        return ()
    used = agg.node_runs
    return tuple(
        n.id
        for n in graph.nodes
        if n.kind in DEAD_END_KINDS and (n.id not in used or not used[n.id].runs)
    )


def _successes(counts: Mapping[object, Tally], item: object) -> int:
    t = counts.get(item)
    return 0 if t is None else t.successes
