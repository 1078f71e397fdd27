"""The design's lockstep search of many members' confidence spaces, and the excursions'
merge of a step's doubles: both must give, bit for bit, what one rule's own search and
``np.unique`` give (the design's answers are compared by hash in
``benchmarks/bench_flat_design.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.flat import flat_fate
from procmem_core.flat.baseline import BaselineRule
from procmem_core.flat.design_table import still_shown
from procmem_core.flat.excursion import _merge
from procmem_core.flat.rule import ConfidenceRule, StepMoves
from procmem_core.flat.spaces import confidence_space, reach

RULES = [
    ConfidenceRule(0.6, 0.08, 0.15),
    ConfidenceRule(0.6, 0.03, 0.07),
    ConfidenceRule(0.6, 0.3, 0.01, floor=0.1, ceiling=0.9),
    ConfidenceRule(0.6, 0.17, 0.29),
]


@pytest.mark.parametrize("arithmetic", ["float", "grid"])
def test_step_moves_are_each_rules_update_bit_for_bit(arithmetic):
    rules = [ConfidenceRule(r.initial, r.reward, r.penalty, r.floor, r.ceiling, arithmetic)
             for r in RULES]  # fmt: skip
    rng = np.random.default_rng(3)
    conf = np.concatenate([rng.random(400), np.round(rng.random(400), 2), [0.0, 1.0, 0.55]])
    member = rng.integers(0, len(rules), conf.size)
    moves = StepMoves(rules)
    for positive in (True, False):
        got = moves(conf, member, positive)
        want = np.array([rules[m].update(c, positive) for c, m in zip(conf, member, strict=True)])
        assert got.tobytes() == want.tobytes()


def test_step_moves_read_the_baseline_and_refuse_mixed_arithmetic():
    rules = [BaselineRule(0.6, s) for s in (0.1, 0.3)]
    conf = np.array([0.2, 0.5, 0.9, 0.33])
    member = np.array([0, 1, 1, 0])
    got = StepMoves(rules, 0.6)(conf, member, False)
    want = [rules[m].update(c, False, baseline=0.6) for c, m in zip(conf, member, strict=True)]
    assert got.tobytes() == np.array(want).tobytes()
    with pytest.raises(ParameterError, match="baseline"):
        StepMoves(rules)
    with pytest.raises(ParameterError, match="arithmetic"):
        StepMoves([ConfidenceRule(), ConfidenceRule(arithmetic="grid")])


@pytest.mark.parametrize("horizon", [0, 1, 12])
def test_lockstep_search_gives_each_members_own_space(horizon):
    starts = [np.unique(np.round(np.linspace(0.3, 1.0, k), 2)) for k in (5, 1, 9, 3)]
    thresholds = [0.55, 0.5, 0.05, 0.95]
    found = reach(StepMoves(RULES), starts, thresholds, horizon=horizon)
    for m, rule in enumerate(RULES):
        own = confidence_space(rule, thresholds[m], starts[m], horizon=horizon)
        got = found.space(m)
        for field in ("states", "up", "down", "shown", "depth"):
            assert getattr(got, field).tobytes() == getattr(own, field).tobytes(), field
    assert len(found.states) == sum(len(found.space(m).states) for m in range(len(RULES)))


def test_a_member_too_large_is_left_out_and_the_others_are_untouched():
    fine = ConfidenceRule(0.6, 0.013, 0.017, arithmetic="grid")  # many states
    seed = ConfidenceRule(arithmetic="grid")  # 46 states above 0.55
    starts = [np.array([0.6]), np.array([0.6])]
    found = reach(StepMoves([fine, seed]), starts, [0.05, 0.55], max_states=50)
    assert found.too_large.tolist() == [True, False]
    assert len(found.space(0).states) == 0
    own = confidence_space(seed, 0.55, 0.6, max_states=50)
    assert found.space(1).states.tobytes() == own.states.tobytes()
    with pytest.raises(ParameterError, match="at most 50"):
        confidence_space(fine, 0.05, 0.6, max_states=50)


def test_keep_below_follows_the_walk_under_the_threshold():
    rule = ConfidenceRule(arithmetic="grid")
    found = reach(StepMoves([rule]), [np.array([0.6])], [0.55], keep_below=True)
    own = confidence_space(rule, 0.55, 0.6, keep_below=True)
    assert found.space(0).states.tobytes() == own.states.tobytes()
    assert own.states.min() == 0.0 and (found.up >= 0).all() and (found.down >= 0).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_merge_is_numpys_unique_with_its_inverse(seed):
    rng = np.random.default_rng(seed)
    grid = np.round(rng.random(300), 3)  # ties, as equal doubles from two paths
    runs = [np.sort(grid[:200]), np.sort(grid[100:])]  # a step's moves up, then down
    for values in (np.concatenate(runs), rng.permutation(grid), grid[:0], grid[:1]):
        conf, inverse = _merge(values)
        want, want_inverse = np.unique(values, return_inverse=True)
        assert conf.tobytes() == want.tobytes()
        assert np.array_equal(inverse, want_inverse)


def test_a_batch_of_mixed_rules_groups_them_and_matches_flat_fate():
    """Float and grid confidence rules and a baseline rule in one batch: each group is
    searched with its own arithmetic and horizon, and every figure is ``flat_fate``'s."""
    rules = [
        (ConfidenceRule(0.6, 0.08, 0.15), 0.55),
        (ConfidenceRule(0.6, 0.08, 0.15, arithmetic="grid"), 0.55),
        (BaselineRule(0.7, 0.1), 0.5),
        (ConfidenceRule(0.9, 0.03, 0.11), 0.3),
        (ConfidenceRule(0.2, 0.05, 0.05), 0.3),  # starts below its threshold: never shown
    ]
    got = still_shown(rules, 0.7, 25, 0.6)
    for (rule, threshold), value in zip(rules, got, strict=True):
        base = 0.6 if rule.needs_baseline else None
        want = 1.0 - flat_fate(0.7, 25, rule, threshold, base).p_excluded
        assert value == pytest.approx(want, abs=1e-12)
    assert got[-1] == 0.0 and got[0] != got[1]  # float and grid readings differ here
