"""The explore scenario's calibration blocks (simulators.calibration_blocks): the
withheld-session cost and the difference in means at horizons 50, 75, .., 200, each from fresh
replications of its own, against exact values checked here by numerical integration
over the users' base rates (not ``UserPopulation.expected_lift``'s closed form)."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from procmem_core.errors import ParameterError
from procmem_core.logged import parse_name
from reports.calibration import calibration
from simulators.calibration_blocks import Figure, calibration_metrics
from simulators.feedback import Feedback
from simulators.scenarios.explore import ExploreScenario
from simulators.users import UserPopulation


def mixed(effect: float) -> UserPopulation:
    """The explore_tradeoff preset's users (``conf/users/mixed.yaml``) at a helpful effect."""
    return UserPopulation(
        base_rate=0.5, heterogeneity=0.1, helpful_share=0.6, harmful_share=0.1,
        helpful_effect=effect, harmful_effect=0.1,
    )  # fmt: skip


def integrated_lift(pop: UserPopulation) -> float:
    """``E[clip(b + e, 0, 1)] - E[b]`` by quadrature over the Beta law of ``b``, mixed over
    the three kinds of effect."""
    a, b = pop.beta_parameters
    total = 0.0
    for share, e in (
        (pop.helpful_share, pop.helpful_effect),
        (pop.harmful_share, -pop.harmful_effect),
    ):

        def lift(x, e=e):
            return (min(1.0, max(0.0, x + e)) - x) * stats.beta.pdf(x, a, b)

        kinks = [x for x in (-e, 1 - e) if 0 < x < 1]  # where the clip starts
        total += share * integrate.quad(lift, 0, 1, points=kinks, limit=200)[0]
    return total


@pytest.mark.parametrize("effect", [0.05, 0.15, 0.3])
def test_exact_values_equal_the_integrated_population_lift(effect):
    sc = ExploreScenario(population=mixed(effect), explore_rate=0.2, sessions=300)
    lift = integrated_lift(sc.population)
    exact = sc.exact_metrics()
    assert exact["dim_estimate_exact"] == pytest.approx(lift, abs=1e-9)
    assert exact["exploration_cost_exact"] == pytest.approx(0.2 * 300 * lift, abs=1e-7)


def test_four_blocks_per_job_at_horizons_50_to_200():
    """14 candidates (horizons 50, 75, .., 200 x two figures), spread evenly: i * 14 // 4."""
    for sessions in (200, 1000, 5000):
        sc = ExploreScenario(sessions=sessions, calibration_blocks=4)
        assert sc.block_figures() == [
            Figure("exploration_cost", 50),
            Figure("dim_estimate", 75),
            Figure("dim_estimate", 125),
            Figure("exploration_cost", 175),
        ]
    assert {
        f.sessions for f in ExploreScenario(sessions=120, calibration_blocks=6).block_figures()
    } == {50, 75, 100}
    short = ExploreScenario(sessions=30, calibration_blocks=3).block_figures()
    assert {f.sessions for f in short} == {30}


def test_a_noisy_judge_leaves_only_the_cost_blocks():
    """Flipped labels bias the difference in means (test_explore), so it has no exact value
    then; the withheld sessions' cost does not depend on the labels."""
    fb = Feedback.of(false_negative=0.2, false_positive=0.2)
    sc = ExploreScenario(feedback=fb, calibration_blocks=4)
    assert "dim_estimate_exact" not in sc.exact_metrics()
    assert {f.metric for f in sc.block_figures()} == {"exploration_cost"}


def test_blocks_leave_the_jobs_own_numbers():
    sc = ExploreScenario(replications=100, sessions=100, calibration_blocks=3)
    got = sc.run(6).metrics
    plain = replace(sc, calibration_blocks=0).run(6).metrics
    own = {k: v for k, v in got.items() if not k.startswith("cal")}
    assert own.keys() == plain.keys()
    assert all(own[k] == plain[k] or (np.isnan(own[k]) and np.isnan(plain[k])) for k in own)
    assert len(got) - len(plain) == 3 * 3


def test_blocks_agree_with_their_exact_values_within_4_se_across_seeds():
    """Four blocks in each of six worlds of the preset (explore rate x lift), each job its
    own seed: every z within 4, and the 24 z-scores pass the calibration check."""
    z = []
    for seed, (eps, effect) in enumerate(itertools.product((0.02, 0.1, 0.3), (0.05, 0.3))):
        sc = ExploreScenario(
            population=mixed(effect), explore_rate=eps, sessions=1000, calibration_blocks=4,
            calibration_replications=300,
        )  # fmt: skip
        got = calibration_metrics(sc, 40 + seed)
        lift = integrated_lift(sc.population)
        for name in (k for k in got if parse_name(k) is not None):
            fig = parse_name(name)[1]
            want = lift * (eps * fig.sessions if fig.metric == "exploration_cost" else 1.0)
            assert got[name + "_exact"] == pytest.approx(want, abs=1e-7)
            assert got[name + "_se"] > 0
            z.append((got[name] - want) / got[name + "_se"])
    assert len(z) == 24 and max(map(abs, z)) < 4
    cal = calibration(pd.DataFrame({"z": z, "se": 1.0}))
    assert cal.ok, cal.describe()


@pytest.mark.parametrize(
    ("field", "value"), [("calibration_blocks", -1), ("calibration_replications", 1)]
)
def test_bad_block_settings_name_the_field(field, value):
    with pytest.raises(ParameterError, match=field):
        ExploreScenario(**{field: value})
