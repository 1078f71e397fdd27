"""``evolve_entry``: one evolve of one procedure (seed: "Learning from runs").

1. A pending revision goes to the gates (``revision.judge_revision``), which may accept or
   revert it.
2. Once ``min_runs`` runs are in: proven path, dead ends, fail-prone nodes and
   transitions (``findings``), the template bar (topology unchanged since the last
   evolve, no revision pending) and quarantine (``strike_limit``, 0 = off) (``status``).

Runs newer than the watermark ``ledger_folded_through`` are counted as folded; the
aggregates themselves are kept current by every ``record_run``.
"""

from __future__ import annotations

from bisect import bisect_right

from procmem_core.gates import Gate, GateRecord
from procmem_core.graph import findings as fd
from procmem_core.graph.entry import ProcedureEntry
from procmem_core.graph.records import EvolveReport
from procmem_core.graph.revision import judge_revision
from procmem_core.graph.status import meets_template_bar, should_quarantine


def _run_id(run) -> int:
    return run.run_id


def refresh_findings(entry: ProcedureEntry, strike_limit: int) -> bool:
    """Recompute the findings and flags from the aggregates; True when the topology
    signature (graph, proven path, dead ends) changed since the last evolve."""
    agg = entry.agg
    entry.proven_path = fd.proven_path(entry.graph, agg)
    entry.dead_ends = fd.dead_ends(entry.graph, agg)
    entry.fail_prone_steps = fd.fail_prone(agg.node_runs, agg.path_runs, agg.path_successes)
    entry.fail_prone_transitions = fd.fail_prone(agg.edge_runs, agg.path_runs, agg.path_successes)
    signature = (entry.graph.canonical_hash(), entry.proven_path, entry.dead_ends)
    changed = signature != entry.topology
    entry.topology = signature
    stable = not changed and entry.pending is None
    entry.template = meets_template_bar(agg.successes, agg.runs, stable)
    entry.quarantined = should_quarantine(agg.failure_streak, strike_limit)
    return changed


def evolve_entry(
    entry: ProcedureEntry, min_runs: int, strike_limit: int, gate: Gate, cost_gate: Gate
) -> tuple[EvolveReport, tuple[GateRecord, ...]]:
    """Evolve ``entry`` in place (see the module doc); return the report and gate records."""
    previous = entry.status
    folded = len(entry.runs) - bisect_right(entry.runs, entry.watermark, key=_run_id)
    entry.watermark = entry.runs[-1].run_id if entry.runs else entry.watermark
    outcome, records = None, ()
    if entry.pending is not None:
        outcome, records = judge_revision(entry, gate, cost_gate)
    agg = entry.agg
    evolved = agg.runs >= min_runs
    changed = refresh_findings(entry, strike_limit) if evolved else False
    report = EvolveReport(
        key=entry.key,
        namespace=entry.namespace,
        revision=entry.revision,
        runs_folded=folded,
        runs=agg.runs,
        successes=agg.successes,
        evolved=evolved,
        proven_path=entry.proven_path,
        dead_ends=entry.dead_ends,
        fail_prone_steps=entry.fail_prone_steps,
        fail_prone_transitions=entry.fail_prone_transitions,
        topology_changed=changed,
        previous_status=previous,
        status=entry.status,
        gate_decisions=records,
        revision_outcome=outcome,
    )
    return report, records
