"""The planner against simulation: its power (exact binomial where arms are small, normal
elsewhere) agrees with simulated experiments within 4 SE at three settings; the sessions
it asks for reach the target; its pick is the cheapest rate that fits the horizon."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from procmem_core.ab import NormalMixtureAIPW
from procmem_core.ab.planner import (
    Design,
    exact_power,
    fixed_power,
    normal_power,
    normal_sessions,
    plan,
    plan_rate,
    sequential_critical,
    sequential_power,
)
from procmem_core.errors import ParameterError

Z = stats.norm.ppf(0.975)


def _wilson(k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's interval written out (the reference side)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / n
        d = 1 + Z * Z / n
        c = (p + Z * Z / (2 * n)) / d
        h = Z / d * np.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return c - h, c + h


def _simulated_power(design: Design, n: int, eps: float, reps: int, seed: int) -> float:
    """Share of simulated experiments whose Newcombe interval excludes 0."""
    rng = np.random.default_rng(seed)
    n0 = rng.binomial(n, eps, size=reps).astype(float)
    n1 = n - n0
    k0 = rng.binomial(n0.astype(int), design.base).astype(float)
    k1 = rng.binomial(n1.astype(int), design.base + design.lift).astype(float)
    l1, u1 = _wilson(k1, n1)
    l0, u0 = _wilson(k0, n0)
    with np.errstate(divide="ignore", invalid="ignore"):
        p1, p0 = k1 / n1, k0 / n0
        low = p1 - p0 - np.sqrt((p1 - l1) ** 2 + (u0 - p0) ** 2)
        high = p1 - p0 + np.sqrt((u1 - p1) ** 2 + (p0 - l0) ** 2)
    ok = (n0 > 0) & (n1 > 0)
    return float((ok & ((low > 0) | (high < 0))).mean())


@pytest.mark.parametrize(
    ("lift", "base", "n", "eps", "method"),
    [
        (0.3, 0.5, 200, 0.1, "exact"),  # 20 withheld on average: fewer than 30
        (0.1, 0.5, 600, 0.3, "exact"),  # 180 withheld
        (0.05, 0.6, 8329, 0.1, "normal"),  # the planner's own answer for 0.05 over 0.6
    ],
)
def test_power_agrees_with_simulation_within_4_se(lift, base, n, eps, method):
    """20,000 simulated experiments each: SE <= 0.0036, so 4 SE is at most 0.015."""
    design, reps = Design(lift, base), 20_000
    want = exact_power(design, n, eps) if method == "exact" else normal_power(design, n, eps)
    got = _simulated_power(design, n, eps, reps, seed=n)
    assert abs(got - want) <= 4 * math.sqrt(want * (1 - want) / reps), (got, want)


def test_exact_power_is_needed_where_the_withheld_arm_is_small():
    design = Design(0.3, 0.5)
    exact, normal = exact_power(design, 100, 0.2), normal_power(design, 100, 0.2)
    assert abs(exact - normal) > 0.03  # the normal approximation is off by points there
    assert plan_rate(design, 0.2).method == "exact binomial"
    assert plan_rate(Design(0.05, 0.6), 0.1).method == "normal approx."


def test_sessions_needed_reach_the_target_and_one_fewer_need_not():
    design = Design(0.3, 0.5)
    r = plan_rate(design, 0.1)
    assert exact_power(design, r.sessions, 0.1) >= 0.8
    assert exact_power(design, r.sessions - 1, 0.1) < 0.8 + 0.01  # sawtooth aside
    assert r.withheld == pytest.approx(0.1 * r.sessions)
    assert r.forgone == pytest.approx(0.1 * r.sessions * 0.3)


def test_normal_formula_by_hand():
    # (1.95996 + 0.84162)^2 (0.65 0.35 / 0.95 + 0.6 0.4 / 0.05) / 0.05^2 = 15821.6
    v = 0.65 * 0.35 / 0.95 + 0.6 * 0.4 / 0.05
    want = (stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) ** 2 * v / 0.05**2
    assert normal_sessions(Design(0.05, 0.6), 0.05) == pytest.approx(want)
    assert want == pytest.approx(15821.6, abs=0.1)


def test_the_pick_is_the_cheapest_rate_within_the_horizon():
    design = Design(0.05, 0.6)
    p = plan(design, horizon=20_000)
    fits = [r for r in p.rates if r.sessions <= 20_000]
    assert p.pick == min(fits, key=lambda r: r.forgone)
    assert p.pick.explore_rate == 0.05 and p.pick.sessions == 15822
    assert all(r.power_at_horizon is not None for r in p.rates)
    assert plan(design, horizon=100).pick is None  # nothing reaches 0.8 in 100 sessions


@pytest.mark.slow
def test_sequential_power_is_a_lower_bound_near_the_simulated_one():
    """1,000 simulated deployments of 2,000 sessions (explore rate 0.3, lift 0.1): the
    normal-mixture sequence's power at the horizon against the planner's normal
    approximation; within 4 SE (0.044) after the design-variance allowance of 0.03."""
    design, n, eps, reps = Design(0.1, 0.5), 2000, 0.3, 1000
    rng = np.random.default_rng(5)
    shown = rng.random((reps, n)) >= eps
    y = (rng.random((reps, n)) < 0.5 + 0.1 * shown).astype(float)
    est = NormalMixtureAIPW().estimate(y, shown, np.full(y.shape, 0.5), np.ones_like(shown), 0.7)
    got = ((est.low > 0) | (est.high < 0)).mean()
    want = sequential_power(design, n, eps)
    assert abs(got - want) <= 4 * math.sqrt(want * (1 - want) / reps) + 0.03, (got, want)
    assert plan_rate(design, eps, sequential=True).sessions > plan_rate(design, eps).sessions


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: Design(0.0, 0.5), "lift"),
        (lambda: Design(0.6, 0.5), "lift"),
        (lambda: Design(0.1, 1.2), "base"),
        (lambda: Design(0.1, 0.5, power=1.0), "power"),
        (lambda: Design(0.1, 0.5, alpha=0.0), "alpha"),
        (lambda: plan_rate(Design(0.1, 0.5), 0.0), "explore_rate"),
        (lambda: plan_rate(Design(0.1, 0.5), 1.0), "explore_rate"),
        (lambda: plan_rate(Design(0.1, 0.5), 0.1, method="magic"), "method"),
        (lambda: plan(Design(0.1, 0.5), horizon=1), "horizon"),
        (lambda: plan(Design(0.1, 0.5), rates=()), "rates"),
        (lambda: exact_power(Design(0.1, 0.5), 0, 0.1), "sessions"),
    ],
)
def test_invalid_planner_inputs(call, field):
    with pytest.raises(ParameterError, match=field):
        call()


def test_certain_outcomes_are_planned_exactly_or_refused_by_name():
    """Base 0 and lift 1 (every outcome certain): the normal approximation's variance is
    0. fixed_power and plan crashed with ZeroDivisionError at 1,000 sessions, and the
    sequential and normal plans answered 0 sessions; now the fixed-n read is exact (the
    binomial sum, here by hand: both arms non-empty and Newcombe's interval off 0) and
    the normal and sequential reads are refused naming the lift."""
    design = Design(1.0, 0.0)
    by_hand = 1 - 2 * 0.5**1000  # every split with both arms non-empty excludes 0 at n 1000
    assert fixed_power(design, 1000, 0.5) == pytest.approx(by_hand, abs=1e-12)
    p = plan(design, horizon=1000)
    assert p.pick is not None and all(r.method == "exact binomial" for r in p.rates)
    assert p.pick.sessions == plan_rate(design, p.pick.explore_rate, method="exact").sessions
    assert exact_power(design, p.pick.sessions, p.pick.explore_rate) >= 0.8
    for call in (
        lambda: plan_rate(design, 0.5, sequential=True),
        lambda: plan_rate(design, 0.5, method="normal"),
        lambda: sequential_power(design, 100, 0.5),
    ):
        with pytest.raises(ParameterError, match=r"^lift=1\.0 .*method='exact'"):
            call()


def test_near_a_bound_the_normal_plan_overstates_what_newcombes_read_needs():
    """docs/ab.md's figures: at base 0.9, lift 0.05, explore rate 0.1 the normal formula
    (299 withheld: not a small arm) asks for 2,992 sessions, where the read's exact power
    is 0.904 (the simulation above agrees within 4 SE) and 2,127 sessions reach 0.8."""
    design = Design(0.05, 0.9)
    r = plan_rate(design, 0.1)
    assert (r.sessions, r.method) == (2992, "normal approx.")
    assert exact_power(design, 2992, 0.1) == pytest.approx(0.904, abs=5e-4)
    assert _simulated_power(design, 2992, 0.1, 20_000, seed=2992) == pytest.approx(
        0.904, abs=4 * math.sqrt(0.904 * 0.096 / 20_000)
    )
    assert plan_rate(design, 0.1, method="exact").sessions == 2127


def test_sequential_plan_tuned_where_one_session_is_enough():
    """A lift of 0.98 over 0.01 with the sequence tuned at 1 session: the normal
    approximation reaches the power at n = 1 (by hand below), where the root search had
    no sign change and raised scipy's ValueError; it is 1, as untuned plans say."""
    design = Design(0.98, 0.01)
    v = design.variance(0.5)
    assert 0.98 * math.sqrt(1 / v) - sequential_critical(1, 0.05, 1) >= stats.norm.ppf(0.8)
    assert plan_rate(design, 0.5, sequential=True, tuning=1).sessions == 1
    assert plan_rate(design, 0.5, sequential=True, tuning=100).sessions == 3


def test_a_numpy_or_fraction_lift_is_the_same_design():
    """A lift read from a float32 column (or a Fraction) was refused as "not a non-zero
    number"; it is now the same design, and plans the same."""
    from fractions import Fraction

    want = plan_rate(Design(0.05, 0.6), 0.1)
    assert plan_rate(Design(np.float32(0.05), np.float32(0.6)), 0.1).sessions == pytest.approx(
        want.sessions,
        abs=1,  # float32's 0.05 is 0.0500000007
    )
    assert Design(Fraction(1, 20), 0.6) == Design(0.05, 0.6)
    assert plan_rate(Design(Fraction(1, 20), Fraction(3, 5)), 0.1) == want
    for bad in (True, "0.05", float("nan"), np.int64(0)):
        with pytest.raises(ParameterError, match=r"^lift="):
            Design(bad, 0.6)
