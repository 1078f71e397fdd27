"""Procedure graphs (seed: loom-procedures.txt, "The graph").

A procedure is a directed graph: nodes are steps or tool calls, edges the allowed
transitions, and each edge carries text the agent reads (condition, guidance, pitfalls).
The engine never executes a graph; it validates, stores and serves it.

Validation (``GraphError``, a ``ValueError`` naming the offending node or edge):
duplicate node ids, duplicate edges, edges to unknown nodes, self-loops, cycles with no
exit (a strongly connected set of nodes no edge leaves, so a run entering it can never
finish), unknown node or edge kinds, an action node without a tool, fewer than
``MIN_STEPS`` or more than ``MAX_NODES`` nodes, more than ``MAX_EDGES`` edges, an edge
attribute over ``MAX_EDGE_TEXT`` characters, fewer than ``MIN_STEPS`` or more than
``MAX_STEPS`` steps in a steps-only registration.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from procmem_core.errors import ProcmemError, quote
from procmem_core.limits import MAX_IDENTIFIER, MAX_STEP_TEXT

NODE_KINDS = ("step", "action", "memory", "consolidation", "decision", "template_ref")
EDGE_KINDS = ("dep", "dataflow", "branch", "converge")
EDGE_TEXT_FIELDS = ("condition", "guidance", "pitfalls")
MAX_NODES = 256
MAX_EDGES = 1024
MAX_EDGE_TEXT = 512
MIN_STEPS = 2
MAX_STEPS = 64

SEED_EXAMPLE_GRAPH = {
    "nodes": [
        {"id": "cash", "kind": "action", "tool": "check_cash_in_bank"},
        {"id": "forecast", "kind": "action", "tool": "cash_flow_forecast"},
        {"id": "raise", "kind": "action", "tool": "fund_raising_request"},
        {"id": "close", "kind": "action", "tool": "book_closing"},
    ],
    "edges": [
        {"src": "cash", "dst": "forecast", "kind": "dataflow"},
        {
            "src": "forecast",
            "dst": "raise",
            "kind": "branch",
            "condition": "projected runway below the safety buffer",
            "pitfalls": "do not stack a second request while one is pending",
        },
        {"src": "forecast", "dst": "close", "kind": "branch", "condition": "runway healthy"},
        {"src": "raise", "dst": "close"},
    ],
}
"""The seed's example graph, in the seed's JSON shape (what ``add(graph=...)`` accepts)."""

_NODE_FIELDS = ("id", "kind", "tool", "text", "ref")
_EDGE_FIELDS = ("src", "dst", "kind", *EDGE_TEXT_FIELDS)


class GraphError(ProcmemError):
    """A graph breaks a rule; ``subject`` names the offending node, edge or field."""

    def __init__(self, subject: str, problem: str) -> None:
        self.subject = subject
        self.problem = problem
        super().__init__(f"{subject}: {problem}")


def _text(subject: str, value: Any, *, required: bool, limit: int | None = None) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        need = "a non-empty string" if required else "a string or null"
        raise GraphError(subject, f"expected {need}, got {quote(value)}")
    if limit is not None and len(value) > limit:
        raise GraphError(subject, f"{len(value)} characters, at most {limit} allowed")
    return value


@dataclass(frozen=True)
class Node:
    """One node: ``kind`` in ``NODE_KINDS``; an ``action`` names its ``tool``.

    ``text`` is what the step says (steps-only registrations put the step here);
    ``ref`` is the procedure key a ``template_ref`` points to.
    """

    id: str
    kind: str = "step"
    tool: str | None = None
    text: str | None = None
    ref: str | None = None

    def __post_init__(self) -> None:
        _text("node id", self.id, required=True, limit=MAX_IDENTIFIER)
        where = f"node {quote(self.id)}"
        if self.kind not in NODE_KINDS:
            raise GraphError(where, f"unknown kind {quote(self.kind)}; allowed: {NODE_KINDS}")
        _text(f"{where} tool", self.tool, required=self.kind == "action", limit=MAX_IDENTIFIER)
        _text(f"{where} text", self.text, required=False, limit=MAX_STEP_TEXT)
        _text(f"{where} ref", self.ref, required=False, limit=MAX_IDENTIFIER)

    def label(self) -> str:
        """Human-readable label: the text, else the tool call, else the id."""
        if self.text:
            return self.text
        if self.tool:
            return f"call {self.tool}"
        return self.id

    def to_dict(self) -> dict[str, str]:
        return {k: getattr(self, k) for k in _NODE_FIELDS if getattr(self, k) is not None}


@dataclass(frozen=True)
class Edge:
    """A transition ``src -> dst`` of kind ``EDGE_KINDS`` with optional reader text."""

    src: str
    dst: str
    kind: str = "dep"
    condition: str | None = None
    guidance: str | None = None
    pitfalls: str | None = None

    def __post_init__(self) -> None:
        _text("edge src", self.src, required=True, limit=MAX_IDENTIFIER)
        _text("edge dst", self.dst, required=True, limit=MAX_IDENTIFIER)
        where = f"edge {self.src!r}->{self.dst!r}"
        if self.kind not in EDGE_KINDS:
            raise GraphError(where, f"unknown kind {quote(self.kind)}; allowed: {EDGE_KINDS}")
        for name in EDGE_TEXT_FIELDS:
            _text(f"{where} {name}", getattr(self, name), required=False, limit=MAX_EDGE_TEXT)

    @property
    def pair(self) -> tuple[str, str]:
        return (self.src, self.dst)

    def to_dict(self) -> dict[str, str]:
        return {k: getattr(self, k) for k in _EDGE_FIELDS if getattr(self, k) is not None}


@dataclass(frozen=True)
class ProcedureGraph:
    """A validated procedure graph. Construction runs every rule (see the module doc)."""

    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...] = ()
    _index: dict[str, int] = field(init=False, repr=False, compare=False)
    _out: dict[str, tuple[Edge, ...]] = field(init=False, repr=False, compare=False)
    _hash: list[str] = field(init=False, repr=False, compare=False, default_factory=list)
    _memo: dict[str, Any] = field(init=False, repr=False, compare=False, default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "edges", tuple(self.edges))
        for item, kind in [(n, Node) for n in self.nodes] + [(e, Edge) for e in self.edges]:
            if not isinstance(item, kind):
                raise GraphError("graph", f"expected {kind.__name__} objects, got {quote(item)}")
        if len(self.nodes) < MIN_STEPS:
            raise GraphError("nodes", f"{len(self.nodes)} nodes, at least {MIN_STEPS} needed")
        if len(self.nodes) > MAX_NODES:
            raise GraphError("nodes", f"{len(self.nodes)} nodes, at most {MAX_NODES} allowed")
        if len(self.edges) > MAX_EDGES:
            raise GraphError("edges", f"{len(self.edges)} edges, at most {MAX_EDGES} allowed")
        index: dict[str, int] = {}
        for n in self.nodes:
            if n.id in index:
                raise GraphError(f"node {n.id!r}", "duplicate node id")
            index[n.id] = len(index)
        seen: set[tuple[str, str]] = set()
        out: dict[str, list[Edge]] = {n.id: [] for n in self.nodes}
        for e in self.edges:
            where = f"edge {e.src!r}->{e.dst!r}"
            for end in (e.src, e.dst):
                if end not in index:
                    raise GraphError(where, f"unknown node {end!r}")
            if e.src == e.dst:
                raise GraphError(where, "self-loop")
            if e.pair in seen:
                raise GraphError(where, "duplicate edge")
            seen.add(e.pair)
            out[e.src].append(e)
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_out", {k: tuple(v) for k, v in out.items()})
        trapped = closed_cycles(len(self.nodes), [(index[e.src], index[e.dst]) for e in self.edges])
        if trapped:
            ids = [self.nodes[i].id for i in trapped[0]]
            raise GraphError(f"node {ids[0]!r}", f"cycle with no exit through nodes {ids}")

    # -- construction ---------------------------------------------------------------

    @classmethod
    def from_steps(cls, steps: Sequence[str]) -> ProcedureGraph:
        """A linear graph ``n1 -> n2 -> ...`` with one step node per step text."""
        if isinstance(steps, str) or not isinstance(steps, Sequence):
            raise GraphError("steps", f"expected a list of step texts, got {quote(steps)}")
        if not MIN_STEPS <= len(steps) <= MAX_STEPS:
            raise GraphError("steps", f"{len(steps)} steps, allowed {MIN_STEPS}..{MAX_STEPS}")
        nodes = []
        for i, s in enumerate(steps, 1):
            text = _text(f"steps[{i - 1}]", s, required=True, limit=MAX_STEP_TEXT)
            nodes.append(Node(f"n{i}", "step", text=text))
        edges = [Edge(f"n{i}", f"n{i + 1}") for i in range(1, len(steps))]
        return cls(tuple(nodes), tuple(edges))

    @classmethod
    def from_dict(cls, data: Any) -> ProcedureGraph:
        """The seed's JSON shape: ``{"nodes": [{id, kind, tool?}], "edges": [{src, dst, ...}]}``.

        A missing node kind means ``step``; a missing edge kind means ``dep``.
        """
        if not isinstance(data, Mapping):
            raise GraphError("graph", f"expected a mapping with nodes and edges, got {quote(data)}")
        extra = set(data) - {"nodes", "edges"}
        if extra:
            raise GraphError("graph", f"unknown fields {sorted(map(str, extra))}")
        raw_nodes, raw_edges = data.get("nodes"), data.get("edges", [])
        for name, raw in (("nodes", raw_nodes), ("edges", raw_edges)):
            if not isinstance(raw, list | tuple):
                raise GraphError(name, f"expected a list, got {quote(raw)}")
        nodes = [
            Node(**_fields(f"nodes[{i}]", d, _NODE_FIELDS, ("id",)))
            for i, d in enumerate(raw_nodes)
        ]
        edges = [
            Edge(**_fields(f"edges[{i}]", d, _EDGE_FIELDS, ("src", "dst")))
            for i, d in enumerate(raw_edges)
        ]
        return cls(tuple(nodes), tuple(edges))

    @classmethod
    def coerce(cls, graph: ProcedureGraph | Mapping[str, Any]) -> ProcedureGraph:
        """Accept a ``ProcedureGraph`` as is, or build one from the seed's JSON shape."""
        return graph if isinstance(graph, ProcedureGraph) else cls.from_dict(graph)

    def to_dict(self) -> dict[str, list[dict[str, str]]]:
        return {
            "nodes": [n.to_dict() for n in self.nodes],
            "edges": [e.to_dict() for e in self.edges],
        }

    # -- queries --------------------------------------------------------------------

    def canonical_hash(self) -> str:
        """SHA-256 of the graph with nodes sorted by id and edges by (src, dst).

        Two graphs that differ only in listing order hash alike; any change of a kind,
        tool, text or edge attribute changes the hash. Computed once per graph.
        """
        if self._hash:
            return self._hash[0]
        body = {
            "nodes": sorted((n.to_dict() for n in self.nodes), key=lambda d: d["id"]),
            "edges": sorted((e.to_dict() for e in self.edges), key=lambda d: (d["src"], d["dst"])),
        }
        blob = json.dumps(body, sort_keys=True, separators=(",", ":"))
        self._hash.append(hashlib.sha256(blob.encode()).hexdigest())
        return self._hash[0]

    def _memoized(self, name: str, compute: Any) -> Any:
        """A query's answer, computed once per graph (the graph is immutable; every
        memoized answer is an immutable tuple or frozenset)."""
        try:
            return self._memo[name]
        except KeyError:
            value = self._memo[name] = compute()
            return value

    @property
    def node_ids(self) -> tuple[str, ...]:
        return self._memoized("node_ids", lambda: tuple(n.id for n in self.nodes))

    def has_node(self, node_id: str) -> bool:
        return node_id in self._index

    def first_unknown(self, path: Sequence[str]) -> int | None:
        """The position of the first id in ``path`` that is not a node of this graph (None:
        every one is)."""
        index = self._index
        for node in path:  # a loop, not ``all`` over a generator: once per recorded run
            if node not in index:
                return path.index(node)
        return None

    def node(self, node_id: str) -> Node:
        return self.nodes[self._index[node_id]]

    def out_edges(self, node_id: str) -> tuple[Edge, ...]:
        return self._out[node_id]

    def edge_pairs(self) -> frozenset[tuple[str, str]]:
        return self._memoized("edge_pairs", lambda: frozenset(e.pair for e in self.edges))

    def entry_nodes(self) -> tuple[str, ...]:
        """Nodes no edge enters; the first listed node when every node has a predecessor."""
        return self._memoized("entry_nodes", self._entry_nodes)

    def _entry_nodes(self) -> tuple[str, ...]:
        entered = {e.dst for e in self.edges}
        entries = tuple(n.id for n in self.nodes if n.id not in entered)
        return entries or (self.nodes[0].id,)

    def tools(self) -> frozenset[str]:
        """Tools named by action nodes (what ``tool_boost`` matches ``recent_tools`` against)."""
        return self._memoized(
            "tools", lambda: frozenset(n.tool for n in self.nodes if n.kind == "action" and n.tool)
        )

    def reading_order(self) -> tuple[str, ...]:
        """Node ids breadth-first from the entry nodes, then any unreached ones in list order."""
        return self._memoized("reading_order", self._reading_order)

    def _reading_order(self) -> tuple[str, ...]:
        order: list[str] = []
        seen: set[str] = set()
        frontier = list(self.entry_nodes())
        while frontier:
            nxt: list[str] = []
            for nid in frontier:
                if nid in seen:
                    continue
                seen.add(nid)
                order.append(nid)
                nxt.extend(e.dst for e in self._out[nid])
            frontier = nxt
        order.extend(n.id for n in self.nodes if n.id not in seen)
        return tuple(order)


def _fields(
    subject: str, raw: Any, allowed: Iterable[str], required: Iterable[str]
) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise GraphError(subject, f"expected a mapping, got {quote(raw)}")
    extra = set(raw) - set(allowed)
    if extra:
        raise GraphError(subject, f"unknown fields {sorted(map(str, extra))}")
    missing = [k for k in required if k not in raw]
    if missing:
        raise GraphError(subject, f"missing fields {missing}")
    return dict(raw)


def _acyclic(n_nodes: int, edges: Sequence[tuple[int, int]]) -> bool:
    """Kahn's algorithm: True when every node can be removed in topological order."""
    indegree = [0] * n_nodes
    out: list[list[int]] = [[] for _ in range(n_nodes)]
    for s, d in edges:
        out[s].append(d)
        indegree[d] += 1
    ready = [i for i in range(n_nodes) if indegree[i] == 0]
    removed = 0
    while ready:
        i = ready.pop()
        removed += 1
        for d in out[i]:
            indegree[d] -= 1
            if indegree[d] == 0:
                ready.append(d)
    return removed == n_nodes


def closed_cycles(n_nodes: int, edges: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Strongly connected sets of two or more nodes that no edge leaves (cycles with no exit).

    In the condensation DAG every node reaches a sink component; a run can finish only
    if that sink is a single node, so the bad graphs are exactly those with a sink
    component of two or more nodes. Returned as lists of node indices, in index order.
    """
    if _acyclic(n_nodes, edges):
        return []
    src, dst = np.array(edges, dtype=np.int64).T
    adj = csr_matrix((np.ones(len(src)), (src, dst)), shape=(n_nodes, n_nodes))
    _, labels = connected_components(adj, directed=True, connection="strong")
    sizes = np.bincount(labels)
    leaves = np.zeros(sizes.size, dtype=bool)
    leaves[labels[src][labels[src] != labels[dst]]] = True
    bad = [c for c in range(sizes.size) if sizes[c] > 1 and not leaves[c]]
    groups = [np.flatnonzero(labels == c).tolist() for c in bad]
    return sorted(groups, key=lambda g: g[0])
