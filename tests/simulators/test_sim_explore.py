"""ExploreScenario and the lift estimators: coverage, unbiasedness, the known truth."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.ab import ESTIMATORS
from procmem_core.ab.estimators import (
    AugmentedIPW,
    DifferenceInMeans,
    HajekIPW,
    HorvitzThompsonIPW,
)
from procmem_core.errors import ParameterError
from procmem_core.proportions import wilson_interval
from simulators.feedback import Feedback
from simulators.scenarios.explore import ExploreScenario
from simulators.users import UserPopulation

ESTIMATOR_NAMES = ESTIMATORS.names()

HETERO = UserPopulation(
    base_rate=0.5, heterogeneity=0.2, helpful_share=0.6, harmful_share=0.1,
    helpful_effect=0.15, harmful_effect=0.1,
)  # fmt: skip


@pytest.fixture(scope="module")
def big_run():
    # 120 withheld sessions per replication: the Wald intervals of the IPW and AIPW
    # estimators are accurate there (at 40 they undercover by 1-2 points, see the docs)
    sc = ExploreScenario(
        population=HETERO, explore_rate=0.3, sessions=400, users=30, replications=3000
    )
    return sc, sc.run(12)


def test_every_estimator_covers_at_its_nominal_level(big_run):
    _, res = big_run
    m = res.metrics
    for name in ESTIMATOR_NAMES:
        cov, se = m[f"{name}_coverage"], m[f"{name}_coverage_se"]
        assert abs(cov - 0.95) <= 4 * se, (name, cov, se)


def test_newcombe_interval_covers_even_with_a_small_control_arm():
    sc = ExploreScenario(population=HETERO, sessions=400, users=30, replications=3000)
    m = sc.run(5).metrics  # about 40 withheld sessions per replication
    assert abs(m["dim_coverage"] - 0.95) <= 4 * m["dim_coverage_se"]


def test_difference_in_means_is_unbiased(big_run):
    _, res = big_run
    m = res.metrics
    assert abs(m["dim_bias"]) <= 4 * m["dim_bias_se"]
    assert abs(m["aipw_bias"]) <= 4 * m["aipw_bias_se"]


def test_true_lift_is_the_exact_population_value(big_run):
    sc, res = big_run
    m = res.metrics
    assert m["true_lift"] == pytest.approx(sc.population.mean_lift)
    assert abs(m["true_lift_pool"] - m["true_lift"]) <= 4 * m["true_lift_pool_se"]
    assert abs(m["exploration_cost"] - m["exploration_cost_exact"]) <= 4 * m["exploration_cost_se"]


def test_aipw_uses_user_traits_to_narrow_the_interval(big_run):
    _, res = big_run
    m = res.metrics
    assert m["aipw_ci_width"] < m["ipw_ci_width"] - 4 * m["aipw_ci_width_se"]
    assert m["ipw_ht_rmse"] > m["ipw_rmse"]  # Horvitz-Thompson: far larger variance


def test_power_matches_the_normal_formula_without_heterogeneity():
    pop = UserPopulation(base_rate=0.5, helpful_share=1.0, harmful_share=0.0, helpful_effect=0.1)
    sc = ExploreScenario(population=pop, explore_rate=0.3, sessions=600, replications=3000)
    m = sc.run(4).metrics
    # the formula is a normal approximation, not an exact answer: the simulated power is
    # checked against the exact power (and the formula beside it) in test_explore_reference
    assert (m["power_formula"] < 0.8) == (m["sessions_for_target_power"] > 600)
    assert m["coverage"] == m["dim_coverage"] and m["power"] == m["dim_power"]


def test_confidence_score_is_not_the_effect():
    # a helpful procedure (lift +0.1) for users at base 0.45: shown rate 0.55 < break-even
    pop = UserPopulation(base_rate=0.45, helpful_share=1.0, harmful_share=0.0, helpful_effect=0.1)
    m = ExploreScenario(population=pop, sessions=300, replications=400).run(1).metrics
    assert m["true_lift"] == pytest.approx(0.1)
    assert m["confidence_final"] < 0.55  # the flat rule excludes a procedure that helps
    assert m["confidence_wrong_side_rate"] > 0.8


def test_label_flips_attenuate_the_estimated_lift():
    fb = Feedback.of(false_negative=0.2, false_positive=0.2)
    m = ExploreScenario(feedback=fb, replications=600).run(2).metrics
    assert m["dim_bias"] < -4 * m["dim_bias_se"]


def test_tables():
    res = ExploreScenario(replications=50, sessions=200).run(0)
    arms = res.tables["ab_arms"]
    assert list(arms.arm) == ["shown", "withheld"]
    assert arms.sessions.sum() == 50 * 200
    est = res.tables["estimates"]
    assert len(est) == 50 * len(ESTIMATOR_NAMES)
    assert set(est.estimator) == set(ESTIMATOR_NAMES)
    assert (est.ci_low <= est.estimate).all() and (est.estimate <= est.ci_high).all()


def test_same_seed_same_metrics_other_seed_differs():
    sc = ExploreScenario(replications=40, sessions=100)
    a, b = sc.run(3).metrics, sc.run(3).metrics
    assert a.keys() == b.keys()
    assert all(a[k] == b[k] or (np.isnan(a[k]) and np.isnan(b[k])) for k in a)
    assert sc.run(4).metrics["dim_estimate"] != a["dim_estimate"]


def test_estimators_on_a_hand_example():
    y = np.array([[1, 1, 0, 1, 0, 0, 1, 0]], dtype=float)
    shown = np.array([[True, True, True, True, False, False, False, False]])
    x = np.array([[0.2, 0.4, 0.6, 0.8, 0.2, 0.4, 0.6, 0.8]])
    mask = np.ones_like(shown)
    dim = DifferenceInMeans().estimate(y, shown, x, mask, 0.5)
    assert dim.tau[0] == pytest.approx(0.75 - 0.25)
    assert dim.se[0] == pytest.approx(np.sqrt(0.75 * 0.25 / 4 * 2))
    assert HajekIPW().estimate(y, shown, x, mask, 0.5).tau[0] == pytest.approx(0.5)
    assert HorvitzThompsonIPW().estimate(y, shown, x, mask, 0.5).tau[0] == pytest.approx(0.5)
    assert AugmentedIPW().estimate(y, shown, x, mask, 0.5).tau[0] == pytest.approx(0.5)
    lo, hi = wilson_interval(np.array([0.0]), np.array([10.0]), 1.96)
    assert lo[0] == pytest.approx(0.0, abs=1e-12) and hi[0] == pytest.approx(0.2775, abs=1e-3)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"explore_rate": 0.0}, "explore_rate"),
        ({"explore_rate": 1.0}, "explore_rate"),
        ({"sessions": 3}, "sessions"),
        ({"users": 0}, "users"),
        ({"confidence_level": 1.0}, "confidence_level"),
        ({"target_power": 0.0}, "target_power"),
        ({"estimator": "ols"}, "estimator"),
        ({"population": "hetero"}, "population"),
        ({"feedback": Feedback.of(delay=2000), "sessions": 100}, "feedback"),
        ({"replications": 1}, "replications"),
    ],
)
def test_invalid_parameters(kwargs, fragment):
    with pytest.raises(ParameterError, match=fragment):
        ExploreScenario(**kwargs)


def test_replications_without_a_control_arm_are_counted_not_hidden():
    m = ExploreScenario(explore_rate=0.01, sessions=50, replications=400).run(0).metrics
    assert m["dim_undefined_rate"] > 0.4  # 0.99 ** 50 = 0.6 of replications never withhold
    assert m["dim_power"] <= 1 - m["dim_undefined_rate"]
    assert m["undefined_rate"] == m["dim_undefined_rate"]
