"""A stored procedure: its mutable state inside the store and the snapshots the store returns.

``ProcedureEntry`` is the store's working record of one procedure (graph, revision
bookkeeping, ledger aggregates, the last evolve's findings, trust flags) and knows how
to round-trip itself through JSON, which is all the SQLite journal stores besides the
run rows. ``StoredProcedure``, ``Match`` and the revision records are the frozen
dataclasses the public API hands out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from procmem_core.errors import ParameterError, ProcmemError
from procmem_core.evolve import STATUSES, FailProne, trust_status
from procmem_core.graph import ProcedureGraph
from procmem_core.ledger import TRACE_LIMIT, AgentStats, RunAggregates, RunRecord

_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")


class UnknownProcedure(ProcmemError, KeyError):
    """No procedure under this key (or the bare key is held by several namespaces)."""

    def __str__(self) -> str:
        return str(self.args[0])


def slugify(name: str) -> str:
    """Lower-case ASCII letters and digits, runs of anything else as one ``_``."""
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    if not slug:
        raise ParameterError("name", name, "expected a name with at least one letter or digit")
    return slug


def check_text(field: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ParameterError(field, value, "expected a non-empty string")
    return value


def check_tags(tags: Any) -> tuple[str, ...]:
    if isinstance(tags, str) or not isinstance(tags, Sequence):
        raise ParameterError("tags", tags, "expected a list of non-empty strings")
    for t in tags:
        check_text("tags", t)
    return tuple(tags)


def check_namespace(namespace: Any) -> str:
    if not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace):
        raise ParameterError(
            "namespace", namespace, f"expected a name matching {_NAMESPACE.pattern}"
        )
    return namespace


def check_metadata(metadata: Any) -> dict[str, Any]:
    """A copy of ``metadata`` as plain JSON values (tuples become lists); None is ``{}``."""
    meta = {} if metadata is None else metadata
    if not isinstance(meta, Mapping):
        raise ParameterError("metadata", metadata, "expected a mapping or None")
    try:
        return json.loads(json.dumps(dict(meta)))
    except (TypeError, ValueError):
        raise ParameterError("metadata", metadata, "expected JSON-serialisable values") from None


@dataclass(frozen=True)
class PendingRevision:
    """The prior graph held while a revision is on trial against it."""

    prior_graph: ProcedureGraph
    prior_revision: int
    reason: str


@dataclass(frozen=True)
class RejectedRevision:
    """A reverted revision; re-proposing a graph with this ``graph_hash`` needs ``force``."""

    revision: int
    graph_hash: str
    graph: ProcedureGraph
    reason: str


@dataclass(frozen=True)
class RevisionEntry:
    """One graph revision in a procedure's history; ``outcome`` is "original", "pending",
    "accepted" or "reverted"."""

    revision: int
    graph: ProcedureGraph
    reason: str
    outcome: str


@dataclass(frozen=True)
class StoredProcedure:
    """A snapshot of one procedure as the store holds it."""

    key: str
    namespace: str
    name: str
    situation: str
    steps: tuple[str, ...]
    tags: tuple[str, ...]
    metadata: dict[str, Any]
    graph: ProcedureGraph
    revision: int
    status: str
    runs: int
    successes: int
    run_stats_by_agent: tuple[AgentStats, ...]
    pending_revision: PendingRevision | None
    rejected_revisions: tuple[RejectedRevision, ...]
    proven_path: tuple[str, ...]
    dead_ends: tuple[str, ...]
    fail_prone_steps: tuple[FailProne, ...]
    fail_prone_transitions: tuple[FailProne, ...]
    ledger_folded_through: int

    @property
    def ref(self) -> str:
        """``namespace/key``: unambiguous even when forks share a key across namespaces."""
        return f"{self.namespace}/{self.key}"


@dataclass(frozen=True)
class Match:
    """One ranked procedure. ``similarity`` is the situation (and goal) relevance before the
    tool and utility terms; ``agent_stats`` is the ``for_agent`` caller's own record."""

    key: str
    namespace: str
    name: str
    situation: str
    score: float
    similarity: float
    status: str
    runs: int
    successes: int
    success_rate: float
    graph: ProcedureGraph
    steps: tuple[str, ...]
    tags: tuple[str, ...]
    run_stats_by_agent: tuple[AgentStats, ...]
    agent_stats: AgentStats | None

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.key}"


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
    by_revision: dict[int, list[Any]] = field(default_factory=dict)
    runs: list[RunRecord] = field(default_factory=list)
    watermark: int = 0
    template: bool = False
    quarantined: bool = False
    topology: tuple[Any, ...] | None = None
    proven_path: tuple[str, ...] = ()
    dead_ends: tuple[str, ...] = ()
    fail_prone_steps: tuple[FailProne, ...] = ()
    fail_prone_transitions: tuple[FailProne, ...] = ()

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.key}"

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

    def revision_tally(self, revision: int) -> list[Any]:
        """``[runs, successes, [costs of successful runs]]`` of one revision."""
        return self.by_revision.setdefault(revision, [0, 0, []])

    def snapshot(self) -> StoredProcedure:
        return StoredProcedure(
            self.key, self.namespace, self.name, self.situation, self.steps, self.tags,
            dict(self.metadata), self.graph, self.revision, self.status, self.agg.runs,
            self.agg.successes, self.agg.agents(), self.pending, tuple(self.rejected),
            self.proven_path, self.dead_ends, self.fail_prone_steps,
            self.fail_prone_transitions, self.watermark,
        )  # fmt: skip

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
            "by_revision": [[k, *v] for k, v in self.by_revision.items()],
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
            else PendingRevision(g(p["graph"]), p["revision"], p["reason"]),
            rejected=[
                RejectedRevision(r["revision"], r["hash"], g(r["graph"]), r["reason"])
                for r in d["rejected"]
            ],
            history=[
                RevisionEntry(h["revision"], g(h["graph"]), h["reason"], h["outcome"])
                for h in d["history"]
            ],
            agg=RunAggregates.from_json(d["agg"]),
            by_revision={k: [r, s, list(c)] for k, r, s, c in d["by_revision"]},
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
