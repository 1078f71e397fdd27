"""The fused session pass: its parts against the engine's rule and the plain forms.

The grid path (confidences as indices into the rule's reachable set) and the float path
(the rule's ``update`` on floats) give the same numbers; the table of moves gives the
same numbers as the fixed clamped step; bit-field counts decode exactly; the trajectory
tallied once per chunk equals ``RatioTally.add`` session by session; the effect sum is
recomputed as the row sum where the rounding could decide an outcome."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from procmem_core.flat import DEFAULT_RULE, ConfidenceRule, FlatRule
from procmem_core.flat.chain import confidence_space
from simulators.feedback import Feedback
from simulators.result import RatioTally
from simulators.scenarios import confidence_library
from simulators.scenarios.confidence import ConfidenceScenario
from simulators.scenarios.confidence_library import KindWeights, reachable, uniform_steps
from simulators.scenarios.confidence_pass import RECORDS, SessionPass, tally_trajectory
from simulators.users import UserPopulation

LADDER = np.array([0.0, 0.2, 0.5, 0.55, 0.6, 0.62, 0.9, 1.0])
UP = np.array([1, 2, 3, 5, 5, 6, 7, 7])  # moves that no fixed step reproduces
DOWN = np.array([0, 0, 0, 1, 2, 2, 4, 5])


@dataclass(frozen=True)
class LadderRule(FlatRule):
    """A test rule (unregistered: no ``name``) that moves along an uneven ladder."""

    initial: float = 0.6
    label: ClassVar[str] = "ladder"

    def update(self, confidence, positive, *, successes=None, failures=None, baseline=None):
        i = np.searchsorted(LADDER, np.asarray(confidence))
        out = LADDER[np.where(positive, UP[i], DOWN[i])]
        return float(out) if out.ndim == 0 else out

    def break_even_rate(self, baseline=None) -> float:
        return float("nan")

    def describe(self) -> str:
        return "ladder"


def results_equal(a, b) -> None:
    assert a.metrics.keys() == b.metrics.keys()
    for key, value in a.metrics.items():
        assert value == b.metrics[key] or (np.isnan(value) and np.isnan(b.metrics[key])), key
    for name, table in a.tables.items():
        assert table.equals(b.tables[name]), name


def floats(monkeypatch) -> None:
    """Make every rule keep its confidences as floats (no grid)."""
    monkeypatch.setattr(confidence_library, "reachable", lambda rule, threshold, sessions: None)


NOISY = Feedback.of(false_negative=0.2, missing=0.2, delay=1)
CASES = {
    "seed": {},
    "seed_everything": {
        "feedback": NOISY,
        "reshow_rate": 0.2,
        "withhold_rate": 0.3,
        "limit": 3,
        "population": UserPopulation(interference=0.02),
    },
    "ladder": {"rule": LadderRule(), "limit": 3},
    "ladder_everything": {
        "rule": LadderRule(),
        "feedback": NOISY,
        "reshow_rate": 0.1,
        "withhold_rate": 0.2,
        "withhold": "all",
        "limit": 2,
    },
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_grid_and_float_paths_give_the_same_numbers(name, monkeypatch):
    sc = ConfidenceScenario(replications=600, sessions=30, chunk_size=256, **CASES[name])
    assert reachable(sc.rule, sc.threshold, sc.sessions) is not None
    grid = sc.run(3)
    floats(monkeypatch)
    results_equal(grid, sc.run(3))


def test_the_ladder_takes_the_table_and_the_seed_the_fixed_step():
    ladder = reachable(LadderRule(), 0.55, 30)[0]
    assert np.array_equal(ladder.states, LADDER)
    assert uniform_steps(ladder) is None
    grid = ConfidenceRule(arithmetic="grid")
    seed = confidence_space(grid, 0.55, 0.6, keep_below=True)
    assert len(seed.states) == 101  # 0, 0.01, ..., 1: +8 and -15 states, clamped
    assert uniform_steps(seed) == (8, 15)
    coarse = confidence_space(
        ConfidenceRule(reward=0.3, penalty=0.3, arithmetic="grid"), 0.55, 0.6, keep_below=True
    )
    assert coarse.states.tolist() == [0.0, 0.1, 0.3, 0.4, 0.6, 0.7, 0.9, 1.0]
    assert uniform_steps(coarse) == (2, 2)  # 0.3 is two states up or down, clamped


def test_the_seeds_floats_keep_the_index_path_within_the_run():
    """In float arithmetic the space is the doubles reachable within the run's sessions;
    the index path and the float path (the rule's own update on every cell) agree."""
    space, start = reachable(DEFAULT_RULE, 0.55, 30)
    assert space.states[start] == 0.6 and len(space.states) > 101  # more doubles than cents
    assert 0.5499999999999997 in space.states.tolist()  # the seed's 5 up, 3 down
    assert reachable(DEFAULT_RULE, 0.55, 200) is None  # too many doubles: floats


def test_a_rule_without_a_small_grid_keeps_floats():
    fine = ConfidenceRule(reward=0.0123457, penalty=0.1500001, arithmetic="grid")
    assert reachable(fine, 0.55, 30) is None
    sim = SessionPass(ConfidenceScenario(rule=fine), np.random.default_rng(0), 4)
    assert isinstance(sim.state, confidence_library.FloatConfidences)


@pytest.mark.parametrize("k", [1, 3, 8, 31, 32, 255])
def test_kind_weights_decode_the_counts(k):
    rng = np.random.default_rng(k)
    kind = rng.integers(-1, 2, size=(k, 500))
    weights = KindWeights(kind == 1, kind == -1)
    mask = rng.random((k, 500)) < 0.6
    helpful, harmful, total = weights.decode(weights.code(mask))
    assert (helpful == (mask & (kind == 1)).sum(axis=0)).all()
    assert (harmful == (mask & (kind == -1)).sum(axis=0)).all()
    assert (total == mask.sum(axis=0)).all()
    assert (weights.total(weights.code(mask)) == total).all()


def test_trajectory_tally_equals_adding_session_by_session():
    sc = ConfidenceScenario(replications=300, sessions=12, procedures=5)
    sim = SessionPass(sc, np.random.default_rng(4), 300)
    sim.run()
    per_kind = {label: np.asarray((sim.kind == c).sum(axis=1), float)
                for label, c in (("helpful", 1), ("neutral", 0), ("harmful", -1))}  # fmt: skip
    names = ("success", "shown", "precision", "helpful_active", "neutral_active", "harmful_active")
    batch = {name: RatioTally(12) for name in names}
    tally_trajectory(batch, sim, per_kind)
    one = {name: RatioTally(12) for name in names}
    rec = {name: sim.rec[name].astype(float) for name in RECORDS}
    for t in range(12):
        one["success"].add(t, rec["success"][t], 1.0)
        one["shown"].add(t, rec["shown"][t], 1.0)
        one["precision"].add(t, rec["helpful_shown"][t], rec["shown"][t])
        for label in ("helpful", "neutral", "harmful"):
            one[f"{label}_active"].add(t, rec[label][t], per_kind[label])
    for name in names:
        for field in ("n", "sx", "sy", "sxx", "sxy", "syy"):
            assert np.array_equal(getattr(batch[name], field), getattr(one[name], field))


def test_outcome_near_the_probability_uses_the_row_sum():
    """Effects 0.1, -0.1, 0.1, 0.1 summed in a row give 0.2 (0.1 + 0.1 rounds to 0.2 and
    back), counted 3 (0.1) - 0.1 gives 0.20000000000000004: a draw between the two must be
    decided by the row sum, as the scenario always summed them."""
    pop = UserPopulation(base_rate=0.5, helpful_effect=0.1, harmful_effect=0.1)
    sim = SessionPass(ConfidenceScenario(population=pop, procedures=4), np.random.default_rng(0), 1)
    sim.effects[:] = [[0.1, -0.1, 0.1, 0.1]]
    shown = np.ones((4, 1), bool)
    row = 0.5 + float(np.einsum("ij->i", sim.effects)[0])
    counted = 0.5 + (3 * 0.1 - 1 * 0.1)
    assert row != counted  # the two sums differ in the last bit
    u = np.array([min(row, counted)])
    out = sim._outcome(u, shown, np.array([3]), np.array([1]), np.array([4.0]))
    assert out[0] == (u[0] < row)
