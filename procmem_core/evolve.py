"""What ``ProcedureStore.evolve`` decides, as pure functions (seed: "Learning from runs").

- ``proven_path``: from the entry node with the most successful runs, follow at each node
  the outgoing edge with the most successful traversals (ties: graph order) until an exit,
  a node with no successful way on, or a revisit.
- ``dead_ends``: step and action nodes no run used (reversible: a later run that uses one
  clears it, since the flag is recomputed from the aggregates at every evolve).
- ``fail_prone``: nodes and transitions whose failure rate clearly exceeds the base rate,
  by a one-sided Fisher exact test (``FAIL_PRONE_LEVEL`` with Bonferroni correction,
  at least ``FAIL_PRONE_MIN_RUNS`` runs through the item).
- ``trust_status``, ``meets_template_bar``, ``should_quarantine``: the status rules,
  vectorized so the simulators can apply them to arrays of procedures.
- ``combine_gate_verdicts``: how the primary gate and the cost gate decide together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from procmem_core.errors import ParameterError
from procmem_core.graph import ProcedureGraph
from procmem_core.ledger import RunAggregates
from procmem_core.sequential import VERDICT_CODES, VERDICT_NAMES

STATUSES = ("authored", "candidate", "exercised", "template", "quarantined")
"""Trust statuses; ``trust_status`` returns indices into this tuple."""
AUTHORED, CANDIDATE, EXERCISED, TEMPLATE, QUARANTINED = range(5)

TEMPLATE_MIN_SUCCESSES = 5
TEMPLATE_MIN_RATE = 0.8
FAIL_PRONE_LEVEL = 0.05
FAIL_PRONE_MIN_RUNS = 5
DEAD_END_KINDS = ("step", "action")


def trust_status(
    runs: ArrayLike, candidate: ArrayLike, template: ArrayLike, quarantined: ArrayLike
) -> np.ndarray | int:
    """Status code (index into ``STATUSES``): quarantined > template > exercised (runs > 0)
    > candidate (machine-mined, never run) > authored (registered, never run)."""
    never_run = np.where(candidate, CANDIDATE, AUTHORED)
    out = np.where(template, TEMPLATE, np.where(np.asarray(runs) > 0, EXERCISED, never_run))
    out = np.where(quarantined, QUARANTINED, out)
    return int(out) if out.ndim == 0 else out


def meets_template_bar(
    successes: ArrayLike, runs: ArrayLike, topology_stable: ArrayLike
) -> np.ndarray | bool:
    """Template bar: ``successes >= 5``, ``successes / runs >= 0.8`` and a stable topology."""
    s = np.asarray(successes, dtype=float)
    n = np.asarray(runs, dtype=float)
    rate_ok = s >= TEMPLATE_MIN_RATE * n  # = rate >= 0.8 without dividing by zero
    out = (s >= TEMPLATE_MIN_SUCCESSES) & rate_ok & np.asarray(topology_stable, bool)
    return bool(out) if out.ndim == 0 else out


def should_quarantine(failure_streak: ArrayLike, strike_limit: int) -> np.ndarray | bool:
    """Quarantine when the last ``strike_limit`` runs all failed; ``strike_limit = 0`` is off."""
    out = (strike_limit > 0) & (np.asarray(failure_streak) >= max(strike_limit, 1))
    return bool(out) if np.ndim(out) == 0 else out


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
    return stats.hypergeom.sf(f - 1, total_runs, total_failures, n)


@dataclass(frozen=True)
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
    counts: Mapping[str, Sequence[int]] | Mapping[tuple[str, str], Sequence[int]],
    total_runs: int,
    total_successes: int,
    level: float = FAIL_PRONE_LEVEL,
    min_runs: int = FAIL_PRONE_MIN_RUNS,
) -> tuple[FailProne, ...]:
    """Items (``{item: [runs, successes]}``) flagged fail-prone, most significant first.

    Tested items have at least ``min_runs`` runs; an item is flagged when its failure
    rate exceeds the base rate and its p-value is at most ``level / tested`` (Bonferroni).
    """
    items = [(k, v) for k, v in counts.items() if v[0] >= min_runs]
    if not items or total_runs <= 0:
        return ()
    n = np.array([v[0] for _, v in items])
    f = n - np.array([v[1] for _, v in items])
    total_f = total_runs - total_successes
    p = fail_prone_pvalues(n, f, total_runs, total_f)
    base = total_f / total_runs
    flagged = (p <= level / len(items)) & (f / n > base)
    out = []
    for i in np.flatnonzero(flagged):
        k = items[i][0]
        src, dst = (k, None) if isinstance(k, str) else k
        out.append(FailProne(src, dst, int(n[i]), int(f[i]), float(f[i] / n[i]), base, float(p[i])))
    return tuple(sorted(out, key=lambda x: (x.p_value, x.src, x.dst or "")))


def proven_path(graph: ProcedureGraph, agg: RunAggregates) -> tuple[str, ...]:
    """The path of most successful traversals (see the module doc); empty with no success."""
    entries = graph.entry_nodes()
    start = max(entries, key=lambda nid: (agg.node(nid).successes, -entries.index(nid)))
    if agg.node(start).successes == 0:
        return ()
    path = [start]
    while True:
        options = [
            (agg.edge(*e.pair).successes, -i, e.dst)
            for i, e in enumerate(graph.out_edges(path[-1]))
        ]
        best = max(options, default=None)
        if best is None or best[0] == 0 or best[2] in path:
            return tuple(path)
        path.append(best[2])


def dead_ends(graph: ProcedureGraph, agg: RunAggregates) -> tuple[str, ...]:
    """Step and action nodes that no run's path visited."""
    return tuple(n.id for n in graph.nodes if n.kind in DEAD_END_KINDS and agg.node(n.id).runs == 0)


def combine_gate_verdicts(primary: str | ArrayLike, cost: str | ArrayLike) -> str | np.ndarray:
    """The store's rule for a pending revision: revert if either gate says revert (the
    cost gate has a veto at every evolve), else accept if the primary gate accepts, else
    continue. The cost gate alone never accepts nor delays an acceptance.

    Takes two verdict names (returns a name) or arrays of int8 verdict codes
    (``sequential.VERDICT_CODES``; returns codes), so simulators apply the same rule.
    """
    if isinstance(primary, str) or isinstance(cost, str):
        for name, v in (("primary", primary), ("cost", cost)):
            if v not in VERDICT_CODES:
                raise ParameterError(name, v, f"one of {VERDICT_NAMES}")
        codes = combine_gate_verdicts(np.int8(VERDICT_CODES[primary]), np.int8(VERDICT_CODES[cost]))
        return VERDICT_NAMES[int(codes)]
    p, c = np.asarray(primary), np.asarray(cost)
    revert, accept = VERDICT_CODES["revert"], VERDICT_CODES["accept"]
    out = np.where(
        (p == revert) | (c == revert),
        revert,
        np.where(p == accept, accept, VERDICT_CODES["continue"]),
    )
    return out.astype(np.int8)


@dataclass(frozen=True)
class GateRecord:
    """One gate decision the store made, as logged (one row of the simulators' table)."""

    key: str
    namespace: str
    prior_revision: int
    revision: int
    gate: str
    verdict: str
    reason: str
    runs_used: int
    statistic: float
    prior_runs: int
    prior_successes: int
    revision_runs: int
    revision_successes: int
    outcome: str


@dataclass(frozen=True)
class EvolveReport:
    """What one ``evolve`` call folded, found and decided.

    ``evolved`` is False while fewer than ``min_runs`` runs are in (nothing below it is
    then recomputed). ``revision_outcome`` is "accepted", "reverted", "pending" or None
    (no revision was pending).
    """

    key: str
    namespace: str
    revision: int
    runs_folded: int
    runs: int
    successes: int
    evolved: bool
    proven_path: tuple[str, ...]
    dead_ends: tuple[str, ...]
    fail_prone_steps: tuple[FailProne, ...]
    fail_prone_transitions: tuple[FailProne, ...]
    topology_changed: bool
    previous_status: str
    status: str
    gate_decisions: tuple[GateRecord, ...]
    revision_outcome: str | None
