"""Localised guidance: where the agent is in a procedure and what lies ahead.

Seed (loom-procedures.txt, "Localised guidance"): the active node (``at``, a node id or
the tool just used, else the last node of ``recent_path``), the transitions up to
``hops`` ahead with their condition, guidance, pitfalls and how often earlier runs took
each and succeeded, and a prompt-ready text. With ``recent_path``: visited transitions
are marked, ``looping`` is set on a revisit with the loop's untaken exits, and failed
runs' notes through the active node are attached. When nothing matches, ``matched`` is
False and ``entry_nodes`` say where to start.

Fail-prone steps and transitions (the last evolve's findings) are read as pitfalls, as
the seed says: a transition ahead that is flagged, or that leads to a flagged step,
carries ``pitfall`` (the evidence in words), and the rendered text lists them, the
active step's own first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from procmem_core.errors import ParameterError, check_int
from procmem_core.graph.findings import FailProne
from procmem_core.graph.graph import Edge, Node, ProcedureGraph
from procmem_core.graph.ledger import RunAggregates, RunRecord

MAX_HOPS = 4
FAILURE_NOTES_SHOWN = 5


@dataclass(frozen=True)
class Transition:
    """An edge ahead of the active node; ``depth`` 1 leaves the active node itself.

    ``taken``/``succeeded``: runs that used this transition, and how many of them ended
    well; ``visited``: the caller's ``recent_path`` used it; ``pitfall``: why the
    transition (or the step it leads to) is fail-prone, or None.
    """

    src: str
    dst: str
    kind: str
    condition: str | None
    guidance: str | None
    pitfalls: str | None
    depth: int
    taken: int
    succeeded: int
    visited: bool
    pitfall: str | None = None


@dataclass(frozen=True)
class FailureNote:
    """The note of a failed earlier run that went through the active node."""

    run_id: int
    agent: str | None
    note: str


@dataclass(frozen=True)
class LocateResult:
    key: str
    matched: bool
    active: Node | None
    transitions: tuple[Transition, ...]
    looping: bool
    untaken_exits: tuple[Transition, ...]
    failure_notes: tuple[FailureNote, ...]
    entry_nodes: tuple[str, ...]
    rendered: str
    pitfalls: tuple[FailProne, ...] = ()


def check_hops(hops: int) -> int:
    return check_int("hops", hops, minimum=1, maximum=MAX_HOPS)


def check_recent_path(recent_path: Sequence[str] | None, graph: ProcedureGraph) -> tuple[str, ...]:
    if recent_path is None:
        return ()
    if isinstance(recent_path, str) or not isinstance(recent_path, Sequence):
        raise ParameterError("recent_path", recent_path, "expected a list of node ids or None")
    for i, nid in enumerate(recent_path):
        if not isinstance(nid, str) or not graph.has_node(nid):
            raise ParameterError(
                f"recent_path[{i}]", nid, f"expected a node id of {graph.node_ids}"
            )
    return tuple(recent_path)


def _active(graph: ProcedureGraph, at: str | None, path: tuple[str, ...]) -> str | None:
    if at is None:
        return path[-1] if path else None
    if not isinstance(at, str):
        raise ParameterError("at", at, "expected a node id or tool name string, or None")
    if graph.has_node(at):
        return at
    by_tool = [n.id for n in graph.nodes if n.kind == "action" and n.tool == at]
    if path:  # prefer the tool's node that can follow the last visited node
        after = {e.dst for e in graph.out_edges(path[-1])}
        by_tool.sort(key=lambda nid: nid not in after)
    return by_tool[0] if by_tool else None


def pitfall_text(f: FailProne) -> str:
    """A fail-prone flag as a pitfall the agent reads."""
    what = f"step {f.src}" if f.dst is None else f"{f.src} -> {f.dst}"
    return (
        f"{what} failed in {f.failures} of {f.runs} runs through it "
        f"({f.failure_rate:.0%} against {f.base_failure_rate:.0%} overall)"
    )


def _transition(
    e: Edge,
    depth: int,
    agg: RunAggregates,
    visited: set[tuple[str, str]],
    flags: dict[tuple[str, str | None], FailProne],
) -> Transition:
    ev = agg.edge(e.src, e.dst)
    flag = flags.get((e.src, e.dst)) or flags.get((e.dst, None))
    return Transition(
        e.src, e.dst, e.kind, e.condition, e.guidance, e.pitfalls, depth, ev.runs, ev.successes,
        e.pair in visited, None if flag is None else pitfall_text(flag),
    )  # fmt: skip


def locate_in(
    key: str,
    graph: ProcedureGraph,
    agg: RunAggregates,
    traces: Iterable[RunRecord],
    at: str | None = None,
    recent_path: Sequence[str] | None = None,
    hops: int = 2,
    fail_prone: Sequence[FailProne] = (),
) -> LocateResult:
    """Compute the ``LocateResult`` for one procedure (see the module doc)."""
    hops = check_hops(hops)
    path = check_recent_path(recent_path, graph)
    active = _active(graph, at, path)
    entries = graph.entry_nodes()
    if active is None:
        text = f"Procedure {key}: no node matches {at!r}. Start at: {', '.join(entries)}."
        return LocateResult(key, False, None, (), False, (), (), entries, text)
    visited = set(pairwise(path))
    flags = {(f.src, f.dst): f for f in fail_prone}
    transitions = _ahead(graph, active, hops, agg, visited, flags)
    before = path[:-1] if path and path[-1] == active else path
    looping = active in before
    exits = _loop_exits(graph, active, before, agg, visited, flags) if looping else []
    notes = [
        FailureNote(r.run_id, r.agent, r.note)
        for r in reversed(list(traces))
        if not r.ok and r.note and active in r.path
    ][:FAILURE_NOTES_SHOWN]
    node = graph.node(active)
    ahead = {(t.src, t.dst) for t in transitions} | {(t.dst, None) for t in transitions}
    pitfalls = [flags[(active, None)]] if (active, None) in flags else []
    pitfalls += [f for k, f in flags.items() if k in ahead and f not in pitfalls]
    text = render(key, node, transitions, looping, exits, notes, pitfalls)
    return LocateResult(
        key, True, node, tuple(transitions), looping, tuple(exits), tuple(notes), entries, text,
        tuple(pitfalls),
    )  # fmt: skip


def _ahead(
    graph: ProcedureGraph,
    active: str,
    hops: int,
    agg: RunAggregates,
    visited: set[tuple[str, str]],
    flags: dict[tuple[str, str | None], FailProne],
) -> list[Transition]:
    """Every transition within ``hops`` of ``active``, breadth first (each node expanded
    once), with its depth."""
    transitions: list[Transition] = []
    frontier, expanded = [active], {active}
    for depth in range(1, hops + 1):
        nxt = []
        for nid in frontier:
            for e in graph.out_edges(nid):
                transitions.append(_transition(e, depth, agg, visited, flags))
                if e.dst not in expanded:
                    expanded.add(e.dst)
                    nxt.append(e.dst)
        frontier = nxt
    return transitions


def _loop_exits(
    graph: ProcedureGraph,
    active: str,
    before: Sequence[str],
    agg: RunAggregates,
    visited: set[tuple[str, str]],
    flags: dict[tuple[str, str | None], FailProne],
) -> list[Transition]:
    """The untaken edges that leave the loop ``before`` closes at ``active`` (from its last
    visit on): the ways out of a loop."""
    start = len(before) - 1 - before[::-1].index(active)
    loop = set(before[start:]) | {active}
    return [
        _transition(e, 0, agg, visited, flags)
        for nid in dict.fromkeys(before[start:])
        for e in graph.out_edges(nid)
        if e.dst not in loop and e.pair not in visited
    ]


def _describe(t: Transition) -> str:
    parts = [f"{t.src} -> {t.dst} [{t.kind}]"]
    for name in ("condition", "guidance", "pitfalls"):
        value = getattr(t, name)
        if value:
            parts.append(f"{'when' if name == 'condition' else name}: {value}")
    parts.append(f"taken in {t.taken} runs, {t.succeeded} succeeded")
    if t.visited:
        parts.append("already taken this run")
    if t.pitfall:
        parts.append(f"PITFALL: {t.pitfall}")
    return "; ".join(parts)


def render(
    key: str,
    node: Node,
    transitions: Sequence[Transition],
    looping: bool,
    exits: Sequence[Transition],
    notes: Sequence[FailureNote],
    pitfalls: Sequence[FailProne] = (),
) -> str:
    """The prompt-ready text of a located position."""
    lines = [f"Procedure {key}: you are at {node.id!r} ({node.label()})."]
    if transitions:
        lines.append("Ahead:")
        lines += [f"{'  ' * (t.depth - 1)}- {_describe(t)}" for t in transitions]
    else:
        lines.append("This is an exit node: the procedure ends here.")
    if looping:
        lines.append(f"Warning: you are back at {node.id!r}, looping.")
        if exits:
            lines.append("Untaken exits from the loop:")
            lines += [f"- {_describe(t)}" for t in exits]
    if pitfalls:
        lines.append("Pitfalls (fail-prone in earlier runs):")
        lines += [f"- {pitfall_text(f)}" for f in pitfalls]
    if notes:
        lines.append("Notes from earlier failed runs through this step:")
        lines += [f"- run {n.run_id}: {n.note}" for n in notes]
    return "\n".join(lines)
