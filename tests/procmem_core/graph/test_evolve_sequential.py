"""The store's revision gate is a sequential test whatever the evolve cadence.

A boundary crossed at run k decides at run k even when ``evolve`` first looks later, so
evolving once after many runs gives the same verdict and deciding run as evolving after
every run, and as the gate's own vectorized ``decide_batch`` on the same outcomes.
"""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.gates import VERDICT_NAMES, RevisionStats, SPRTGate
from procmem_core.graph import ProcedureStore

STEPS = ["look up the invoice", "check the refund policy window", "issue or decline"]
REVISED = ["look up the invoice", "escalate to a human"]
PRIOR = [True] * 80 + [False] * 20


def _store_with_revision(path=None):
    store = ProcedureStore.open(path) if path else ProcedureStore()
    key = store.add("refund", "a refund request", STEPS).key
    for ok in PRIOR:
        store.record_run(key, ["n1", "n2", "n3"], ok=ok)
    store.evolve(key)
    store.revise(
        key,
        {"nodes": [{"id": "n1"}, {"id": "x"}], "edges": [{"src": "n1", "dst": "x"}]},
        "escalate instead",
    )
    return store, key


def _decide(outcomes, every_run, path=None):
    store, key = _store_with_revision(path)
    report = None
    for i, ok in enumerate(outcomes):
        store.record_run(key, ["n1", "x"], ok=bool(ok))
        if every_run or i == len(outcomes) - 1:
            report = store.evolve(key)
            if report.revision_outcome != "pending":
                break
    primary = report.gate_decisions[0]
    return report.revision_outcome, primary.verdict, primary.runs_used


def test_crossing_then_recovering_still_reverts_at_the_crossing():
    # six failures cross ln A; twenty successes afterwards bring the ratio back down
    outcomes = [False] * 6 + [True] * 20
    late = _decide(outcomes, every_run=False)
    eager = _decide(outcomes, every_run=True)
    assert late == eager
    assert late[0] == "reverted" and late[2] == 6
    # judged on the final counts alone, the same runs would not revert
    gate = SPRTGate()
    final = gate.decide(RevisionStats(100, 80), RevisionStats(26, 20))
    assert final.verdict != "revert"


@pytest.mark.parametrize("seed", range(6))
def test_single_late_evolve_agrees_with_decide_batch(seed):
    rng = np.random.default_rng(seed)
    outcomes = rng.random(50) < 0.7
    gate = SPRTGate()
    p0 = gate.estimate_p0(80, 100)
    batch = gate.decide_batch(outcomes[None, :], p0)
    expected = VERDICT_NAMES[int(batch.verdict[0])], int(batch.runs_used[0])
    outcome, verdict, runs_used = _decide(outcomes, every_run=False)
    assert (verdict, runs_used) == expected
    assert outcome == {"revert": "reverted", "accept": "accepted"}[verdict]


def test_sqlite_store_replays_the_same_way(tmp_path):
    outcomes = [False] * 6 + [True] * 20
    assert _decide(outcomes, False, tmp_path / "s.db") == _decide(outcomes, True)
