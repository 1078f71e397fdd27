"""``GraphState.fold`` recomputes the topology signature only after a run that can move it
(``state._signature_unmoved``): after every fold the kept signature must equal the one
computed from scratch, and the stability count must be the one a recompute gives, on
graphs with branches, joins, a cycle and two entries, under random runs."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.graph.graph import ProcedureGraph
from procmem_core.graph.ledger import RunRecord
from procmem_core.graph.state import GraphState, topology_signature

GRAPHS = {
    "diamond": (["a", "b", "c", "d"], [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")]),
    "cycle": (["a", "b", "c", "d"], [("a", "b"), ("b", "c"), ("c", "a"), ("b", "a"), ("c", "d")]),
    "two_entries": (["a", "x", "b", "c"], [("a", "b"), ("x", "b"), ("b", "c")]),
}


def _walk(rng: np.random.Generator, graph: ProcedureGraph) -> tuple[str, ...]:
    """A random path along the graph's edges from a random node (sometimes empty)."""
    if rng.random() < 0.1:
        return ()
    node = graph.node_ids[int(rng.integers(len(graph.node_ids)))]
    path = [node]
    while rng.random() < 0.8 and graph.out_edges(node):
        edges = graph.out_edges(node)
        node = edges[int(rng.integers(len(edges)))].dst
        path.append(node)
    return tuple(path)


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_the_kept_signature_is_always_the_recomputed_one(name):
    nodes, edges = GRAPHS[name]
    graph = ProcedureGraph.from_dict(
        {"nodes": [{"id": n} for n in nodes], "edges": [{"src": s, "dst": d} for s, d in edges]}
    )
    rng = np.random.default_rng(np.random.SeedSequence(29))
    shortcuts = 0
    for _ in range(20):
        state = GraphState(graph=graph, revision=1, steps=tuple(nodes))
        stable = 0
        for run_id in range(1, 80):
            ok = bool(rng.random() < 0.6)
            proven = state.signature[1]
            path = proven if ok and proven and rng.random() < 0.5 else _walk(rng, graph)
            before = state.signature
            state.fold(RunRecord(run_id, "k", "default", 1, path, ok))
            fresh = topology_signature(graph, state.agg)
            assert state.signature == fresh
            stable = stable + 1 if fresh == before else 0
            assert state.stable_runs == stable
            shortcuts += ok and path == proven and bool(path)
    assert shortcuts > 100  # successful runs along the proven path were exercised
