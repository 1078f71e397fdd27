"""Revisions of a procedure graph and their gating (seed: "Revisions are gated").

``propose_revision`` moves the current graph state aside whole as the held prior (its
graph, evidence, flags and findings) and starts the revision from the evidence of the
node ids and transitions it keeps. ``judge_revision`` replays the ledger since the
revision was proposed, event by event, asking the primary gate and the cost gate after
each run (of the revision, or of the prior served concurrently) and applying their
combined verdict (``gates.combine_gate_verdicts``) at the first event where it is not
"continue": accept keeps the revision, revert puts the held prior state back exactly as
it was (plus its concurrent runs) and files the revision under ``rejected_revisions``.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field, replace

from procmem_core.errors import ProcmemError
from procmem_core.gates import (
    CONTINUE,
    Gate,
    GateDecision,
    GateRecord,
    RevisionStats,
    combine_gate_verdicts,
)
from procmem_core.graph.entry import ProcedureEntry
from procmem_core.graph.graph import ProcedureGraph
from procmem_core.graph.ledger import RunRecord
from procmem_core.graph.records import RejectedRevision, RevisionEntry


class RevisionError(ProcmemError):
    """A revision that cannot be proposed now (rejected before, already pending, unchanged)."""


def revision_stats(entry: ProcedureEntry, revision: int) -> RevisionStats:
    """The ledger statistics of one revision of ``entry`` (runs, successes, success costs,
    and its outcomes in ledger order)."""
    tally = entry.by_revision.get(revision)
    if tally is None:
        return RevisionStats(0, 0)
    outcomes = tuple([r.ok for r in entry.runs if r.revision == revision])
    if len(outcomes) != tally.runs:  # runs older than the ledger kept in memory
        outcomes = ()
    # the store's own counts: the invariants ``RevisionStats`` checks hold by construction
    return RevisionStats.of_ledger(
        tally.runs, tally.successes, tuple(tally.success_costs), outcomes
    )


def _set_history_outcome(entry: ProcedureEntry, revision: int, outcome: str) -> None:
    """The revision's verdict, decided at the ledger's last run id."""
    decided = entry.runs[-1].run_id if entry.runs else entry.pending_since
    entry.history = [
        replace(h, outcome=outcome, decided_at=decided) if h.revision == revision else h
        for h in entry.history
    ]


def propose_revision(
    entry: ProcedureEntry, graph: ProcedureGraph, reason: str, force: bool, last_run_id: int
) -> None:
    """Make ``graph`` the current graph on trial; the current state is held as the prior.

    Refused (``RevisionError``) while another revision is pending, when the graph equals
    the current one, and when its canonical hash was rejected before (unless ``force``).
    ``last_run_id``: the ledger's last run id now (the prior's later runs are concurrent).
    """
    digest = graph.canonical_hash()
    if entry.held is not None:
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
    revision = entry.next_revision
    entry.next_revision += 1
    entry.held = entry.current
    entry.current = entry.held.revised(graph, revision)
    entry.pending_reason = reason
    entry.pending_since = last_run_id
    entry.history.append(
        RevisionEntry(
            revision=revision,
            graph=graph,
            reason=reason,
            outcome="pending",
            proposed_at=last_run_id,
        )
    )


def _record(
    entry: ProcedureEntry, d: GateDecision, prior: RevisionStats, rev: RevisionStats, outcome: str
) -> GateRecord:
    return GateRecord(
        key=entry.key,
        namespace=entry.namespace,
        prior_revision=entry.held.revision if entry.held else -1,
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


@dataclass
class _Arm:
    """Running statistics of one arm while the ledger is replayed."""

    runs: int
    successes: int
    costs: list[float]
    outcomes: list[bool] | None  # None: the ledger in memory does not hold them all
    concurrent: list[bool] = field(default_factory=list)
    _costs: tuple[float, ...] = field(default=(), repr=False, compare=False)
    _concurrent: tuple[bool, ...] = field(default=(), repr=False, compare=False)

    def add(self, run: RunRecord, concurrent: bool) -> None:
        self.runs += 1
        self.successes += int(run.ok)
        if run.ok and run.cost is not None:
            self.costs.append(float(run.cost))
        if self.outcomes is not None:
            self.outcomes.append(run.ok)
        if concurrent:
            self.concurrent.append(run.ok)

    def stats(self) -> RevisionStats:
        # the lists only grow, so a kept tuple of the same length is still their copy (the
        # costs and concurrent outcomes change far less often than the outcomes)
        if len(self._costs) != len(self.costs):
            self._costs = tuple(self.costs)
        if len(self._concurrent) != len(self.concurrent):
            self._concurrent = tuple(self.concurrent)
        return RevisionStats.of_ledger(
            self.runs, self.successes, self._costs, tuple(self.outcomes or ()), self._concurrent
        )


def _prior_at_proposal(entry: ProcedureEntry, tail: list[RunRecord]) -> _Arm:
    """The prior revision's statistics when the revision was proposed: its tally less the
    runs it received since (the concurrent ones, the tail of its tally in ledger order)."""
    prior = entry.held.revision
    now = revision_stats(entry, prior)
    mine = [r for r in tail if r.revision == prior]
    ok = [r for r in mine if r.ok]
    n_costs = sum(r.cost is not None for r in ok)
    costs = list(now.success_costs[: len(now.success_costs) - n_costs])
    outcomes = list(now.outcomes[: len(now.outcomes) - len(mine)]) if now.outcomes else None
    if now.runs == 0:
        outcomes = []
    return _Arm(now.runs - len(mine), now.successes - len(ok), costs, outcomes)


@dataclass
class Replay:
    """The ledger since a revision's proposal replayed as gate inputs, resumable: the two
    arms after the first ``events`` events (the last of them run ``through``), for the
    revision ``(revision, prior_revision, since)`` and the gates that judged them."""

    key: tuple[int, int, int]
    prior: _Arm
    rev: _Arm
    events: int = 0
    through: int = 0
    gates: tuple[Gate, Gate] | None = None

    @classmethod
    def at_proposal(cls, entry: ProcedureEntry) -> Replay:
        start = bisect_right(entry.runs, entry.pending_since, key=lambda r: r.run_id)
        prior = _prior_at_proposal(entry, entry.runs[start:])
        key = (entry.revision, entry.held.revision, entry.pending_since)
        return cls(key, prior, _Arm(0, 0, [], []), through=entry.pending_since)

    def advance(self, entry: ProcedureEntry) -> list[tuple[RevisionStats, RevisionStats]]:
        """(prior, revision) statistics after each event newer than ``through`` (a run of
        either arm is an event), in ledger order; with none, the statistics now (after
        the last event, or at the proposal)."""
        start = bisect_right(entry.runs, self.through, key=lambda r: r.run_id)
        arms = {entry.revision: (self.rev, False), entry.held.revision: (self.prior, True)}
        pairs: list[tuple[RevisionStats, RevisionStats]] = []
        for run in entry.runs[start:]:
            if run.revision in arms:
                arm, concurrent = arms[run.revision]
                arm.add(run, concurrent)
                self.events += 1
                # statistics are immutable: the arm without this run keeps its last ones
                last = pairs[-1] if pairs else None
                if last is None:
                    pairs.append((self.prior.stats(), self.rev.stats()))
                elif concurrent:
                    pairs.append((self.prior.stats(), last[1]))
                else:
                    pairs.append((last[0], self.rev.stats()))
        if entry.runs:
            self.through = max(self.through, entry.runs[-1].run_id)
        return pairs or [(self.prior.stats(), self.rev.stats())]


def replay_events(entry: ProcedureEntry) -> list[tuple[RevisionStats, RevisionStats]]:
    """(prior, revision) statistics after each ledger event since the revision was
    proposed, in ledger order (a run of either arm is an event); with no event yet, the
    statistics at the proposal."""
    return Replay.at_proposal(entry).advance(entry)


def _resume(entry: ProcedureEntry, gate: Gate, cost_gate: Gate) -> Replay:
    """The replay these gates (the same objects: gates are immutable) left "continue" at
    the last judge of this pending revision (``ProcedureEntry.judged``), else a new one."""
    memo, entry.judged = entry.judged, None  # taken: put back only once judged through
    key = (entry.revision, entry.held.revision, entry.pending_since)
    same = memo is not None and memo.key == key and memo.gates is not None
    if same and memo.gates[0] is gate and memo.gates[1] is cost_gate:
        return memo
    return Replay.at_proposal(entry)


def judge_revision(
    entry: ProcedureEntry, gate: Gate, cost_gate: Gate
) -> tuple[str, tuple[GateRecord, ...]]:
    """Ask both gates about the pending revision and apply the combined verdict.

    The gates are sequential tests, so the decision must not depend on how often
    ``evolve`` is called: the ledger since the proposal is replayed event by event and the
    first event at which the combined verdict is not "continue" decides (a boundary
    crossed at run 7 reverts even if evolve first looks at run 10). The prior's
    ``RevisionStats`` carry its concurrent outcomes so far, the revision's its
    ``outcomes``. Returns the outcome ("accepted", "reverted" or "pending") and the two
    decisions (primary first, then cost) at the deciding event, each recorded with the
    combined outcome.

    At each event the gates are asked only for their verdict (``Gate.verdict``, the verdict
    of ``decide``); the full decisions are made at the deciding (or last) event. A gate's
    decision is a function of the two statistics and the ledger only grows, so the replay
    an earlier call left at "continue" with the same gates resumes after the events it
    judged (``Replay``, kept on the entry in memory); with no new event the last one is
    asked again.
    """
    if entry.held is None:
        raise RevisionError(f"{entry.ref}: no revision is pending")
    replay = _resume(entry, gate, cost_gate)
    verdict, cost_verdict = gate.verdict, cost_gate.verdict  # asked at every event
    for prior, rev in replay.advance(entry):
        if combine_gate_verdicts(verdict(prior, rev), cost_verdict(prior, rev)) != CONTINUE:
            break
    primary, cost = gate.decide(prior, rev), cost_gate.decide(prior, rev)  # at the deciding event
    action = combine_gate_verdicts(primary.verdict, cost.verdict)
    records = (
        _record(entry, primary, prior, rev, action),
        _record(entry, cost, prior, rev, action),
    )
    if action == CONTINUE:
        replay.gates = (gate, cost_gate)
        entry.judged = replay
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
        entry.current, entry.held, entry.pending_reason = entry.held, None, None
        return "reverted", records
    if action == "accept":
        _set_history_outcome(entry, entry.revision, "accepted")
        entry.held, entry.pending_reason = None, None
        return "accepted", records
    return "pending", records
