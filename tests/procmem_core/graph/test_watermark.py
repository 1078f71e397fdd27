"""The evolve watermark: evolving after every run and once at the end give the same
aggregates, findings and status (seed: "procedure.evolve folds runs newer than the
ledger_folded_through watermark")."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.graph import ProcedureStore

BRANCHY = {
    "nodes": [{"id": "start"}, {"id": "good"}, {"id": "bad"}, {"id": "end"}, {"id": "spare"}],
    "edges": [
        {"src": "start", "dst": "good", "kind": "branch"},
        {"src": "start", "dst": "bad", "kind": "branch"},
        {"src": "good", "dst": "end"},
        {"src": "bad", "dst": "end"},
        {"src": "start", "dst": "spare"},
        {"src": "spare", "dst": "end"},
    ],
}
PATHS = (["start", "good", "end"], ["start", "bad", "end"], ["start", "bad"], [])
FAIL = (0.1, 0.7, 0.9, 0.4)  # failure probability of each path


def _ledger(seed: int, n: int) -> list[tuple[list[str], bool]]:
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    out = []
    for _ in range(n):
        i = int(rng.choice(4, p=[0.5, 0.2, 0.1, 0.2]))
        out.append((PATHS[i], bool(rng.random() >= FAIL[i])))
    return out


def _state(store, key):
    p = store.get(key)
    loc = store.locate(key, at="start")
    return p, [
        (t.src, t.dst, t.taken, t.succeeded, getattr(t, "pitfall", None)) for t in loc.transitions
    ]


@pytest.mark.parametrize(("seed", "n"), [(0, 40), (1, 120), (2, 7), (3, 200)])
def test_evolving_after_every_run_equals_evolving_once_at_the_end(seed, n):
    every, once = ProcedureStore(), ProcedureStore()
    for s in (every, once):
        s.add("branchy", "a branchy procedure", graph=BRANCHY)
    key = "procedure_branchy"
    for path, ok in _ledger(seed, n):
        every.record_run(key, path, ok=ok)
        every.evolve(key)
        once.record_run(key, path, ok=ok)
    once.evolve(key)
    assert _state(every, key) == _state(once, key)


GOOD = (["start", "good", "end"], True)
BAD = (["start", "bad"], False)


@pytest.mark.parametrize(
    ("ledger", "final"),
    [
        ([GOOD] * 12, "template"),
        ([GOOD] * 12 + [BAD] * 4, "quarantined"),
        ([GOOD] * 2, "exercised"),
    ],
)
def test_every_cadence_ends_at_the_same_status(ledger, final):
    """Evolving after every run, every 3 or 5 runs, or once at the end."""
    states = []
    for every in (1, 3, 5, len(ledger)):
        store = ProcedureStore()
        store.add("branchy", "a branchy procedure", graph=BRANCHY)
        for i, (path, ok) in enumerate(ledger, 1):
            store.record_run("procedure_branchy", path, ok=ok)
            if i % every == 0 or i == len(ledger):
                status = store.evolve("procedure_branchy").status
        assert status == final
        states.append(_state(store, "procedure_branchy"))
    assert all(s == states[0] for s in states)
