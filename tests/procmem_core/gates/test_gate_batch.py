"""Decision-for-decision agreement of ``decide`` (run by run) with ``decide_batch``:
every gate, below, at and past its cap, with verdicts looked up in a table and evaluated
cell by cell, one p0 or one per row from prior ledgers, and rows processed in blocks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from procmem_core.gates import (
    CONTINUE,
    VERDICT_CODES,
    MarginGate,
    RevisionStats,
    SPRTGate,
)
from procmem_core.gates import lattice as sequential

PRIOR = RevisionStats(runs=20, successes=16)


# --- one rule, two speeds ---------------------------------------------------------------


def run_by_run(gate, outcomes: np.ndarray, p0, prior=PRIOR):
    """``decide`` after every run of every row, stopping at the first verdict."""
    verdicts, stops = [], []
    for row in outcomes:
        verdict, stop, s = CONTINUE, min(len(row), gate.max_runs), 0
        for n, ok in enumerate(row[: gate.max_runs], start=1):
            s += int(ok)
            d = gate.decide(prior, RevisionStats(n, s), p0=p0)
            if d.verdict != CONTINUE:
                verdict, stop = d.verdict, n
                break
        verdicts.append(VERDICT_CODES[verdict])
        stops.append(stop)
    return np.array(verdicts), np.array(stops)


GATES = [
    SPRTGate(max_runs=15, min_runs=3, at_cap="llr"),
    SPRTGate(max_runs=15, min_runs=1, at_cap="accept"),
    SPRTGate(max_runs=15, min_runs=4, at_cap="revert"),
    SPRTGate(max_runs=15, min_drop=0.3, alpha=0.1, beta=0.1, at_cap="llr"),
    MarginGate(margin=0.1, min_runs=3, max_runs=15),
]


@pytest.mark.parametrize("gate", GATES, ids=lambda g: f"{g.name}-{getattr(g, 'at_cap', '')}")
@pytest.mark.parametrize("width", [9, 15, 22])  # below, at and past max_runs
@pytest.mark.parametrize("p0", [0.9, 0.7, 0.5, 0.1])
@pytest.mark.parametrize("table_budget", [sequential.TABLE_CELLS_BUDGET, 0])
def test_decide_batch_agrees_with_decide_run_by_run(gate, width, p0, table_budget, monkeypatch):
    monkeypatch.setattr(sequential, "TABLE_CELLS_BUDGET", table_budget)
    rng = np.random.default_rng([width, int(p0 * 10)])
    truth = rng.uniform(0.2, 1.0, size=(40, 1))  # rows of very different quality
    outcomes = rng.random((40, width)) < truth
    verdict, stop = run_by_run(gate, outcomes, p0)
    batch = gate.decide_batch(outcomes, p0)
    np.testing.assert_array_equal(batch.verdict, verdict)
    np.testing.assert_array_equal(batch.runs_used, stop)
    successes = np.array([row[:n].sum() for row, n in zip(outcomes, stop, strict=True)])
    np.testing.assert_allclose(batch.statistic, gate.statistic(successes, stop, p0))


@pytest.mark.parametrize("table_budget", [sequential.TABLE_CELLS_BUDGET, 0])
def test_decide_batch_with_one_p0_per_row_from_prior_ledgers(table_budget, monkeypatch):
    monkeypatch.setattr(sequential, "TABLE_CELLS_BUDGET", table_budget)
    rng = np.random.default_rng(11)
    rows = 60
    prior_runs = rng.integers(0, 30, size=rows)
    prior_successes = rng.binomial(prior_runs, 0.8)
    for gate in (SPRTGate(max_runs=20), SPRTGate(max_runs=20, prior="lower_bound")):
        p0 = gate.estimate_p0(prior_successes, prior_runs)
        outcomes = rng.random((rows, 25)) < 0.7
        batch = gate.decide_batch(outcomes, p0)
        for i in range(rows):
            prior = RevisionStats(int(prior_runs[i]), int(prior_successes[i]))
            verdict, stop = run_by_run(gate, outcomes[i : i + 1], None, prior=prior)
            assert (batch.verdict[i], batch.runs_used[i]) == (verdict[0], stop[0])


def test_decide_batch_before_min_runs_and_on_empty_input():
    g = SPRTGate(min_runs=5)
    b = g.decide_batch(np.zeros((3, 4), dtype=bool), 0.8)
    assert b.count(CONTINUE) == 3 and list(b.runs_used) == [4, 4, 4]
    np.testing.assert_allclose(b.statistic, 4 * math.log(0.35 / 0.2))
    empty = g.decide_batch(np.zeros((0, 10), dtype=bool), 0.8)
    assert empty.verdict.shape == (0,)


def test_decide_batch_processes_rows_in_bounded_blocks(monkeypatch):
    g = SPRTGate(max_runs=30)
    rng = np.random.default_rng(5)
    outcomes = rng.random((500, 30)) < 0.7
    whole = g.decide_batch(outcomes, 0.8)
    monkeypatch.setattr(sequential, "CHUNK_ELEMENTS", 97)  # blocks of 3 rows
    blocked = g.decide_batch(outcomes, 0.8)
    np.testing.assert_array_equal(whole.verdict, blocked.verdict)
    np.testing.assert_array_equal(whole.runs_used, blocked.runs_used)
