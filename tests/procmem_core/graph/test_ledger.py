"""The run ledger's aggregates: once-per-run counting, failure streaks, JSON round trip."""

from __future__ import annotations

from procmem_core.graph.ledger import RunAggregates, RunRecord


def _run(i, path, ok, agent=None):
    return RunRecord(i, "procedure_x", "default", 1, tuple(path), ok, agent=agent)


def test_nodes_and_edges_count_once_per_run_and_only_graph_edges():
    agg = RunAggregates()
    edges = frozenset({("a", "b"), ("b", "a"), ("b", "c")})
    agg.fold(_run(1, ["a", "b", "a", "b", "c"], True, "bot"), edges)
    agg.fold(_run(2, ["a", "c"], False), edges)  # a -> c is not an edge: not counted
    agg.fold(_run(3, [], False, "bot"), edges)  # no path: counts as a run only
    assert (agg.runs, agg.successes, agg.path_runs, agg.path_successes) == (3, 1, 2, 1)
    assert agg.node("a").runs == 2 and agg.node("a").successes == 1 and agg.node("a").failures == 1
    assert agg.edge("a", "b").runs == 1 and agg.edge("a", "c").runs == 0
    assert agg.failure_streak == 2
    assert [(s.agent, s.runs, s.successes) for s in agg.agents()] == [("bot", 2, 1)]


def test_keep_only_drops_removed_nodes_and_json_round_trips():
    agg = RunAggregates()
    agg.fold(_run(1, ["a", "b", "c"], True), frozenset({("a", "b"), ("b", "c")}))
    agg.keep_only(frozenset({"a", "b"}), frozenset({("a", "b")}))
    assert set(agg.node_runs) == {"a", "b"} and set(agg.edge_runs) == {("a", "b")}
    assert agg.runs == 1  # totals are not evidence about a node; they stay
    assert RunAggregates.from_json(agg.to_json()) == agg


def test_run_record_json_round_trip():
    r = RunRecord(7, "procedure_x", "ns", 2, ("a", "b"), False, "note", 1.5, 10, 20, "bot")
    assert RunRecord.from_json(r.to_json()) == r and r.steps_taken == 2
