"""``evolve_entry``: one evolve of one procedure (seed: "Learning from runs").

1. A pending revision goes to the gates (``revision.judge_revision``), which may accept or
   revert it (a revert restores the prior graph's state exactly as it was).
2. Once ``min_runs`` runs are in: proven path, dead ends, fail-prone nodes and
   transitions (``findings``, from the runs that reported a path), the template bar and
   quarantine (``strike_limit``, 0 = off) (``status``).

The result depends on the ledger, not on how often evolve is called: the aggregates are
folded run by run as runs are recorded (and carry the template bar's stability count,
``GraphState.stable_runs``), the gates replay the ledger in order, and the findings are
pure functions of the aggregates. So evolving after every run and once at the end give
the same aggregates, findings and status. The watermark ``ledger_folded_through`` is the
last run id an evolve has seen (``runs_folded`` counts the runs newer than it).

Template bar, per graph revision: at least 5 successes, a success rate of at least 0.8,
no revision pending, and a topology (graph, proven path, dead ends) that the last
``min_runs`` runs left unchanged.

Failure streak scope (``streak_scope``): ``"revision"`` (default) counts the trailing
failed runs of the current graph revision, so a revision starts without one and a revert
restores the prior's; ``"ledger"`` is the literal reading, the procedure's trailing
failed ledger rows whatever revision they ran on (kept for comparison: a rejected
revision's failures then quarantine the graph it failed against).
"""

from __future__ import annotations

from bisect import bisect_right

from procmem_core.errors import check_choice
from procmem_core.gates import Gate, GateRecord
from procmem_core.graph import findings as fd
from procmem_core.graph.entry import ProcedureEntry
from procmem_core.graph.records import EvolveReport
from procmem_core.graph.revision import judge_revision
from procmem_core.graph.status import meets_template_bar, should_quarantine

STREAK_SCOPES = ("revision", "ledger")


def check_streak_scope(scope: str) -> str:
    return check_choice("streak_scope", scope, STREAK_SCOPES)


def ledger_streak(entry: ProcedureEntry) -> int:
    """Trailing failed runs of the whole ledger, whatever revision they ran on."""
    n = 0
    for run in reversed(entry.runs):
        if run.ok:
            break
        n += 1
    return n


def refresh_findings(
    entry: ProcedureEntry,
    min_runs: int,
    strike_limit: int,
    streak_scope: str,
    keep_quarantine: bool = False,
) -> bool:
    """Recompute the findings and flags of the current graph from its aggregates; True
    when the topology signature changed since the previous evolve. ``keep_quarantine``:
    a quarantine stands until the policy releases it at a run (half-open probes), even
    with the streak below the limit."""
    state = entry.current
    agg, graph = state.agg, state.graph
    before = (graph.canonical_hash(), state.proven_path, state.dead_ends)
    state.proven_path = fd.proven_path(graph, agg)
    state.dead_ends = fd.dead_ends(graph, agg)
    state.fail_prone_steps = fd.fail_prone(agg.node_runs, agg.path_runs, agg.path_successes)
    state.fail_prone_transitions = fd.fail_prone(agg.edge_runs, agg.path_runs, agg.path_successes)
    stable = state.stable_runs >= min_runs and entry.held is None
    state.template = meets_template_bar(agg.successes, agg.runs, stable)
    streak = agg.failure_streak if streak_scope == "revision" else ledger_streak(entry)
    held = keep_quarantine and state.quarantined and strike_limit > 0  # released at a run
    state.quarantined = should_quarantine(streak, strike_limit) or held
    return before != (graph.canonical_hash(), state.proven_path, state.dead_ends)


def evolve_entry(
    entry: ProcedureEntry,
    min_runs: int,
    strike_limit: int,
    gate: Gate,
    cost_gate: Gate,
    streak_scope: str = "revision",
    keep_quarantine: bool = False,
) -> tuple[EvolveReport, tuple[GateRecord, ...]]:
    """Evolve ``entry`` in place (see the module doc); return the report and gate records."""
    previous = entry.status
    folded = len(entry.runs) - bisect_right(entry.runs, entry.watermark, key=lambda r: r.run_id)
    entry.watermark = entry.runs[-1].run_id if entry.runs else entry.watermark
    outcome, records = None, ()
    if entry.held is not None:
        outcome, records = judge_revision(entry, gate, cost_gate)
    agg = entry.agg
    evolved = agg.runs >= min_runs
    changed = (
        refresh_findings(entry, min_runs, strike_limit, streak_scope, keep_quarantine)
        if evolved
        else False
    )
    state = entry.current
    report = EvolveReport(
        key=entry.key,
        namespace=entry.namespace,
        revision=entry.revision,
        runs_folded=folded,
        runs=agg.runs,
        successes=agg.successes,
        evolved=evolved,
        proven_path=state.proven_path,
        dead_ends=state.dead_ends,
        fail_prone_steps=state.fail_prone_steps,
        fail_prone_transitions=state.fail_prone_transitions,
        topology_changed=changed,
        previous_status=previous,
        status=entry.status,
        gate_decisions=records,
        revision_outcome=outcome,
    )
    return report, records
