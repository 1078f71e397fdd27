"""Procedure graphs: the seed's shape, every rejection, and random graphs against the rules."""

from __future__ import annotations

import contextlib
import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from procmem_core.graph.graph import (
    EDGE_KINDS,
    MAX_EDGE_TEXT,
    MAX_EDGES,
    MAX_NODES,
    NODE_KINDS,
    SEED_EXAMPLE_GRAPH,
    Edge,
    GraphError,
    Node,
    ProcedureGraph,
)

SEED_GRAPH = SEED_EXAMPLE_GRAPH


def test_seed_graph_is_accepted_and_round_trips():
    g = ProcedureGraph.from_dict(SEED_GRAPH)
    assert g.node_ids == ("cash", "forecast", "raise", "close")
    assert g.edges[3].kind == "dep"  # the seed's last edge has no kind
    assert g.entry_nodes() == ("cash",)
    assert g.tools() == {
        "check_cash_in_bank",
        "cash_flow_forecast",
        "fund_raising_request",
        "book_closing",
    }
    assert [e.dst for e in g.out_edges("forecast")] == ["raise", "close"]
    assert ProcedureGraph.from_dict(g.to_dict()) == g


def test_canonical_hash_ignores_listing_order_but_not_content():
    g = ProcedureGraph.from_dict(SEED_GRAPH)
    shuffled = {"nodes": SEED_GRAPH["nodes"][::-1], "edges": SEED_GRAPH["edges"][::-1]}
    assert ProcedureGraph.from_dict(shuffled).canonical_hash() == g.canonical_hash()
    changed = copy.deepcopy(SEED_GRAPH)
    changed["edges"][2]["condition"] = "runway fine"
    assert ProcedureGraph.from_dict(changed).canonical_hash() != g.canonical_hash()


def test_steps_make_a_linear_graph():
    g = ProcedureGraph.from_steps(["look up the invoice", "check the window", "issue or decline"])
    assert g.node_ids == ("n1", "n2", "n3")
    assert [e.pair for e in g.edges] == [("n1", "n2"), ("n2", "n3")]
    assert g.node("n2").text == "check the window"
    assert g.reading_order() == ("n1", "n2", "n3")


def test_a_cycle_with_an_exit_is_accepted():
    g = ProcedureGraph.from_dict(
        {
            "nodes": [{"id": "a"}, {"id": "b"}, {"id": "c"}],
            "edges": [{"src": "a", "dst": "b"}, {"src": "b", "dst": "a"}, {"src": "b", "dst": "c"}],
        }
    )
    assert g.entry_nodes() == ("a",)  # every node has a predecessor: the first listed


def _nodes(n):
    return [{"id": f"v{i}"} for i in range(n)]


def _chain(n):
    return [{"src": f"v{i}", "dst": f"v{i + 1}"} for i in range(n - 1)]


def _many_edges():
    # 46 nodes with every forward pair is 1035 edges: over the cap, and acyclic.
    nodes = _nodes(46)
    edges = [{"src": f"v{i}", "dst": f"v{j}"} for i in range(46) for j in range(i + 1, 46)]
    return {"nodes": nodes, "edges": edges}


INVALID_GRAPHS = [
    ({"nodes": [{"id": "a"}, {"id": "a"}], "edges": []}, "node 'a': duplicate node id"),
    (
        {"nodes": _nodes(2), "edges": [{"src": "v0", "dst": "zz"}]},
        "edge 'v0'->'zz': unknown node 'zz'",
    ),
    ({"nodes": _nodes(2), "edges": [{"src": "v0", "dst": "v0"}]}, "edge 'v0'->'v0': self-loop"),
    (
        {"nodes": _nodes(3), "edges": [*_chain(3), {"src": "v2", "dst": "v1"}]},
        "node 'v1': cycle with no exit through nodes ['v1', 'v2']",
    ),
    ({"nodes": [{"id": "a", "kind": "thought"}, {"id": "b"}]}, "node 'a': unknown kind 'thought'"),
    (
        {"nodes": _nodes(2), "edges": [{"src": "v0", "dst": "v1", "kind": "jump"}]},
        "unknown kind 'jump'",
    ),
    (
        {"nodes": [{"id": "a", "kind": "action"}, {"id": "b"}]},
        "node 'a' tool: expected a non-empty",
    ),
    ({"nodes": _nodes(MAX_NODES + 1), "edges": []}, "257 nodes, at most 256"),
    (_many_edges(), "1035 edges, at most 1024"),
    (
        {
            "nodes": _nodes(2),
            "edges": [{"src": "v0", "dst": "v1", "guidance": "x" * (MAX_EDGE_TEXT + 1)}],
        },
        "edge 'v0'->'v1' guidance: 513 characters, at most 512",
    ),
    ({"nodes": _nodes(1), "edges": []}, "1 nodes, at least 2"),
    ({"nodes": _nodes(2), "edges": [*_chain(2), *_chain(2)]}, "edge 'v0'->'v1': duplicate edge"),
    ({"nodes": [{"id": ""}, {"id": "b"}]}, "node id: expected a non-empty string"),
    ({"nodes": [{"kind": "step"}, {"id": "b"}]}, "nodes[0]: missing fields ['id']"),
    ({"nodes": [{"id": "a", "colour": 1}, {"id": "b"}]}, "nodes[0]: unknown fields ['colour']"),
    ({"nodes": "a,b"}, "nodes: expected a list"),
    (["a", "b"], "graph: expected a mapping"),
    ({"nodes": _nodes(2), "edges": [{"src": "v0", "dst": "v1", "condition": 3}]}, "condition"),
]


@pytest.mark.parametrize(("data", "fragment"), INVALID_GRAPHS)
def test_invalid_graphs_are_rejected_naming_the_culprit(data, fragment):
    with pytest.raises(GraphError, match=None) as err:
        ProcedureGraph.from_dict(data)
    assert fragment in str(err.value)
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize(
    ("steps", "fragment"),
    [
        (["only one"], "steps: 1 steps, allowed 2..64"),
        ([f"s{i}" for i in range(65)], "steps: 65 steps, allowed 2..64"),
        (["ok", ""], "steps[1]: expected a non-empty string"),
        ("one two", "steps: expected a list"),
        (["ok", 3], "steps[1]"),
    ],
)
def test_invalid_steps_are_rejected(steps, fragment):
    with pytest.raises(GraphError) as err:
        ProcedureGraph.from_steps(steps)
    assert fragment in str(err.value)


def test_caps_are_inclusive():
    ProcedureGraph.from_dict({"nodes": _nodes(MAX_NODES), "edges": _chain(MAX_NODES)})
    ProcedureGraph.from_steps([f"s{i}" for i in range(64)])
    edge = Edge("a", "b", condition="x" * MAX_EDGE_TEXT)
    ProcedureGraph((Node("a"), Node("b")), (edge,))
    assert MAX_EDGES == 1024


# -- random graphs against an independent statement of the rules --------------------------


def rule_violations(data) -> list[str]:
    """Every rule the raw graph breaks, checked independently of graph.py (brute force)."""
    out = []
    nodes, edges = data["nodes"], data["edges"]
    ids = [n.get("id") for n in nodes]
    if not 2 <= len(nodes) <= MAX_NODES:
        out.append("node count")
    if len(edges) > MAX_EDGES:
        out.append("edge count")
    if len(set(ids)) != len(ids):
        out.append("duplicate id")
    for n in nodes:
        if n.get("kind", "step") not in NODE_KINDS:
            out.append("node kind")
        if n.get("kind", "step") == "action" and not n.get("tool"):
            out.append("tool")
    pairs = [(e["src"], e["dst"]) for e in edges]
    if len(set(pairs)) != len(pairs):
        out.append("duplicate edge")
    for e in edges:
        if e["src"] not in ids or e["dst"] not in ids:
            out.append("unknown node")
        if e["src"] == e["dst"]:
            out.append("self-loop")
        if e.get("kind", "dep") not in EDGE_KINDS:
            out.append("edge kind")
        if len(e.get("guidance") or "") > MAX_EDGE_TEXT:
            out.append("edge text")
    if not out:
        succ = {i: {d for s, d in pairs if s == i} for i in ids}

        def reach(i):
            seen, todo = {i}, [i]
            while todo:
                for d in succ[todo.pop()]:
                    if d not in seen:
                        seen.add(d)
                        todo.append(d)
            return seen

        exits = {i for i in ids if not succ[i]}
        for i in ids:  # a node on a cycle must be able to reach an exit
            on_cycle = any(i in reach(d) for d in succ[i])
            if on_cycle and not (reach(i) & exits):
                out.append("cycle with no exit")
                break
    return out


IDS = ["a", "b", "c", "d", "e", "f"]


@st.composite
def graph_st(draw):
    """Mostly well-formed graphs (so cycles, exits and valid graphs are common), each
    with a small chance of breaking one of the local rules."""
    rare = st.integers(0, 19).map(lambda x: x == 0)
    ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=6, unique=True))
    if draw(rare):
        ids.append(ids[0])
    nodes = []
    for i in ids:
        kind = draw(st.sampled_from(NODE_KINDS))
        node = {"id": i, "kind": "bogus" if draw(rare) else kind}
        if kind == "action" and not draw(rare):
            node["tool"] = draw(st.sampled_from(["t1", "t2"]))
        nodes.append(node)
    pool = [*ids, "zz"] if draw(rare) else ids
    pairs = draw(st.lists(st.tuples(st.sampled_from(pool), st.sampled_from(pool)), max_size=10))
    if not draw(rare):
        pairs = list(dict.fromkeys((s, d) for s, d in pairs if s != d))
    edges = []
    for s, d in pairs:
        edge = {
            "src": s,
            "dst": d,
            "kind": draw(st.sampled_from([*EDGE_KINDS, "jump"] if draw(rare) else EDGE_KINDS)),
        }
        if draw(rare):
            edge["guidance"] = "x" * (MAX_EDGE_TEXT + 1)
        edges.append(edge)
    return {"nodes": nodes, "edges": edges}


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph_st())
def test_random_graphs_accepted_iff_they_break_no_rule(data):
    try:
        g = ProcedureGraph.from_dict(data)
    except GraphError:
        assert rule_violations(data), f"rejected a valid graph: {data}"
        return
    assert rule_violations(data) == [], f"accepted an invalid graph: {data}"
    assert ProcedureGraph.from_dict(g.to_dict()) == g


GARBAGE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
    max_leaves=8,
)
SHAPED_GARBAGE = st.fixed_dictionaries(
    {
        "nodes": st.lists(
            st.dictionaries(st.sampled_from(["id", "kind", "tool", "text", "ref"]), GARBAGE),
            max_size=4,
        ),
        "edges": st.lists(
            st.dictionaries(st.sampled_from(["src", "dst", "kind", "condition"]), GARBAGE),
            max_size=4,
        )
        | GARBAGE,
    }
)


@settings(max_examples=60, deadline=None)
@given(GARBAGE | SHAPED_GARBAGE)
def test_garbage_raises_only_graph_error(data):
    with contextlib.suppress(GraphError):
        ProcedureGraph.from_dict(data)
