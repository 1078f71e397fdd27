"""Revisions of a procedure graph and their gating (seed: "Revisions are gated").

``propose_revision`` installs a new graph as the pending revision (keeping the evidence
of surviving node ids and transitions); ``judge_revision`` asks the primary gate and the
cost gate about a pending revision with the two revisions' ledger statistics and applies
their combined verdict (``gates.combine_gate_verdicts``): accept keeps the revision,
revert restores the prior graph and files the revision under ``rejected_revisions``.
"""

from __future__ import annotations

from procmem_core.errors import ProcmemError
from procmem_core.gates import (
    Gate,
    GateDecision,
    GateRecord,
    RevisionStats,
    combine_gate_verdicts,
)
from procmem_core.graph.entry import ProcedureEntry
from procmem_core.graph.graph import ProcedureGraph
from procmem_core.graph.records import PendingRevision, RejectedRevision, RevisionEntry


class RevisionError(ProcmemError):
    """A revision that cannot be proposed now (rejected before, already pending, unchanged)."""


def revision_stats(entry: ProcedureEntry, revision: int) -> RevisionStats:
    """The ledger statistics of one revision of ``entry`` (runs, successes, success costs,
    and its outcomes in ledger order)."""
    tally = entry.by_revision.get(revision)
    if tally is None:
        return RevisionStats(0, 0)
    outcomes = tuple(r.ok for r in entry.runs if r.revision == revision)
    if len(outcomes) != tally.runs:  # runs older than the ledger kept in memory
        outcomes = ()
    return RevisionStats(tally.runs, tally.successes, tuple(tally.success_costs), outcomes)


def _set_history_outcome(entry: ProcedureEntry, revision: int, outcome: str) -> None:
    entry.history = [
        RevisionEntry(revision=h.revision, graph=h.graph, reason=h.reason, outcome=outcome)
        if h.revision == revision
        else h
        for h in entry.history
    ]


def _install(entry: ProcedureEntry, graph: ProcedureGraph, revision: int) -> None:
    entry.graph = graph
    entry.revision = revision
    entry.agg.keep_only(frozenset(graph.node_ids), graph.edge_pairs())
    entry.template = False


def propose_revision(
    entry: ProcedureEntry, graph: ProcedureGraph, reason: str, force: bool
) -> None:
    """Make ``graph`` the current graph on trial; the old one becomes the pending prior.

    Refused (``RevisionError``) while another revision is pending, when the graph equals
    the current one, and when its canonical hash was rejected before (unless ``force``).
    """
    digest = graph.canonical_hash()
    if entry.pending is not None:
        raise RevisionError(
            f"{entry.ref}: revision {entry.revision} is still pending; run evolve until the "
            "gate accepts or reverts it"
        )
    if digest == entry.graph.canonical_hash():
        raise RevisionError(f"{entry.ref}: the proposed graph equals the current graph")
    rejected = [r.revision for r in entry.rejected if r.graph_hash == digest]
    if rejected and not force:
        raise RevisionError(
            f"{entry.ref}: this graph was rejected before (revision {rejected[-1]}); "
            "pass force=True to propose it again"
        )
    entry.pending = PendingRevision(
        prior_graph=entry.graph, prior_revision=entry.revision, reason=reason
    )
    revision = entry.next_revision
    entry.next_revision += 1
    _install(entry, graph, revision)
    entry.history.append(
        RevisionEntry(revision=revision, graph=graph, reason=reason, outcome="pending")
    )


def _record(
    entry: ProcedureEntry, d: GateDecision, prior: RevisionStats, rev: RevisionStats, outcome: str
) -> GateRecord:
    return GateRecord(
        key=entry.key,
        namespace=entry.namespace,
        prior_revision=entry.pending.prior_revision if entry.pending else -1,
        revision=entry.revision,
        gate=d.gate,
        verdict=d.verdict,
        reason=d.reason,
        runs_used=int(d.runs_used),
        statistic=float("nan") if d.statistic is None else float(d.statistic),
        prior_runs=prior.runs,
        prior_successes=prior.successes,
        revision_runs=rev.runs,
        revision_successes=rev.successes,
        outcome=outcome,
        reason_code=d.reason_code,
        p0_used=float(d.p0),
    )


def _sequential_stats(entry: ProcedureEntry) -> list[RevisionStats]:
    """The current revision's statistics after each of its runs, in ledger order.

    While a revision is pending every new run carries its number, so its runs are the
    ledger's tail: only that tail is read, not the whole ledger.
    """
    start = len(entry.runs)
    while start > 0 and entry.runs[start - 1].revision == entry.revision:
        start -= 1
    stats, successes, costs, outcomes = [], 0, [], []
    for n, run in enumerate(entry.runs[start:], 1):
        outcomes.append(run.ok)
        if run.ok:
            successes += 1
            if run.cost is not None:
                costs.append(float(run.cost))
        stats.append(RevisionStats(n, successes, tuple(costs), tuple(outcomes)))
    return stats


def judge_revision(
    entry: ProcedureEntry, gate: Gate, cost_gate: Gate
) -> tuple[str, tuple[GateRecord, ...]]:
    """Ask both gates about the pending revision and apply the combined verdict.

    The gates are sequential tests, so the decision must not depend on how often
    ``evolve`` is called: the revision's runs are replayed in ledger order and the first
    run count at which the combined verdict is not "continue" decides (a boundary crossed
    at run 7 reverts even if evolve first looks at run 10). The prior's statistics are
    fixed while the revision is pending (later runs carry the new revision). Returns the
    outcome ("accepted", "reverted" or "pending") and the two decisions (primary first,
    then cost) at the deciding run count, each recorded with the combined outcome.
    """
    pending = entry.pending
    if pending is None:
        raise RevisionError(f"{entry.ref}: no revision is pending")
    prior = revision_stats(entry, pending.prior_revision)
    for rev in _sequential_stats(entry) or [RevisionStats(0, 0)]:
        primary = gate.decide(prior, rev)
        cost = cost_gate.decide(prior, rev)
        action = combine_gate_verdicts(primary.verdict, cost.verdict)
        if action != "continue":
            break
    records = tuple(_record(entry, d, prior, rev, action) for d in (primary, cost))
    if action == "revert":
        reason = "; ".join(
            f"{d.gate}: {d.reason}" for d in (primary, cost) if d.verdict == "revert"
        )
        entry.rejected.append(
            RejectedRevision(
                revision=entry.revision,
                graph_hash=entry.graph.canonical_hash(),
                graph=entry.graph,
                reason=reason,
            )
        )
        _set_history_outcome(entry, entry.revision, "reverted")
        entry.pending = None
        _install(entry, pending.prior_graph, pending.prior_revision)
        return "reverted", records
    if action == "accept":
        _set_history_outcome(entry, entry.revision, "accepted")
        entry.pending = None
        return "accepted", records
    return "pending", records
