"""``GraphState``: one graph revision with all of its evidence, the unit a revert restores.

A procedure's current graph and, while a revision is pending, the prior graph it replaced
are each a ``GraphState``: the graph, its revision number and reading text, the ledger
aggregates folded on it, its trace window, its trust flags and failure streak, and the
last evolve's findings. ``revise`` moves the current state aside whole (it becomes the
held prior) and starts the revision from a copy that keeps the evidence of surviving
node ids; a revert puts the held state back exactly as it was, so the rejected
revision's runs change nothing the prior graph shows (seed: "Revisions are gated").

The failure streak is scoped to the graph revision (``RunAggregates.failure_streak``
counts trailing failed runs *of this graph*): a revision starts with no streak, and a
revert restores the prior's streak as it was.

Template stability is counted per run (``stable_runs``: the trailing runs whose fold left
the topology signature unchanged), so whether evolve runs after every run or once at the
end does not change what it finds (``graph.evolve``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from procmem_core.graph import findings as fd
from procmem_core.graph.findings import FailProne
from procmem_core.graph.graph import ProcedureGraph
from procmem_core.graph.ledger import TRACE_LIMIT, RunAggregates, RunRecord

Signature = tuple[str, tuple[str, ...], tuple[str, ...]]
"""The topology signature: (graph hash, proven path, dead ends)."""


def topology_signature(graph: ProcedureGraph, agg: RunAggregates) -> Signature:
    """What the template bar asks to be stable: the graph and what runs found on it."""
    return (graph.canonical_hash(), fd.proven_path(graph, agg), fd.dead_ends(graph, agg))


def _signature_unmoved(agg: RunAggregates, run: RunRecord, signature: Signature) -> bool:
    """True when folding ``run`` cannot change ``topology_signature``, read before the fold
    (``signature``: the one the aggregates give now).

    The dead ends read only whether any run reported a path and which nodes have runs,
    which a run changes only when it is the first with a path or visits a node no run
    visited. The proven path reads only success counts of nodes and edges, which a failed
    run or a run without a path leaves as they are; a successful run along the proven
    path itself (``signature[1]``) adds one success to its start node and to each edge it
    chose, each of which was the best option at its step and stays the best, and to no
    other option (a proven path repeats no node), so the path stays. So the signature is
    recomputed only after a successful run off the proven path, or a run reaching new
    nodes."""
    if not run.path:
        return True
    if agg.path_runs == 0 or (run.ok and run.path != signature[1]):
        return False
    seen = agg.node_runs
    for node in run.path:  # a loop, not ``all`` over a generator: once per recorded run
        t = seen.get(node)
        if t is None or not t.runs:
            return False
    return True


def _fail_prone_json(items: tuple[FailProne, ...]) -> list[dict[str, Any]]:
    return [dict(vars(x)) for x in items]


@dataclass
class GraphState:
    """One graph revision and its evidence (see the module doc)."""

    graph: ProcedureGraph
    revision: int
    steps: tuple[str, ...]
    agg: RunAggregates = field(default_factory=RunAggregates)
    trace_ids: list[int] = field(default_factory=list)
    template: bool = False
    quarantined: bool = False
    probe_runs: int = 0
    probe_successes: int = 0
    stable_runs: int = 0
    signature: Signature | None = None
    proven_path: tuple[str, ...] = ()
    dead_ends: tuple[str, ...] = ()
    fail_prone_steps: tuple[FailProne, ...] = ()
    fail_prone_transitions: tuple[FailProne, ...] = ()

    def __post_init__(self) -> None:
        if self.signature is None:
            self.signature = topology_signature(self.graph, self.agg)

    def fold(self, run: RunRecord) -> None:
        """Add one run made on this graph: aggregates, trace window, streak, stability. A
        quarantine is lifted by the store's policy, which sees the run first
        (``ProcedureStore._append``), not here."""
        unmoved = _signature_unmoved(self.agg, run, self.signature)
        self.agg.fold(run, self.graph.edge_pairs())
        self.trace_ids.append(run.run_id)
        del self.trace_ids[:-TRACE_LIMIT]
        if unmoved:  # the signature is the one of the last fold
            self.stable_runs += 1
            return
        signature = topology_signature(self.graph, self.agg)
        self.stable_runs = self.stable_runs + 1 if signature == self.signature else 0
        self.signature = signature

    def revised(self, graph: ProcedureGraph, revision: int) -> GraphState:
        """The state a revision starts from: the evidence of node ids and transitions the
        new graph keeps (``RunAggregates.keep_only``), no streak, no flags, no findings."""
        agg = self.agg.copy()
        agg.keep_only(frozenset(graph.node_ids), graph.edge_pairs())
        agg.failure_streak = 0
        steps = tuple(graph.node(n).label() for n in graph.reading_order())
        return GraphState(graph=graph, revision=revision, steps=steps, agg=agg)

    def copy(self) -> GraphState:
        """An independent copy (the graph, immutable, is shared)."""
        return dataclasses.replace(self, agg=self.agg.copy(), trace_ids=list(self.trace_ids))

    def to_json(self) -> dict[str, Any]:
        sig = self.signature
        return {
            "graph": self.graph.to_dict(),
            "revision": self.revision,
            "steps": list(self.steps),
            "agg": self.agg.to_json(),
            "trace_ids": list(self.trace_ids),
            "template": self.template,
            "quarantined": self.quarantined,
            "probe_runs": self.probe_runs,
            "probe_successes": self.probe_successes,
            "stable_runs": self.stable_runs,
            "signature": [sig[0], list(sig[1]), list(sig[2])],
            "proven_path": list(self.proven_path),
            "dead_ends": list(self.dead_ends),
            "fail_prone_steps": _fail_prone_json(self.fail_prone_steps),
            "fail_prone_transitions": _fail_prone_json(self.fail_prone_transitions),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> GraphState:
        sig = d["signature"]
        return cls(
            graph=ProcedureGraph.from_dict(d["graph"]),
            revision=int(d["revision"]),
            steps=tuple(d["steps"]),
            agg=RunAggregates.from_json(d["agg"]),
            trace_ids=[int(i) for i in d["trace_ids"]],
            template=bool(d["template"]),
            quarantined=bool(d["quarantined"]),
            probe_runs=int(d.get("probe_runs", 0)),
            probe_successes=int(d.get("probe_successes", 0)),
            stable_runs=int(d["stable_runs"]),
            signature=(sig[0], tuple(sig[1]), tuple(sig[2])),
            proven_path=tuple(d["proven_path"]),
            dead_ends=tuple(d["dead_ends"]),
            fail_prone_steps=tuple(FailProne(**x) for x in d["fail_prone_steps"]),
            fail_prone_transitions=tuple(FailProne(**x) for x in d["fail_prone_transitions"]),
        )
