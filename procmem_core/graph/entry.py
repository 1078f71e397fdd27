"""``ProcedureEntry``: the store's mutable record of one procedure, and its JSON.

It holds who wrote the procedure and what it is for, its current graph state
(``GraphState``: graph, evidence, flags, findings), the prior graph's whole state while a
revision is pending (``held``), the revision bookkeeping, per-revision tallies and the
run ledger, and round-trips through JSON, which is all the SQLite journal stores besides
the run rows. The store (``graph.store``) orchestrates; this module only keeps state.
"""

from __future__ import annotations

import numbers
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from procmem_core.errors import ParameterError
from procmem_core.graph.graph import ProcedureGraph
from procmem_core.graph.ledger import TRACE_LIMIT, RevisionTally, RunAggregates, RunRecord
from procmem_core.graph.records import (
    Match,
    PendingRevision,
    RejectedRevision,
    RevisionEntry,
    StoredProcedure,
)
from procmem_core.graph.state import GraphState
from procmem_core.graph.status import STATUSES, status_code

STATE_FORMAT = 2
"""The entry JSON's format; format 1 (before ``GraphState``) is read and converted."""


@dataclass
class ProcedureEntry:
    """The store's mutable record of one procedure (see the module doc)."""

    key: str
    namespace: str
    name: str
    situation: str
    tags: tuple[str, ...]
    metadata: dict[str, Any]
    candidate: bool
    current: GraphState
    actor: str | None = None
    held: GraphState | None = None
    pending_reason: str | None = None
    pending_since: int = 0
    next_revision: int = 2
    rejected: list[RejectedRevision] = field(default_factory=list)
    history: list[RevisionEntry] = field(default_factory=list)
    by_revision: dict[int, RevisionTally] = field(default_factory=dict)
    runs: list[RunRecord] = field(default_factory=list)
    watermark: int = 0
    judged: Any = field(default=None, repr=False, compare=False)
    """In memory only: the ``revision.Replay`` the last judge of the pending revision left."""
    _pending_view: PendingRevision | None = field(default=None, repr=False, compare=False)
    """In memory only: the last ``pending`` record handed out (rebuilt when it differs)."""

    @classmethod
    def registered(
        cls, reason: str, graph: ProcedureGraph, steps: tuple[str, ...], **fields: Any
    ) -> ProcedureEntry:
        """A new entry at revision 1, its history opened with ``reason``."""
        entry = cls(current=GraphState(graph=graph, revision=1, steps=steps), **fields)
        entry.history.append(
            RevisionEntry(revision=1, graph=graph, reason=reason, outcome="original")
        )
        return entry

    # -- the current graph ----------------------------------------------------------

    @cached_property
    def ref(self) -> str:
        """``namespace/key`` (kept: an entry's key and namespace never change)."""
        return f"{self.namespace}/{self.key}"

    @property
    def graph(self) -> ProcedureGraph:
        return self.current.graph

    @property
    def revision(self) -> int:
        return self.current.revision

    @property
    def steps(self) -> tuple[str, ...]:
        return self.current.steps

    @property
    def agg(self) -> RunAggregates:
        return self.current.agg

    @property
    def pending(self) -> PendingRevision | None:
        """The public view of the held prior graph (None when no revision is pending)."""
        h = self.held
        if h is None:
            return None
        view = self._pending_view
        if (
            view is not None
            and view.prior_graph is h.graph
            and view.prior_revision == h.revision
            and view.reason == (self.pending_reason or "")
            and view.prior_steps is h.steps
            and view.since_run_id == self.pending_since
            and view.prior_fail_prone == h.fail_prone_steps + h.fail_prone_transitions
        ):  # the record is frozen: hand out the one made for this pending revision
            return view
        view = self._pending_view = PendingRevision(
            prior_graph=h.graph,
            prior_revision=h.revision,
            reason=self.pending_reason or "",
            prior_steps=h.steps,
            since_run_id=self.pending_since,
            prior_fail_prone=h.fail_prone_steps + h.fail_prone_transitions,
        )
        return view

    @property
    def status_code(self) -> int:
        c = self.current
        return status_code(c.agg.runs, self.candidate, c.template, c.quarantined)

    @property
    def status(self) -> str:
        return STATUSES[self.status_code]

    def state_of(self, revision: int) -> GraphState | None:
        """The graph state runs of ``revision`` fold into now: the current one, or the held
        prior while a revision is pending (its concurrent runs); None for any other."""
        if revision == self.current.revision:
            return self.current
        if self.held is not None and revision == self.held.revision:
            return self.held
        return None

    def served_state(self, revision: int | None) -> GraphState:
        """The graph state a run or a locate names (``revision``: None for the current one,
        or the held prior's number while a revision is pending); any other is refused."""
        if revision is None:
            state = self.current
        elif isinstance(revision, bool) or not isinstance(revision, numbers.Integral):
            state = None  # True == 1.0 == 1: each would name revision 1
        else:
            state = self.state_of(revision)
        if state is None:
            held = f" or {self.held.revision} (the pending prior)" if self.held else ""
            raise ParameterError(
                "revision", revision, f"expected None, {self.revision} (current){held}"
            )
        return state

    def run_by_id(self, run_id: int) -> RunRecord:
        i = bisect_left(self.runs, run_id, key=lambda r: r.run_id)
        return self.runs[i]

    def traces_of(self, state: GraphState) -> list[RunRecord]:
        """The trace window (last ``TRACE_LIMIT`` runs) of a graph state."""
        return [self.run_by_id(i) for i in state.trace_ids]

    @property
    def traces(self) -> list[RunRecord]:
        return self.traces_of(self.current)

    def revision_tally(self, revision: int) -> RevisionTally:
        """Runs, successes and success costs of one revision (created empty when new)."""
        tally = self.by_revision.get(revision)  # no RevisionTally built per recorded run
        if tally is None:
            tally = self.by_revision[revision] = RevisionTally()
        return tally

    # -- records handed out -----------------------------------------------------------

    def as_match(
        self, score: float, similarity: float, rate: float, for_agent: str | None
    ) -> Match:
        """This procedure as a ranked ``Match`` (``for_agent``: that caller's own record)."""
        c, agg = self.current, self.current.agg
        return Match.from_values(
            self.key, self.namespace, self.name, self.situation, self.actor, score, similarity,
            self.status, c.revision, agg.runs, agg.successes, rate, c.graph, c.steps, self.tags,
            c.fail_prone_steps, c.fail_prone_transitions, self.pending, agg.agents(),
            None if for_agent is None else agg.agent_stats(for_agent), c.probe_runs,
        )  # fmt: skip

    def snapshot(self) -> StoredProcedure:
        c = self.current
        return StoredProcedure(
            key=self.key,
            namespace=self.namespace,
            name=self.name,
            situation=self.situation,
            actor=self.actor,
            steps=c.steps,
            tags=self.tags,
            metadata=dict(self.metadata),
            graph=c.graph,
            revision=c.revision,
            status=self.status,
            runs=c.agg.runs,
            successes=c.agg.successes,
            failure_streak=c.agg.failure_streak,
            run_stats_by_agent=c.agg.agents(),
            pending_revision=self.pending,
            rejected_revisions=tuple(self.rejected),
            proven_path=c.proven_path,
            dead_ends=c.dead_ends,
            fail_prone_steps=c.fail_prone_steps,
            fail_prone_transitions=c.fail_prone_transitions,
            ledger_folded_through=self.watermark,
        )

    # -- JSON -------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "format": STATE_FORMAT,
            "key": self.key,
            "namespace": self.namespace,
            "name": self.name,
            "situation": self.situation,
            "tags": list(self.tags),
            "metadata": self.metadata,
            "candidate": self.candidate,
            "actor": self.actor,
            "current": self.current.to_json(),
            "held": None if self.held is None else self.held.to_json(),
            "pending_reason": self.pending_reason,
            "pending_since": self.pending_since,
            "next_revision": self.next_revision,
            "rejected": [_rejected_json(r) for r in self.rejected],
            "history": [_history_json(h) for h in self.history],
            "by_revision": [
                [k, v.runs, v.successes, list(v.success_costs)] for k, v in self.by_revision.items()
            ],
            "watermark": self.watermark,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any], runs: list[RunRecord]) -> ProcedureEntry:
        if d.get("format", 1) == 1:
            d = _from_format_1(d, runs)
        return cls(
            key=d["key"],
            namespace=d["namespace"],
            name=d["name"],
            situation=d["situation"],
            tags=tuple(d["tags"]),
            metadata=d["metadata"],
            candidate=bool(d["candidate"]),
            actor=d["actor"],
            current=GraphState.from_json(d["current"]),
            held=None if d["held"] is None else GraphState.from_json(d["held"]),
            pending_reason=d["pending_reason"],
            pending_since=int(d["pending_since"]),
            next_revision=int(d["next_revision"]),
            rejected=[_rejected(r) for r in d["rejected"]],
            history=[_history(h) for h in d["history"]],
            by_revision={k: RevisionTally(r, s, list(c)) for k, r, s, c in d["by_revision"]},
            runs=runs,
            watermark=int(d["watermark"]),
        )


def _rejected_json(r: RejectedRevision) -> dict[str, Any]:
    return {"revision": r.revision, "hash": r.graph_hash, "graph": r.graph.to_dict(),
            "reason": r.reason}  # fmt: skip


def _history_json(h: RevisionEntry) -> dict[str, Any]:
    return {"revision": h.revision, "graph": h.graph.to_dict(), "reason": h.reason,
            "outcome": h.outcome, "proposed_at": h.proposed_at,
            "decided_at": h.decided_at}  # fmt: skip


def _rejected(r: dict[str, Any]) -> RejectedRevision:
    graph = ProcedureGraph.from_dict(r["graph"])
    return RejectedRevision(
        revision=r["revision"], graph_hash=r["hash"], graph=graph, reason=r["reason"]
    )


def _history(h: dict[str, Any]) -> RevisionEntry:
    graph = ProcedureGraph.from_dict(h["graph"])
    return RevisionEntry(
        revision=h["revision"], graph=graph, reason=h["reason"], outcome=h["outcome"],
        proposed_at=h.get("proposed_at"), decided_at=h.get("decided_at"),
    )  # fmt: skip


def _from_format_1(d: dict[str, Any], runs: list[RunRecord]) -> dict[str, Any]:
    """A format-1 entry (flat graph fields; a pending prior held as its graph only) in
    format 2. The prior's evidence was not kept by format 1, so it comes back empty."""
    g = ProcedureGraph.from_dict(d["graph"])
    current = GraphState(
        graph=g,
        revision=d["revision"],
        steps=tuple(d["steps"]),
        agg=RunAggregates.from_json(d["agg"]),
        trace_ids=[r.run_id for r in runs[-TRACE_LIMIT:]],
        template=d["template"],
        quarantined=d["quarantined"],
    ).to_json()
    current.update(
        proven_path=d["proven_path"],
        dead_ends=d["dead_ends"],
        fail_prone_steps=d["fail_prone_steps"],
        fail_prone_transitions=d["fail_prone_transitions"],
    )
    held, since = None, 0
    if d["pending"] is not None:
        prior = ProcedureGraph.from_dict(d["pending"]["graph"])
        steps = tuple(prior.node(n).label() for n in prior.reading_order())
        held = GraphState(graph=prior, revision=d["pending"]["revision"], steps=steps).to_json()
        since = max((r.run_id for r in runs if r.revision != d["revision"]), default=0)
    return {
        **{k: d[k] for k in ("key", "namespace", "name", "situation", "tags", "metadata")},
        "candidate": d["candidate"],
        "actor": None,
        "current": current,
        "held": held,
        "pending_reason": None if d["pending"] is None else d["pending"]["reason"],
        "pending_since": since,
        **{k: d[k] for k in ("next_revision", "rejected", "history", "by_revision", "watermark")},
    }
