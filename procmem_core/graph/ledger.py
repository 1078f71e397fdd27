"""The run ledger: one ``RunRecord`` per reported execution, and the aggregates folded from it.

Seed (loom-procedures.txt, "Learning from runs"): ``record_run`` appends one row with the
path, ok, note, graph revision, steps taken, duration and tokens. The graph keeps the last
``TRACE_LIMIT`` traces; the aggregate statistics (``RunAggregates``) are updated on every
run and survive that truncation.

Counting convention: a node or transition counts once per run that used it, however many
times the run revisited it, so every per-node rate is a proportion of runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, TypedDict

import numpy as np

from procmem_core.errors import ParameterError, is_number
from procmem_core.frozen import quick_init
from procmem_core.limits import MAX_NOTE, check_identifier

TRACE_LIMIT = 50
NOTE_LIMIT = MAX_NOTE


@quick_init
@dataclass(frozen=True)
class RunRecord:
    """One ledger row. ``revision`` is the graph revision the run was made against;
    ``reflection`` is the agent's own lesson from ``run.complete`` (kept on the run for now)."""

    run_id: int
    key: str
    namespace: str
    revision: int
    path: tuple[str, ...]
    ok: bool
    note: str | None = None
    cost: float | None = None
    duration_ms: int | None = None
    tokens: int | None = None
    agent: str | None = None
    reflection: str | None = None

    @property
    def steps_taken(self) -> int:
        return len(self.path)

    def to_json(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["path"] = list(self.path)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunRecord:
        return cls(**{**d, "path": tuple(d["path"]), "ok": bool(d["ok"])})


@dataclass(frozen=True)
class AgentStats:
    """Runs and successes one agent reported for a procedure."""

    agent: str
    runs: int
    successes: int


@dataclass(slots=True)
class Tally:
    """Runs and successes of one item (a node, a transition, an agent): a running count."""

    runs: int = 0
    successes: int = 0

    def add(self, ok: int) -> None:
        self.runs += 1
        self.successes += ok

    @property
    def failures(self) -> int:
        return self.runs - self.successes

    def to_json(self) -> list[int]:
        return [self.runs, self.successes]


RunEvidence = Tally
"""What the ledger says about a node or transition (a ``Tally``)."""


@dataclass(slots=True)
class RevisionTally:
    """Runs, successes and the costs of successful runs of one graph revision."""

    runs: int = 0
    successes: int = 0
    success_costs: list[float] = field(default_factory=list)

    def add(self, run: RunRecord) -> None:
        self.runs += 1
        self.successes += int(run.ok)
        if run.ok and run.cost is not None:
            self.success_costs.append(run.cost)


class RunDetails(TypedDict, total=False):
    """The optional details of a run report, as keywords (``ProcedureStore.record_run`` and
    ``complete_run``; ``reflections.complete_run`` passes them on as given); checked by
    ``check_run_fields``."""

    note: str | None
    cost: float | None
    duration_ms: int | None
    tokens: int | None
    agent: str | None


_BARE_RUN = dict.fromkeys(("path", "ok", "note", "cost", "duration_ms", "tokens", "agent"))


def check_run_fields(
    path: Any,
    ok: Any,
    note: Any,
    cost: Any,
    duration_ms: Any,
    tokens: Any,
    agent: Any,
) -> dict[str, Any]:
    """Validate one run report before it touches the ledger.

    Returns the fields normalised to plain Python types (numpy scalars accepted):
    ``path`` (tuple), ``ok``, ``note``, ``cost`` (float), ``duration_ms``, ``tokens``
    (int), ``agent``.
    """
    if (
        type(ok) is bool
        and note is cost is duration_ms is tokens is agent is None
        and type(path) in (tuple, list)
    ):  # the common report (a path of ids, an outcome, nothing else): already normalised
        for node in path:  # a loop, not ``all`` over a generator: once per recorded run
            if type(node) is not str:
                break
        else:
            return dict(_BARE_RUN, path=tuple(path), ok=ok)
    if isinstance(path, str) or not isinstance(path, Sequence | np.ndarray):
        raise ParameterError("path", path, "expected a list of node ids")
    for i, node in enumerate(path):
        if not isinstance(node, str):
            raise ParameterError(f"path[{i}]", node, "expected a node id string")
    if not isinstance(ok, bool | np.bool_):
        raise ParameterError("ok", ok, "expected True or False")
    if note is not None and (not isinstance(note, str) or len(note) > NOTE_LIMIT):
        raise ParameterError("note", note, f"expected None or a string of <= {NOTE_LIMIT} chars")
    if cost is not None and (not is_number(cost) or not math.isfinite(cost) or cost < 0):
        raise ParameterError("cost", cost, "expected None or a finite number >= 0")
    counts = {}
    for name, value in (("duration_ms", duration_ms), ("tokens", tokens)):
        if value is not None and (
            isinstance(value, bool | np.bool_)
            or not isinstance(value, int | np.integer)
            or value < 0
        ):
            raise ParameterError(name, value, "expected None or an integer >= 0")
        counts[name] = None if value is None else int(value)
    if agent is not None:  # an identifier (``limits``): a memory actor, a for_agent name
        check_identifier("agent", agent)
    return {
        "path": tuple(str(n) for n in path),
        "ok": bool(ok),
        "note": None if note is None else str(note),
        "cost": None if cost is None else float(cost),
        **counts,
        "agent": None if agent is None else str(agent),
    }


def _tally(counts: dict, item: Any) -> Tally:
    """``counts[item]``, created empty when new (``setdefault`` without building a
    ``Tally`` on every call)."""
    t = counts.get(item)
    if t is None:
        t = counts[item] = Tally()
    return t


@dataclass
class RunAggregates:
    """Running totals over every run of a procedure (never truncated).

    ``node_runs[id] = Tally(runs that visited id, of which succeeded)``; ``edge_runs`` likewise
    for transitions ``(src, dst)`` that are edges of the graph at recording time.
    ``path_runs``/``path_successes`` count runs that reported a non-empty path (the only
    ones that say anything about nodes); ``failure_streak`` counts the trailing failures.
    """

    runs: int = 0
    successes: int = 0
    path_runs: int = 0
    path_successes: int = 0
    failure_streak: int = 0
    node_runs: dict[str, Tally] = field(default_factory=dict)
    edge_runs: dict[tuple[str, str], Tally] = field(default_factory=dict)
    by_agent: dict[str, Tally] = field(default_factory=dict)

    def fold(self, run: RunRecord, edges: frozenset[tuple[str, str]]) -> None:
        """Add one run; each node and edge counts once per run."""
        ok = int(run.ok)
        self.runs += 1
        self.successes += ok
        self.failure_streak = 0 if run.ok else self.failure_streak + 1
        if run.agent is not None:
            _tally(self.by_agent, run.agent).add(ok)
        if not run.path:
            return
        self.path_runs += 1
        self.path_successes += ok
        nodes, edge_runs = self.node_runs, self.edge_runs
        visited = set(run.path)
        for node in visited:
            t = nodes.get(node)
            if t is None:
                t = nodes[node] = Tally()
            t.runs += 1  # Tally.add, without a call per item
            t.successes += ok
        pairs = pairwise(run.path)  # distinct when no node repeats: no set to build then
        for pair in pairs if len(visited) == len(run.path) else set(pairs):
            if pair in edges:
                t = edge_runs.get(pair)
                if t is None:
                    t = edge_runs[pair] = Tally()
                t.runs += 1
                t.successes += ok

    def copy(self) -> RunAggregates:
        """An independent copy (the tallies are copied, not shared)."""
        return RunAggregates(
            runs=self.runs,
            successes=self.successes,
            path_runs=self.path_runs,
            path_successes=self.path_successes,
            failure_streak=self.failure_streak,
            node_runs={k: Tally(v.runs, v.successes) for k, v in self.node_runs.items()},
            edge_runs={k: Tally(v.runs, v.successes) for k, v in self.edge_runs.items()},
            by_agent={k: Tally(v.runs, v.successes) for k, v in self.by_agent.items()},
        )

    def keep_only(self, node_ids: frozenset[str], edges: frozenset[tuple[str, str]]) -> None:
        """Drop the evidence of nodes and transitions a new graph no longer has."""
        self.node_runs = {k: v for k, v in self.node_runs.items() if k in node_ids}
        self.edge_runs = {k: v for k, v in self.edge_runs.items() if k in edges}

    def node(self, node_id: str) -> Tally:
        t = self.node_runs.get(node_id)
        return Tally(t.runs, t.successes) if t is not None else Tally()

    def edge(self, src: str, dst: str) -> Tally:
        t = self.edge_runs.get((src, dst))
        return Tally(t.runs, t.successes) if t is not None else Tally()

    def agent_stats(self, agent: str) -> AgentStats:
        t = self.by_agent.get(agent, Tally())
        return AgentStats(agent=agent, runs=t.runs, successes=t.successes)

    def agents(self) -> tuple[AgentStats, ...]:
        if not self.by_agent:
            return ()
        return tuple(self.agent_stats(a) for a in sorted(self.by_agent))

    def to_json(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in ("runs", "successes", "path_runs", "path_successes")}
        d["failure_streak"] = self.failure_streak
        d["node_runs"] = {k: v.to_json() for k, v in self.node_runs.items()}
        d["edge_runs"] = [[s, t, *v.to_json()] for (s, t), v in self.edge_runs.items()]
        d["by_agent"] = {k: v.to_json() for k, v in self.by_agent.items()}
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunAggregates:
        return cls(
            runs=d["runs"],
            successes=d["successes"],
            path_runs=d["path_runs"],
            path_successes=d["path_successes"],
            failure_streak=d["failure_streak"],
            node_runs={k: Tally(*v) for k, v in d["node_runs"].items()},
            edge_runs={(s, t): Tally(r, k) for s, t, r, k in d["edge_runs"]},
            by_agent={k: Tally(*v) for k, v in d["by_agent"].items()},
        )
