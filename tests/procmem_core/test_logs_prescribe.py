"""Prescriptions for a fitted world hold at the worst bootstrap draw, or say they cannot."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.ab import Design, plan_rate
from procmem_core.ab.planner import DEFAULT_RATES
from procmem_core.flat.design import RuleTargets, evaluate
from procmem_core.gates import DesignQuestion
from procmem_core.logs.prescribe import draws, explore_rate, flat_rule, gate
from procmem_core.logs.world import Param

RATES = {"mean": Param(0.6, 0.03), "concentration": Param(20.0, 5.0)}


def test_draws_follow_the_fit():
    ms, ks = draws(RATES, np.random.default_rng(0), 4000)
    assert abs(ms.mean() - 0.6) < 4 * 0.03 / np.sqrt(4000)
    assert abs(ms.std() - 0.03) < 0.003
    assert abs(np.log(ks).std() - 5.0 / 20.0) < 0.02
    fixed, _ = draws({"mean": Param(0.6, float("nan")), "concentration": Param(20.0, 5.0)},
                     np.random.default_rng(0))  # fmt: skip
    assert np.all(fixed == 0.6)  # no SE: the estimate itself


def test_explore_rate_is_the_smallest_that_fits_at_the_worst_draw():
    ms, _ = draws(RATES, np.random.default_rng(1))
    p = explore_rate(ms, 0.1, 5000)
    assert p.meets
    eps = float(p.setting)
    # the planner at every draw (normal approximation: cheap) agrees on the worst one
    every = [plan_rate(Design(0.1, float(b)), eps, method="normal").sessions for b in ms]
    worst = p.details["worst_sessions"][eps]
    assert worst <= 5000 and abs(worst - max(every)) <= 0.1 * max(every)
    smaller = [e for e in DEFAULT_RATES if e < eps]
    assert all(p.details["worst_sessions"][e] > 5000 for e in smaller)
    # at the point estimate alone a smaller horizon may do: the draws cost sessions
    assert plan_rate(Design(0.1, 0.6), eps).sessions <= worst


def test_explore_rate_says_what_it_would_take():
    ms, _ = draws(RATES, np.random.default_rng(2))
    p = explore_rate(ms, 0.05, 300)
    assert not p.meets and "it would take" in p.sentence
    assert p.details["worst_sessions"][0.5] > 300


@pytest.mark.slow
def test_flat_rule_checked_at_the_extreme_draws():
    ms, _ = draws(RATES, np.random.default_rng(3))
    targets = RuleTargets(within=60)
    p = flat_rule(0.6, ms, targets)
    lo, hi = p.details["base_draws"]
    assert (lo, hi) == (ms.min(), ms.max())
    kept, excluded = p.details["kept_worst"], p.details["excluded_worst"]
    assert p.meets == (kept >= 0.9 and excluded >= 0.9) == ("meeting" in p.sentence)
    rule, threshold = p.details["rule"], p.details["threshold"]
    for b in (ms.min(), np.median(ms), ms.max()):  # the extremes are the worst draws
        at = evaluate(rule, threshold, RuleTargets(base=float(b), within=60))
        assert at.kept >= kept - 1e-12 and at.excluded >= excluded - 1e-12
    assert evaluate(rule, threshold, RuleTargets(base=lo, within=60)).kept == kept


@pytest.mark.slow
def test_gate_range_holds_every_draw():
    ms, ks = draws(RATES, np.random.default_rng(4), 50)
    q = DesignQuestion(concurrent=0.5, max_runs=80)
    p = gate(ms, ks, q)
    from scipy import stats

    assert p.details["p0_low"] <= max(0.16, stats.beta.ppf(0.05, ms * ks, (1 - ms) * ks).min())
    assert p.details["p0_high"] >= min(0.95, stats.beta.ppf(0.95, ms * ks, (1 - ms) * ks).max())
    assert p.meets == ("config" in p.details)


def test_evaluate_is_monotone_in_the_base_rate():
    """The reason the extreme draws are the worst ones (module docstring of prescribe)."""
    from procmem_core.flat import DEFAULT_RULE, DEFAULT_THRESHOLD

    kept = [evaluate(DEFAULT_RULE, DEFAULT_THRESHOLD, RuleTargets(base=b)).kept
            for b in (0.5, 0.6, 0.7)]  # fmt: skip
    excluded = [evaluate(DEFAULT_RULE, DEFAULT_THRESHOLD, RuleTargets(base=b)).excluded
                for b in (0.5, 0.6, 0.7)]  # fmt: skip
    assert kept[0] < kept[1] < kept[2] and excluded[0] > excluded[1] > excluded[2]
