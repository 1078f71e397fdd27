"""``ProcedureEntry``: the store's mutable record of one procedure, and its JSON.

It holds the graph, revision bookkeeping, ledger aggregates (overall and per revision),
the last evolve's findings and the trust flags, and round-trips through JSON, which is
all the SQLite journal stores besides the run rows. The store (``graph.store``)
orchestrates; this module only keeps state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from procmem_core.graph.findings import FailProne
from procmem_core.graph.graph import ProcedureGraph
from procmem_core.graph.ledger import TRACE_LIMIT, RevisionTally, RunAggregates, RunRecord
from procmem_core.graph.records import (
    Match,
    PendingRevision,
    RejectedRevision,
    RevisionEntry,
    StoredProcedure,
)
from procmem_core.graph.status import STATUSES, trust_status


def _fail_prone_json(items: tuple[FailProne, ...]) -> list[dict[str, Any]]:
    return [dict(vars(x)) for x in items]


@dataclass
class ProcedureEntry:
    """The store's mutable record of one procedure (see the module doc)."""

    key: str
    namespace: str
    name: str
    situation: str
    steps: tuple[str, ...]
    tags: tuple[str, ...]
    metadata: dict[str, Any]
    candidate: bool
    graph: ProcedureGraph
    revision: int = 1
    next_revision: int = 2
    pending: PendingRevision | None = None
    rejected: list[RejectedRevision] = field(default_factory=list)
    history: list[RevisionEntry] = field(default_factory=list)
    agg: RunAggregates = field(default_factory=RunAggregates)
    by_revision: dict[int, RevisionTally] = field(default_factory=dict)
    runs: list[RunRecord] = field(default_factory=list)
    watermark: int = 0
    template: bool = False
    quarantined: bool = False
    topology: tuple[Any, ...] | None = None
    proven_path: tuple[str, ...] = ()
    dead_ends: tuple[str, ...] = ()
    fail_prone_steps: tuple[FailProne, ...] = ()
    fail_prone_transitions: tuple[FailProne, ...] = ()

    @classmethod
    def registered(cls, reason: str, **fields: Any) -> ProcedureEntry:
        """A new entry at revision 1, its history opened with ``reason``."""
        entry = cls(**fields)
        entry.history.append(
            RevisionEntry(revision=1, graph=entry.graph, reason=reason, outcome="original")
        )
        return entry

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.key}"

    def as_match(
        self, score: float, similarity: float, rate: float, for_agent: str | None
    ) -> Match:
        """This procedure as a ranked ``Match`` (``for_agent``: that caller's own record)."""
        return Match(
            key=self.key,
            namespace=self.namespace,
            name=self.name,
            situation=self.situation,
            score=score,
            similarity=similarity,
            status=self.status,
            runs=self.agg.runs,
            successes=self.agg.successes,
            success_rate=rate,
            graph=self.graph,
            steps=self.steps,
            tags=self.tags,
            run_stats_by_agent=self.agg.agents(),
            agent_stats=None if for_agent is None else self.agg.agent_stats(for_agent),
        )

    @property
    def status_code(self) -> int:
        return trust_status(self.agg.runs, self.candidate, self.template, self.quarantined)

    @property
    def status(self) -> str:
        return STATUSES[self.status_code]

    @property
    def traces(self) -> list[RunRecord]:
        """The last ``TRACE_LIMIT`` runs (the graph's trace window)."""
        return self.runs[-TRACE_LIMIT:]

    def revision_tally(self, revision: int) -> RevisionTally:
        """Runs, successes and success costs of one revision (created empty when new)."""
        return self.by_revision.setdefault(revision, RevisionTally())

    def snapshot(self) -> StoredProcedure:
        return StoredProcedure(
            key=self.key,
            namespace=self.namespace,
            name=self.name,
            situation=self.situation,
            steps=self.steps,
            tags=self.tags,
            metadata=dict(self.metadata),
            graph=self.graph,
            revision=self.revision,
            status=self.status,
            runs=self.agg.runs,
            successes=self.agg.successes,
            run_stats_by_agent=self.agg.agents(),
            pending_revision=self.pending,
            rejected_revisions=tuple(self.rejected),
            proven_path=self.proven_path,
            dead_ends=self.dead_ends,
            fail_prone_steps=self.fail_prone_steps,
            fail_prone_transitions=self.fail_prone_transitions,
            ledger_folded_through=self.watermark,
        )

    def to_json(self) -> dict[str, Any]:
        pending = None
        if self.pending is not None:
            p = self.pending
            pending = {
                "graph": p.prior_graph.to_dict(),
                "revision": p.prior_revision,
                "reason": p.reason,
            }
        return {
            "key": self.key,
            "namespace": self.namespace,
            "name": self.name,
            "situation": self.situation,
            "steps": list(self.steps),
            "tags": list(self.tags),
            "metadata": self.metadata,
            "candidate": self.candidate,
            "graph": self.graph.to_dict(),
            "revision": self.revision,
            "next_revision": self.next_revision,
            "pending": pending,
            "rejected": [
                {
                    "revision": r.revision,
                    "hash": r.graph_hash,
                    "graph": r.graph.to_dict(),
                    "reason": r.reason,
                }
                for r in self.rejected
            ],
            "history": [
                {
                    "revision": h.revision,
                    "graph": h.graph.to_dict(),
                    "reason": h.reason,
                    "outcome": h.outcome,
                }
                for h in self.history
            ],
            "agg": self.agg.to_json(),
            "by_revision": [
                [k, v.runs, v.successes, list(v.success_costs)] for k, v in self.by_revision.items()
            ],
            "watermark": self.watermark,
            "template": self.template,
            "quarantined": self.quarantined,
            "topology": None
            if self.topology is None
            else [self.topology[0], *map(list, self.topology[1:])],
            "proven_path": list(self.proven_path),
            "dead_ends": list(self.dead_ends),
            "fail_prone_steps": _fail_prone_json(self.fail_prone_steps),
            "fail_prone_transitions": _fail_prone_json(self.fail_prone_transitions),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any], runs: list[RunRecord]) -> ProcedureEntry:
        g = ProcedureGraph.from_dict
        p = d["pending"]
        topo = d["topology"]
        return cls(
            key=d["key"],
            namespace=d["namespace"],
            name=d["name"],
            situation=d["situation"],
            steps=tuple(d["steps"]),
            tags=tuple(d["tags"]),
            metadata=d["metadata"],
            candidate=d["candidate"],
            graph=g(d["graph"]),
            revision=d["revision"],
            next_revision=d["next_revision"],
            pending=None
            if p is None
            else PendingRevision(
                prior_graph=g(p["graph"]), prior_revision=p["revision"], reason=p["reason"]
            ),
            rejected=[
                RejectedRevision(
                    revision=r["revision"],
                    graph_hash=r["hash"],
                    graph=g(r["graph"]),
                    reason=r["reason"],
                )
                for r in d["rejected"]
            ],
            history=[
                RevisionEntry(
                    revision=h["revision"],
                    graph=g(h["graph"]),
                    reason=h["reason"],
                    outcome=h["outcome"],
                )
                for h in d["history"]
            ],
            agg=RunAggregates.from_json(d["agg"]),
            by_revision={k: RevisionTally(r, s, list(c)) for k, r, s, c in d["by_revision"]},
            runs=runs,
            watermark=d["watermark"],
            template=d["template"],
            quarantined=d["quarantined"],
            topology=None if topo is None else (topo[0], *map(tuple, topo[1:])),
            proven_path=tuple(d["proven_path"]),
            dead_ends=tuple(d["dead_ends"]),
            fail_prone_steps=tuple(FailProne(**x) for x in d["fail_prone_steps"]),
            fail_prone_transitions=tuple(FailProne(**x) for x in d["fail_prone_transitions"]),
        )
