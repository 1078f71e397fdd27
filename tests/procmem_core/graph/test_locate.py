"""locate: active node by id or tool, transitions ahead with run counts, visited marks,
loops with untaken exits, failure notes, and the no-match answer."""

from __future__ import annotations

import pytest

from procmem_core.errors import ParameterError
from procmem_core.graph import SEED_EXAMPLE_GRAPH

LOOPY = {
    "nodes": [
        {"id": "draft"},
        {"id": "review", "kind": "decision"},
        {"id": "fix"},
        {"id": "ship", "kind": "action", "tool": "deploy"},
    ],
    "edges": [
        {"src": "draft", "dst": "review"},
        {"src": "review", "dst": "fix", "kind": "branch", "condition": "changes requested"},
        {"src": "fix", "dst": "review", "guidance": "address every comment"},
        {"src": "review", "dst": "ship", "kind": "branch", "condition": "approved"},
    ],
}


@pytest.fixture
def store(store):
    """conftest's memory/sqlite store with two procedures."""
    store.add("month end", "close the month", graph=SEED_EXAMPLE_GRAPH)
    store.add("release", "ship a change", graph=LOOPY)
    return store


def test_locate_by_tool_with_counts_and_hops(store):
    key = "procedure_month_end"
    store.record_run(key, ["cash", "forecast", "raise", "close"], ok=True)
    store.record_run(key, ["cash", "forecast", "raise", "close"], ok=False, note="raise rejected")
    store.record_run(key, ["cash", "forecast", "close"], ok=True)
    loc = store.locate(key, at="cash_flow_forecast")
    assert loc.matched and loc.active.id == "forecast"
    got = [(t.src, t.dst, t.depth, t.taken, t.succeeded) for t in loc.transitions]
    assert got == [
        ("forecast", "raise", 1, 2, 1),
        ("forecast", "close", 1, 1, 1),
        ("raise", "close", 2, 2, 1),
    ]
    assert loc.transitions[0].condition == "projected runway below the safety buffer"
    assert "pitfalls: do not stack a second request" in loc.rendered
    assert "taken in 2 runs, 1 succeeded" in loc.rendered
    assert [n.note for n in loc.failure_notes] == ["raise rejected"]
    assert [t.dst for t in store.locate(key, at="cash", hops=1).transitions] == ["forecast"]
    assert len(store.locate(key, at="cash", hops=4).transitions) == 4


def test_recent_path_marks_visits_and_detects_a_loop(store):
    key = "procedure_release"
    loc = store.locate(key, recent_path=["draft", "review", "fix", "review"])
    assert loc.active.id == "review" and loc.looping
    visited = {(t.src, t.dst) for t in loc.transitions if t.visited}
    assert visited == {("review", "fix"), ("fix", "review")}
    assert [(t.src, t.dst) for t in loc.untaken_exits] == [("review", "ship")]
    assert "looping" in loc.rendered and "Untaken exits" in loc.rendered
    straight = store.locate(key, recent_path=["draft", "review"])
    assert not straight.looping and straight.untaken_exits == ()


def test_no_match_gives_entry_nodes(store):
    loc = store.locate("procedure_release", at="no_such_tool")
    assert (loc.matched, loc.active, loc.entry_nodes) == (False, None, ("draft",))
    assert "Start at: draft" in loc.rendered
    assert not store.locate("procedure_month_end").matched  # neither at nor recent_path


def test_exit_node_is_rendered_as_the_end(store):
    loc = store.locate("procedure_release", at="deploy")
    assert loc.active.id == "ship" and loc.transitions == ()
    assert "exit node" in loc.rendered


LOCATE_ERRORS = [
    ({"hops": 0}, "hops=0"),
    ({"hops": 5}, "hops=5"),
    ({"at": 3}, "at=3"),
    ({"recent_path": "draft"}, "recent_path='draft'"),
    ({"recent_path": ["draft", "nowhere"]}, "recent_path[1]='nowhere'"),
]


@pytest.mark.parametrize(("kwargs", "fragment"), LOCATE_ERRORS)
def test_locate_rejects_bad_input(store, kwargs, fragment):
    with pytest.raises(ParameterError) as err:
        store.locate("procedure_release", **kwargs)
    assert fragment in str(err.value)
