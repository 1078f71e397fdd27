"""The graph design (seed: loom-procedures.txt): procedures as step graphs with a run
ledger, evolve findings, trust statuses, gated revisions, matching, localised guidance,
packs with an explore rate, and a store in memory or on SQLite. docs/graph.md."""

from procmem_core.graph.entry import ProcedureEntry
from procmem_core.graph.findings import FailProne, dead_ends, fail_prone, proven_path
from procmem_core.graph.graph import SEED_EXAMPLE_GRAPH, Edge, GraphError, Node, ProcedureGraph
from procmem_core.graph.keys import UnknownProcedure, slugify
from procmem_core.graph.ledger import (
    TRACE_LIMIT,
    AgentStats,
    RevisionTally,
    RunAggregates,
    RunRecord,
    Tally,
)
from procmem_core.graph.locate import LocateResult, Transition
from procmem_core.graph.matching import Embedder, HashingEmbedder, match_scores
from procmem_core.graph.pack import ContextPacker, Pack, render_procedure
from procmem_core.graph.records import (
    EvolveReport,
    Match,
    PendingRevision,
    RejectedRevision,
    RevisionEntry,
    StoredProcedure,
)
from procmem_core.graph.revision import RevisionError
from procmem_core.graph.status import (
    STATUSES,
    meets_template_bar,
    should_quarantine,
    trust_status,
)
from procmem_core.graph.store import ProcedureStore

__all__ = [
    "SEED_EXAMPLE_GRAPH",
    "STATUSES",
    "TRACE_LIMIT",
    "AgentStats",
    "ContextPacker",
    "Edge",
    "Embedder",
    "EvolveReport",
    "FailProne",
    "GraphError",
    "HashingEmbedder",
    "LocateResult",
    "Match",
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
    "StoredProcedure",
    "Tally",
    "Transition",
    "UnknownProcedure",
    "dead_ends",
    "fail_prone",
    "match_scores",
    "meets_template_bar",
    "proven_path",
    "render_procedure",
    "should_quarantine",
    "slugify",
    "trust_status",
]
