"""ExploreScenario and the lift estimators: coverage, unbiasedness, the known truth."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.ab import ESTIMATORS, FIXED_N
from procmem_core.ab.estimators import (
    AugmentedIPW,
    DifferenceInMeans,
    HajekIPW,
    HorvitzThompsonIPW,
)
from procmem_core.errors import ParameterError
from procmem_core.flat import BaselineRule, PosteriorRule
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
    """3,000 replications: a fixed-n interval must cover within 4 SE of 0.95 (about
    +-0.016); a confidence sequence, valid at every session, covers at least that at the
    horizon (it is wider there)."""
    _, res = big_run
    m = res.metrics
    for name, cls in ESTIMATORS.items():
        cov, se = m[f"{name}_coverage"], m[f"{name}_coverage_se"]
        if cls.guarantee == FIXED_N:
            assert abs(cov - 0.95) <= 4 * se, (name, cov, se)
        else:
            assert cov >= 0.95 - 4 * max(se, np.sqrt(0.05 * 0.95 / 3000)), (name, cov, se)


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
        ({"rule": BaselineRule()}, "rule='baseline' .*reads only the confidence"),
        ({"rule": PosteriorRule()}, "rule='posterior' .*reads only the confidence"),
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


def test_sequences_hold_the_pool_lift_under_monitoring_where_peeking_does_not(big_run):
    """3,000 deployments of 400 sessions: each traced sequence's miss rate (the pool's
    lift ever outside, read after every session) <= 0.05 + 4 SE = 0.066; Newcombe's
    fixed-n interval read the same way misses in far more."""
    _, res = big_run
    m = res.metrics
    limit = 0.05 + 4 * np.sqrt(0.05 * 0.95 / 3000)
    traced = [n for n in ESTIMATOR_NAMES if f"{n}_sequential_power" in m]
    assert set(traced) == {"cs_aipw", "cs_ipw", "cs_aipw_linear", "cs_eb_aipw", "cs_eb_ipw"}
    for name in traced:
        assert m[f"{name}_monitor_miss_rate"] <= limit, name
        assert m[f"{name}_sequential_power"] >= m[f"{name}_power"], name  # stopping early adds
    assert m["dim_monitor_miss_rate"] > 0.3


def test_width_ratios_srm_and_cuped_in_the_scenario(big_run):
    _, res = big_run
    m = res.metrics
    # tuned at the horizon: the two-point sequence within 1.5x the fixed-n AIPW interval,
    # the normal mixture above its asymptotic 1.549 (its variance allowance)
    assert m["cs_aipw_linear_width_ratio"] <= 1.5
    assert 1.549 < m["cs_aipw_width_ratio"] < 1.7
    # honest 30 % splits: the fixed and sequential flags at most 0.001 + 4 SE (0.0033)
    for key in ("srm_flag_rate", "srm_sequential_flag_rate"):
        assert m[key] <= 0.001 + 4 * np.sqrt(0.001 * 0.999 / 3000), key
    # users differ (heterogeneity 0.2): the base rate predicts, CUPED is narrower
    assert m["cuped_width_reduction"] > 4 * m["cuped_width_reduction_se"]
    assert m["cuped_ci_width"] < m["dim_ci_width"]


def test_planted_mismatch_would_be_flagged_by_the_scenarios_own_test():
    from procmem_core.ab import srm_flagged, srm_p_value

    rng = np.random.default_rng(0)
    k = rng.binomial(5000, 0.08, size=4000)  # the arm lost a fifth of its sessions
    assert srm_flagged(srm_p_value(k, 5000, 0.1)).mean() >= 0.9


def test_tuning_moves_only_the_sequences():
    base = ExploreScenario(replications=60, sessions=300).run(2).metrics
    tuned = ExploreScenario(replications=60, sessions=300, cs_tuning_sessions=50).run(2).metrics
    assert tuned["cs_aipw_ci_width"] > base["cs_aipw_ci_width"]  # tightest at 50, not 300
    same = [k for k in base if not k.startswith("cs_") and not k.startswith("srm_sequential")]
    assert all(base[k] == tuned[k] or (np.isnan(base[k]) and np.isnan(tuned[k])) for k in same)


def test_new_tables_hold_every_deployment():
    sc = ExploreScenario(replications=30, sessions=120, feedback=Feedback.of(missing=0.2))
    res = sc.run(3)
    arms = res.tables["ab_arms_by_replication"]
    assert list(arms.columns[:5]) == ["replication", "key", "arm", "sessions", "successes"]
    assert len(arms) == 60 and (arms.groupby("replication").sessions.sum() < 120).all()
    est = res.tables["estimates"]
    dim = est[est.estimator == "dim"]
    assert ((dim.p_value < 0.05) == ((dim.ci_low > 0) | (dim.ci_high < 0))).all()
    seq = est[est.estimator == "cs_aipw"]
    assert (
        seq.ever_excluded_zero.notna().all()
        and est[est.estimator == "cs_arms"].ever_excluded_zero.isna().all()
    )
    path = res.tables["cs_path"]
    assert set(path.estimator) == {"cs_aipw", "cs_eb_aipw", "dim"}
    assert (path.groupby("estimator").session.max() == 120).all()
    first = seq.iloc[0]
    last = path[(path.estimator == "cs_aipw") & (path.session == 120)].iloc[0]
    assert (last.low, last.high) == pytest.approx((first.ci_low, first.ci_high))
