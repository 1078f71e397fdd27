"""``lattice.first_decisions``' three paths (bytes of runs, a verdict look-up per cell,
the rule per cell) give the same decisions, and ``LatticeGate.decide_batch``'s per-cell
statistic and reason look-ups (one p0 for every row) equal them computed row by row."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.gates import MarginGate, SPRTGate
from procmem_core.gates import lattice as sequential

GATES = [
    SPRTGate(),
    SPRTGate(max_runs=16, min_runs=1, at_cap="accept"),
    SPRTGate(max_runs=13, min_runs=9, at_cap="revert"),
    MarginGate(margin=0.1, min_runs=3, max_runs=21),
]


def by_hand(outcomes: np.ndarray, p0: np.ndarray, gate) -> tuple[np.ndarray, ...]:
    """The first non-continue verdict of each row, walking its runs one at a time."""
    rows, width = outcomes.shape
    t = min(width, gate.max_runs)
    verdict, runs, successes = np.zeros(rows, np.int8), np.full(rows, t), np.zeros(rows, int)
    for i in range(rows):
        s = 0
        for n in range(1, t + 1):
            s += int(outcomes[i, n - 1])
            code = int(gate.rule(s, n, float(p0[i]))) if n >= gate.min_runs else 0
            if code:
                verdict[i], runs[i] = code, n
                break
        successes[i] = s
    return verdict, runs, successes


@pytest.mark.parametrize("gate", GATES, ids=lambda g: f"{g.name}-{g.max_runs}-{g.min_runs}")
@pytest.mark.parametrize("width", [1, 7, 8, 9, 16, 50, 60])
@pytest.mark.parametrize("p0s", [1, 3, 70])  # one p0, a few, past BYTE_PATH_MAX_VALUES
def test_the_three_paths_agree_with_a_walk_run_by_run(gate, width, p0s, monkeypatch):
    rng = np.random.default_rng([width, p0s, gate.max_runs])
    rows = 150
    outcomes = rng.random((rows, width)) < rng.uniform(0.2, 1.0, (rows, 1))
    p0 = rng.choice(np.append(rng.uniform(0.3, 1.0, p0s - 1), [0.8]), rows)
    if p0s == 1:
        p0 = np.full(rows, 0.8)
    want = by_hand(outcomes, p0, gate)
    got = {
        "default": sequential.first_decisions(outcomes, p0, gate.rule, gate.min_runs, gate.max_runs)
    }
    monkeypatch.setattr(sequential, "BYTE_PATH_MAX_VALUES", 0)
    got["cells"] = sequential.first_decisions(outcomes, p0, gate.rule, gate.min_runs, gate.max_runs)
    monkeypatch.setattr(sequential, "TABLE_CELLS_BUDGET", 0)
    got["rule"] = sequential.first_decisions(outcomes, p0, gate.rule, gate.min_runs, gate.max_runs)
    for path, arrays in got.items():
        for name, a, b in zip(("verdict", "runs_used", "successes"), arrays, want, strict=True):
            np.testing.assert_array_equal(a, b, err_msg=f"{path}: {name}")


def test_bytes_are_read_in_packbits_order():
    # one success then failures: the byte path must see run 1 as the first bit
    rows = np.zeros((2, 12), dtype=bool)
    rows[0, 0] = True
    rows[1, 11] = True
    np.testing.assert_array_equal(sequential._pack_rows(rows), np.packbits(rows, axis=1))
    assert sequential._pack_rows(rows).tolist() == [[128, 0], [0, 16]]


@pytest.mark.parametrize("gate", GATES, ids=lambda g: f"{g.name}-{g.max_runs}-{g.min_runs}")
@pytest.mark.parametrize("p0", [0.8, 0.55, 0.0, 1.0])
def test_decide_batch_looks_up_the_statistic_and_reason_computed_row_by_row(gate, p0):
    rng = np.random.default_rng(int(p0 * 100))
    outcomes = rng.random((400, 40)) < rng.uniform(0.2, 1.0, (400, 1))
    batch = gate.decide_batch(outcomes, p0)
    rows = np.full(400, p0)
    stat = gate.statistic(batch.successes, batch.runs_used, rows)
    reason = gate.reason_codes(batch.successes, batch.runs_used, rows, batch.verdict)
    np.testing.assert_array_equal(batch.statistic.view(np.int64), stat.view(np.int64))
    assert batch.reason.dtype == object and batch.reason.tolist() == reason.tolist()
    assert set(reason) <= {
        "too_few_runs",
        "revert_boundary",
        "accept_boundary",
        "at_cap",
        "undecided",
    }
