"""The frozen records the store hands out: snapshots, matches, revisions, evolve reports.

Every record is built by keyword, so a reordered field cannot mislabel data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from procmem_core.frozen import quick_init
from procmem_core.gates.records import GateRecord
from procmem_core.graph.findings import FailProne
from procmem_core.graph.graph import ProcedureGraph
from procmem_core.graph.ledger import AgentStats


@dataclass(frozen=True, kw_only=True)
class PendingRevision:
    """The prior graph held while a revision is on trial against it.

    ``since_run_id``: the last run id of the ledger when the revision was proposed (the
    prior's runs after it were recorded concurrently with the revision's).
    ``prior_fail_prone``: the fail-prone steps and transitions the prior graph's last
    evolve found (a pack serving the prior shows them as pitfalls).
    """

    prior_graph: ProcedureGraph
    prior_revision: int
    reason: str
    prior_steps: tuple[str, ...] = ()
    since_run_id: int = 0
    prior_fail_prone: tuple[FailProne, ...] = ()


@dataclass(frozen=True, kw_only=True)
class RejectedRevision:
    """A reverted revision; re-proposing a graph with this ``graph_hash`` needs ``force``."""

    revision: int
    graph_hash: str
    graph: ProcedureGraph
    reason: str


@dataclass(frozen=True, kw_only=True)
class RevisionEntry:
    """One graph revision in a procedure's history; ``outcome`` is "original", "pending",
    "accepted" or "reverted". ``proposed_at``: the ledger's last run id when it was
    proposed; ``decided_at``: the ledger's last run id when evolve accepted or reverted it
    (None: not recorded, as in stores written before they were kept)."""

    revision: int
    graph: ProcedureGraph
    reason: str
    outcome: str
    proposed_at: int | None = None
    decided_at: int | None = None


@quick_init
@dataclass(frozen=True, kw_only=True)
class StoredProcedure:
    """A snapshot of one procedure as the store holds it. ``actor``: who wrote it (None:
    not recorded); ``failure_streak``: the current graph's trailing failed runs."""

    key: str
    namespace: str
    name: str
    situation: str
    actor: str | None
    steps: tuple[str, ...]
    tags: tuple[str, ...]
    metadata: dict[str, Any]
    graph: ProcedureGraph
    revision: int
    status: str
    runs: int
    successes: int
    failure_streak: int
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


@quick_init
@dataclass(frozen=True, kw_only=True)
class Match:
    """One ranked procedure. ``similarity`` is the situation (and goal) relevance before the
    tool and utility terms; ``actor`` who wrote it; ``fail_prone_*`` the last evolve's
    pitfalls; ``pending_revision`` the prior graph while a revision is on trial;
    ``agent_stats`` the ``for_agent`` caller's own record."""

    key: str
    namespace: str
    name: str
    situation: str
    actor: str | None
    score: float
    similarity: float
    status: str
    revision: int
    runs: int
    successes: int
    success_rate: float
    graph: ProcedureGraph
    steps: tuple[str, ...]
    tags: tuple[str, ...]
    fail_prone_steps: tuple[FailProne, ...]
    fail_prone_transitions: tuple[FailProne, ...]
    pending_revision: PendingRevision | None
    run_stats_by_agent: tuple[AgentStats, ...]
    agent_stats: AgentStats | None
    probe_runs: int = 0
    """Half-open probe runs made since the quarantine (``procmem_core.quarantine``)."""

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.key}"


@quick_init
@dataclass(frozen=True, kw_only=True)
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
