"""Prescriptions for a fitted world hold at the worst bootstrap draw, or say they cannot."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.ab import Design, plan_rate
from procmem_core.ab.planner import DEFAULT_RATES
from procmem_core.flat.design import RuleTargets, evaluate
from procmem_core.gates import DesignQuestion
from procmem_core.logs.lifts import sized_lift
from procmem_core.logs.prescribe import (
    base_draws,
    draws,
    explore_rate,
    flat_rule,
    gate,
    inflation,
    parameter_draws,
)
from procmem_core.logs.world import LOG_KAPPA_MAX, Param

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
    at = {b: evaluate(rule, threshold, RuleTargets(base=b, within=60))
          for b in (lo, float(np.median(ms)), hi)}  # fmt: skip
    for found in at.values():  # the extremes are the worst draws
        assert found.kept >= kept - 1e-12 and found.excluded >= excluded - 1e-12
    assert at[lo].kept == kept


@pytest.mark.slow
def test_gate_range_holds_every_draw():
    ms, ks = draws(RATES, np.random.default_rng(4), 50)
    q = DesignQuestion(concurrent=0.5, max_runs=80)
    p = gate(ms, ks, q)
    from scipy import stats

    assert p.details["p0_low"] <= max(0.16, stats.beta.ppf(0.05, ms * ks, (1 - ms) * ks).min())
    assert p.details["p0_high"] >= min(0.95, stats.beta.ppf(0.95, ms * ks, (1 - ms) * ks).max())
    assert p.meets == ("config" in p.details)


def test_a_concentration_fitted_at_a_boundary_draws_within_the_fits_range():
    """Every shown session failed (a live graph run's first 12 sessions): the fit put
    kappa at 1.0e-11 with an SE of 1.2e-8, so its log-normal draws (sigma 1186 on log
    kappa) overflowed to inf and ``gate``'s beta quantiles raised OverflowError, ending
    ``python -m experiments.analyze``. The draws now stay within the fit's own range."""
    rates = {"mean": Param(2.07e-18, 3.48e-15), "concentration": Param(1.03e-11, 1.22e-8)}
    ms, ks = draws(rates, np.random.default_rng(0))
    assert np.isfinite(ks).all() and (ks > 0).all()
    assert np.log(ks).max() <= LOG_KAPPA_MAX + 1e-9 and np.log(ks).min() >= -LOG_KAPPA_MAX - 1e-9
    p = gate(ms, ks, DesignQuestion(max_runs=40))
    assert 0.16 <= p.details["p0_low"] < p.details["p0_high"] <= 0.95


@pytest.mark.parametrize(("drop", "low", "said"), [
    (0.06, 0.07, "No gate family meets"),
    (0.57, 0.58, "reach outside it, from 0.316 (a p0 at or below the drop cannot fall by it)"),
])  # fmt: skip
def test_gate_range_starts_above_the_drop_whatever_its_floats(drop, low, said):
    """The range starts at ``min_drop + 0.01`` when draws reach below it, floored to a
    hundredth: ``0.06 + 0.01`` is 0.06999999999999999 in floats, so it floored to 0.06, the
    drop itself, and the design question refused its own range (ParameterError on
    min_drop; so did 0.57)."""
    ms, ks = np.full(4, drop), np.full(4, 10.0)
    q = DesignQuestion(min_drop=drop, p0_low=max(0.3, drop + 0.05), concurrent=0.5, max_runs=30)
    p = gate(ms, ks, q)
    assert p.details["p0_low"] == low
    assert said in p.sentence
    if not p.meets:  # the question has concurrent control: the remedy is not to add it
        assert "it would take a larger max_runs or a longer ledger." in p.sentence
        assert "concurrent control" not in p.sentence


def test_the_gate_sentence_says_which_draws_its_range_leaves_out():
    """The range stops at 0.95: draws whose 95 % quantile is above it are not covered, and
    the sentence says so (it said "for every p0 in [0.89, 0.95], the range of every draw"
    where the draws reach 0.986)."""
    ms, ks = np.full(8, 0.95), np.full(8, 60.0)
    q = DesignQuestion(alpha=0.1, beta=0.3, min_drop=0.25, ledger=10, concurrent=0.4, max_runs=40)
    p = gate(ms, ks, q)
    assert p.meets and p.details["p0_high"] == 0.95
    assert "the range of every draw" not in p.sentence
    assert "reach outside it, up to 0.986 (the range stops at 0.95)" in p.sentence
    inside = gate(np.full(8, 0.7), np.full(8, 60.0), q)
    assert "which holds the 5-95 % quantiles of every draw's success rate" in inside.sentence


def test_the_gate_prescription_gives_the_sessions_of_both_arms():
    """Issue 28: the deployment's gate sentence gives the sessions a decision takes when
    nothing changed and at the drop, both arms at the concurrent share (it gave the cap
    alone); without concurrent control and no fixed-ledger gate feasible, what concurrent
    control would cost, for the gate the objective picks."""
    ms, ks = np.full(8, 0.7), np.full(8, 60.0)
    p = gate(ms, ks, DesignQuestion(alpha=0.1, beta=0.3, min_drop=0.25, ledger=10,
                                    concurrent=0.4, max_runs=40))  # fmt: skip
    design = p.details["design"]
    a = design.chosen
    assert p.meets and a.design == "concurrent"
    null, alt = a.runs_null, a.runs_alt
    assert (f"a decision takes {sum(null):.1f} sessions when nothing changed and "
            f"{sum(alt):.1f} at the drop ({null[0]:.1f} + {null[1]:.1f} and {alt[0]:.1f} + "
            f"{alt[1]:.1f} on the revision + the prior at share 0.4") in p.sentence  # fmt: skip
    none = gate(ms, ks, DesignQuestion(alpha=0.1, beta=0.3, min_drop=0.25, ledger=10,
                                       concurrent=0.0, max_runs=40))  # fmt: skip
    assert not none.meets
    usable = [x for x in none.details["design"].answers if x.feasible]
    assert usable and all(x.design == "concurrent" for x in usable)
    best = min(usable, key=lambda x: sum(x.runs_null))  # the null_runs objective's order
    assert f"with concurrent control {best.family} ({best.design}) meets both" in none.sentence
    assert f"{sum(best.runs_null):.1f} sessions when nothing changed" in none.sentence


def test_evaluate_is_monotone_in_the_base_rate():
    """The reason the extreme draws are the worst ones (module docstring of prescribe)."""
    from procmem_core.flat import DEFAULT_RULE, DEFAULT_THRESHOLD

    kept = [evaluate(DEFAULT_RULE, DEFAULT_THRESHOLD, RuleTargets(base=b)).kept
            for b in (0.5, 0.6, 0.7)]  # fmt: skip
    excluded = [evaluate(DEFAULT_RULE, DEFAULT_THRESHOLD, RuleTargets(base=b)).excluded
                for b in (0.5, 0.6, 0.7)]  # fmt: skip
    assert kept[0] < kept[1] < kept[2] and excluded[0] > excluded[1] > excluded[2]


def _world(lift_se: float = 0.01) -> dict:
    return {
        "rates": RATES,
        "lifts": {"mean": Param(0.04, lift_se), "sd": Param(0.05, 0.01)},
        "users": {"user_sd": Param(0.08, 0.01), "icc": Param(0.03, 0.005),
                  "cluster_size": Param(4.0, float("nan"))},
        "ratings": {"missing_rate": Param(0.1, 0.01), "delay_mean": Param(2.0, 0.1)},
    }  # fmt: skip


def test_every_fitted_parameter_with_an_se_is_drawn_at_its_se():
    n = 4000
    drawn = parameter_draws(_world(), np.random.default_rng(5), n)
    world = _world()
    normal = {"rates.mean": world["rates"]["mean"], "lifts.mean": world["lifts"]["mean"],
              "users.user_sd": world["users"]["user_sd"], "users.icc": world["users"]["icc"],
              "ratings.missing_rate": world["ratings"]["missing_rate"],
              "ratings.delay_mean": world["ratings"]["delay_mean"]}  # fmt: skip
    logged = {"rates.concentration": world["rates"]["concentration"],
              "lifts.sd": world["lifts"]["sd"]}  # fmt: skip
    assert set(drawn) == {*normal, *logged, "base"}  # cluster_size has no SE: not drawn
    for name, p in normal.items():  # the spread is the SE: within 4 Monte Carlo SE
        x = drawn[name]
        assert abs(x.mean() - p.value) < 4 * p.se / np.sqrt(n), name
        assert abs(x.std(ddof=1) - p.se) < 4 * p.se / np.sqrt(2 * (n - 1)), name
    for name, p in logged.items():  # fitted on the log scale: SE / value there
        x = np.log(drawn[name])
        assert abs(x.mean() - np.log(p.value)) < 4 * (p.se / p.value) / np.sqrt(n), name
        assert abs(x.std(ddof=1) - p.se / p.value) < 4 * (p.se / p.value) / np.sqrt(2 * (n - 1))
    # the rates and the bases are the ones draws and base_draws give from the same seed
    rng = np.random.default_rng(5)
    ms, ks = draws(RATES, rng, n)
    assert np.array_equal(ms, drawn["rates.mean"]) and np.array_equal(
        ks, drawn["rates.concentration"]
    )
    assert np.array_equal(base_draws(world, ms, rng), drawn["base"])
    assert np.allclose(drawn["base"], np.clip(ms - drawn["lifts.mean"], 0.01, 0.99))


def test_explore_sessions_carry_the_users_design_effect_and_the_missing_ratings():
    fixed = {"rates": {"mean": Param(0.6, float("nan")), "concentration": Param(20.0, 5.0)},
             "users": {"icc": Param(0.05, float("nan")), "cluster_size": Param(4.0, float("nan"))},
             "ratings": {"missing_rate": Param(0.2, float("nan"))}}  # fmt: skip
    drawn = parameter_draws(fixed, np.random.default_rng(0), 50)
    f = inflation(fixed, drawn)
    assert np.allclose(f, (1 + 3 * 0.05) / 0.8)  # Kish's design effect over 0.8 rated
    p = explore_rate(drawn["base"], 0.1, 2, inflate=f)  # horizon 2: the normal planner
    for eps in (0.05, 0.1, 0.3):
        rated = plan_rate(Design(0.1, 0.6), eps, method="normal").sessions
        assert p.details["worst_sessions"][eps] == int(np.ceil(rated * 1.4375 - 1e-9))
    plain = explore_rate(drawn["base"], 0.1, 2)
    assert (
        plain.details["worst_sessions"][0.1]
        == plan_rate(Design(0.1, 0.6), 0.1, method="normal").sessions
    )


def test_the_explore_prescription_at_the_worst_draw_moves_with_the_lift_se():
    """A wider draw of the lifts' mean widens the withheld rate's draws: the worst draw
    needs more sessions and, at a horizon between the two, a larger explore rate."""
    found = {}
    for se in (0.005, 0.06):
        world = _world(lift_se=se)
        drawn = parameter_draws(world, np.random.default_rng(7))
        f = inflation(world, drawn)
        p = explore_rate(drawn["base"], 0.1, 2, inflate=f)
        rated = [plan_rate(Design(0.1, float(b)), 0.2, method="normal").sessions
                 for b in drawn["base"]]  # fmt: skip
        every = [int(np.ceil(r * g - 1e-9)) for r, g in zip(rated, f, strict=True)]
        assert p.details["worst_sessions"][0.2] == max(every)  # the worst of every draw
        found[se] = p.details["worst_sessions"]
    assert all(found[0.06][e] > found[0.005][e] for e in DEFAULT_RATES)
    horizon = (found[0.005][0.1] + found[0.06][0.1]) // 2
    picked = {}
    for se in (0.005, 0.06):
        drawn = parameter_draws(_world(se), np.random.default_rng(7))
        picked[se] = explore_rate(drawn["base"], 0.1, horizon, inflate=inflation(_world(se), drawn))
    narrow, wide = picked[0.005], picked[0.06]
    assert narrow.meets and float(narrow.setting) <= 0.1
    assert float(wide.setting) > float(narrow.setting) or not wide.meets


def test_the_explore_rates_worst_draw_is_the_worst_of_every_draw():
    """The worst draw was picked by the normal approximation's variance (and the lowest
    and highest base, the largest inflation), then sized by the planner's default, exact
    where the withheld arm is small; there the two order the draws differently. Ten base
    draws, target +0.2 (sized -0.2 above a base of 0.8), horizon 800: the answer read
    'Explore rate 0.05: ... within 775 sessions of a procedure at the worst of 10 draws',
    where the draw at base 0.74 needs 866. Now the worst is the largest over every draw,
    and 0.05 does not fit."""
    ms = np.array([0.674, 0.632, 0.74, 0.634, 0.821, 0.755, 0.678, 0.734, 0.797, 0.87])
    p = explore_rate(ms, 0.2, 800)
    every = [plan_rate(Design(sized_lift(m, 0.2), float(m)), 0.05).sessions for m in ms]
    assert max(every) == 866 == p.details["worst_sessions"][0.05]
    assert p.setting == "0.1" and p.meets
    every = [plan_rate(Design(sized_lift(m, 0.2), float(m)), 0.1).sessions for m in ms]
    assert p.details["worst_sessions"][0.1] == max(every) <= 800
