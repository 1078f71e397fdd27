"""The graph design (seed: loom-procedures.txt): procedures as step graphs with a run
ledger, evolve findings, trust statuses, gated revisions, matching, localised guidance,
packs with an explore rate, and a store in memory, on SQLite or on PostgreSQL.
docs/graph.md."""

from procmem_core.graph.access import (
    MAX_NAMESPACE_FAN_OUT,
    NAMESPACE_SCOPES,
    OPERATION_ROLES,
    ROLES,
    AccessDenied,
)
from procmem_core.graph.entry import ProcedureEntry
from procmem_core.graph.evolve import STREAK_SCOPES
from procmem_core.graph.findings import FailProne, dead_ends, fail_prone, proven_path
from procmem_core.graph.graph import SEED_EXAMPLE_GRAPH, Edge, GraphError, Node, ProcedureGraph
from procmem_core.graph.keys import UnknownProcedure, procedure_key, slugify
from procmem_core.graph.ledger import (
    TRACE_LIMIT,
    AgentStats,
    RevisionTally,
    RunAggregates,
    RunRecord,
    Tally,
)
from procmem_core.graph.locate import LocateResult, Transition
from procmem_core.graph.match_request import MatchRequest
from procmem_core.graph.matching import Embedder, HashingEmbedder, match_scores
from procmem_core.graph.pack import PACK_MIN_SIMILARITY, ContextPacker, Pack, render_procedure
from procmem_core.graph.records import (
    EvolveReport,
    Match,
    PendingRevision,
    RejectedRevision,
    RevisionEntry,
    StoredProcedure,
)
from procmem_core.graph.revision import RevisionError
from procmem_core.graph.sqlite import StoreFileError
from procmem_core.graph.state import GraphState
from procmem_core.graph.status import (
    STATUSES,
    meets_template_bar,
    should_quarantine,
    trust_status,
)
from procmem_core.graph.store import STRIKE_LIMIT_ENV, ProcedureStore, default_strike_limit

__all__ = [
    "MAX_NAMESPACE_FAN_OUT",
    "NAMESPACE_SCOPES",
    "OPERATION_ROLES",
    "PACK_MIN_SIMILARITY",
    "ROLES",
    "SEED_EXAMPLE_GRAPH",
    "STATUSES",
    "STREAK_SCOPES",
    "STRIKE_LIMIT_ENV",
    "TRACE_LIMIT",
    "AccessDenied",
    "AgentStats",
    "ContextPacker",
    "Edge",
    "Embedder",
    "EvolveReport",
    "FailProne",
    "GraphError",
    "GraphState",
    "HashingEmbedder",
    "LocateResult",
    "Match",
    "MatchRequest",
    "Node",
    "Pack",
    "PendingRevision",
    "ProcedureEntry",
    "ProcedureGraph",
    "ProcedureStore",
    "RejectedRevision",
    "RevisionEntry",
    "RevisionError",
    "RevisionTally",
    "RunAggregates",
    "RunRecord",
    "StoreFileError",
    "StoredProcedure",
    "Tally",
    "Transition",
    "UnknownProcedure",
    "dead_ends",
    "default_strike_limit",
    "fail_prone",
    "match_scores",
    "meets_template_bar",
    "procedure_key",
    "proven_path",
    "render_procedure",
    "should_quarantine",
    "slugify",
    "trust_status",
]
