"""Holds if / breaks when for the explore planner's pick (issue 30): its fixed-n power with
the true lift or the horizon moved, each equal to the power computed directly (the normal
formula from scratch where the arms are large, the exact binomial power where small)."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from procmem_core.ab.planner import Design, exact_power, plan
from procmem_core.ab.sensitivity import explore_sensitivity


def _normal(lift: float, base: float, n: int, eps: float, alpha: float = 0.05) -> float:
    p0, p1 = base, base + lift
    v = p1 * (1 - p1) / (1 - eps) + p0 * (1 - p0) / eps
    return float(stats.norm.cdf(abs(lift) / math.sqrt(v / n) - stats.norm.ppf(1 - alpha / 2)))


def test_large_arms_match_the_normal_formula_and_rise_with_lift_and_horizon():
    d = Design(0.1, 0.6)
    rows = explore_sensitivity(d, 1000, 0.5)
    assert [(r.assumption, r.value) for r in rows] == [
        ("as planned", "lift +0.1, 1000 sessions"),
        ("true lift", "+0.05"),
        ("true lift", "+0.075"),
        ("true lift", "+0.125"),
        ("horizon", "500 sessions"),
        ("horizon", "750 sessions"),
        ("horizon", "1500 sessions"),
    ]
    lifts = {"+0.05": 0.05, "+0.075": 0.075, "+0.125": 0.125}
    for r in rows:
        lift = lifts.get(r.value, 0.1)
        n = int(r.value.split()[0]) if r.assumption == "horizon" else 1000
        assert r.figure("power") == pytest.approx(_normal(lift, 0.6, n, 0.5), abs=1e-12)
        assert r.holds == (r.figure("power") >= 0.8) and r.note == "normal approx."
    powers = [r.figure("power") for r in rows]
    assert powers[1] < powers[2] < powers[0] < powers[3]  # more lift, more power
    assert powers[4] < powers[5] < powers[0] < powers[6]  # more sessions, more power
    assert not rows[1].holds and rows[0].holds


def test_small_arms_are_exact_and_the_pick_is_the_planners():
    d = Design(0.3, 0.5, power=0.8)
    pick = plan(d, (0.2, 0.5), 120).pick
    assert pick is not None
    rows = explore_sensitivity(d, 120, pick.explore_rate)
    assert rows[0].figure("power") == pytest.approx(pick.power_at_horizon, abs=1e-12)
    moved = rows[1]  # lift 0.15
    assert moved.figure("power") == exact_power(Design(0.15, 0.5), 120, pick.explore_rate)
    assert moved.note == "exact"


def test_a_lift_outside_the_unit_interval_is_skipped():
    rows = explore_sensitivity(Design(0.3, 0.65), 200, 0.2, lift_factors=(0.5, 1.25))
    assert [r.value for r in rows if r.assumption == "true lift"] == ["+0.15"]  # 0.65+0.375 > 1
