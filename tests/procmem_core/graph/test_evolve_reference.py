"""Evolve's trust statuses against references written out here (seed: loom-procedures.txt,
"Learning from runs"; docs/graph.md).

- template bar, per graph revision: ``successes >= 5``, ``successes / runs >= 0.8``
  (compared exactly, as fractions), no revision pending, and a topology unchanged over
  the last ``min_runs`` runs;
- quarantine: the trailing failed runs of the current revision number at least
  ``strike_limit`` (0 = off); a success resets the streak, so it lifts quarantine.

Both stores (the ``store`` fixture). The reference side counts runs itself and never
calls ``graph.status``.
"""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import numpy as np
import pytest

from procmem_core.gates import SPRTGate
from procmem_core.graph import ProcedureGraph
from procmem_core.graph import status as st

STEPS = ["look up the invoice", "check the refund policy window", "issue or decline"]
PATH = ["n1", "n2", "n3"]
REVISED = ProcedureGraph.from_steps([*STEPS[:2], "escalate to a human"])


def ref_template(successes: int, runs: int, stable: bool, pending: bool) -> bool:
    return successes >= 5 and runs > 0 and F(successes, runs) >= F(4, 5) and stable and not pending


def ref_streak(outcomes: list[bool]) -> int:
    """Trailing failures: a success resets the count to 0."""
    n = 0
    for ok in outcomes:
        n = 0 if ok else n + 1
    return n


def test_template_bar_on_a_grid_against_exact_fractions():
    """Every (successes, runs) up to 30 with and without a stable topology, scalar and
    vectorized: the 0.8 boundary (4/5, 8/10, 24/30) and the five-success floor included."""
    cells = [(s, n, b) for n in range(31) for s in range(n + 1) for b in (True, False)]
    s, n, b = (np.array(x) for x in zip(*cells, strict=True))
    expected = [ref_template(*c, pending=False) for c in cells]
    assert st.meets_template_bar(s, n, b).tolist() == expected
    assert [st.meets_template_bar(*c) for c in cells[:200]] == expected[:200]
    assert ref_template(4, 5, True, False) is False and ref_template(8, 10, True, False)


@pytest.mark.parametrize("strike_limit", [0, 1, 3])
def test_quarantine_flag_on_every_streak(strike_limit):
    streaks = np.arange(8)
    expected = [strike_limit > 0 and k >= strike_limit for k in streaks]
    assert st.should_quarantine(streaks, strike_limit).tolist() == expected
    assert [st.should_quarantine(int(k), strike_limit) for k in streaks] == expected


def test_no_template_while_a_revision_is_pending(store):
    """The revision carries the prior's evidence: 17 of 18 successes on a topology that has
    not changed for eight runs would clear the bar, but the revision is pending (the gate
    wants 30 runs): it stays exercised until the gate accepts, then becomes a template."""
    key = store.add("refund", "s", STEPS).key
    for ok in [True] * 9 + [False]:
        store.record_run(key, PATH, ok=ok)
    assert store.evolve(key).status == "template"
    store.revise(key, REVISED, "escalate")
    gate = SPRTGate(min_runs=30, max_runs=50)
    for i in range(40):
        store.record_run(key, PATH, ok=True)
        r = store.evolve(key, gate=gate)
        pending = r.revision_outcome == "pending"
        if i >= 4:  # the topology has been stable for min_runs runs by now
            assert r.status == ("exercised" if pending else "template"), (i, r)
        if not pending:
            break
    assert r.revision_outcome == "accepted" and store.get(key).pending_revision is None
    assert ref_template(r.successes, r.runs, stable=True, pending=False)


@pytest.mark.parametrize(
    "outcomes",
    [
        [False, False, True, False, False],  # a success resets: streak 2, not 4
        [True, False, False, False],  # streak 3: quarantined
        [False, False, False, True],  # quarantined, then lifted by the success
        [False] * 3 + [True] + [False] * 3,  # quarantined again after the reset
    ],
)
def test_failure_streak_resets_after_a_success(store, outcomes):
    """After every run and evolve (strike limit 3): quarantined exactly when the reference
    streak reaches 3; evolve runs once 3 runs are in."""
    key = store.add("refund", "a refund request", STEPS).key
    for i in range(1, len(outcomes) + 1):
        store.record_run(key, ["n1"], ok=outcomes[i - 1])
        status = store.evolve(key, strike_limit=3).status
        quarantined = i >= 3 and ref_streak(outcomes[:i]) >= 3
        assert (status == "quarantined") is quarantined, (outcomes[:i], status)


def test_streak_over_every_short_history(store):
    """Every outcome history of length 6 on one procedure, run by run: the status matches
    the reference streak (strike limit 2)."""
    for n, history in enumerate(itertools.product([True, False], repeat=6)):
        key = store.add(f"refund {n}", "s", STEPS).key
        for i, ok in enumerate(history, start=1):
            store.record_run(key, ["n1"], ok=ok)
            if i >= 3:
                status = store.evolve(key, strike_limit=2).status
                assert (status == "quarantined") is (ref_streak(list(history[:i])) >= 2)
