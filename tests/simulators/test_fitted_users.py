"""``users=fitted``: the population matched to a fitted world keeps its mean lift, its
share of helpful procedures and its withheld success rate; the config switch builds it."""

from __future__ import annotations

import json

import pytest
from scipy import stats

from experiments.analyze.world_file import load_world
from simulators.fitted import fitted_population

WORLD = {
    "schema_version": 1,
    "rates": {"mean": {"value": 0.65, "se": 0.02}, "concentration": {"value": 25, "se": 5}},
    "lifts": {"mean": {"value": 0.04, "se": 0.01}, "sd": {"value": 0.06, "se": 0.01}},
    "users": {"user_sd": {"value": 0.08, "se": 0.01}, "icc": {"value": 0.03, "se": 0.01}},
}


def test_moments_are_kept(tmp_path):
    path = tmp_path / "world.json"
    path.write_text(json.dumps(WORLD))
    pop = fitted_population(load_world(path))
    assert pop.base_rate == pytest.approx(0.65 - 0.04)
    assert pop.heterogeneity == pytest.approx(0.03)
    assert pop.helpful_share == pytest.approx(stats.norm.cdf(0.04 / 0.06))
    mean = pop.helpful_share * pop.helpful_effect - pop.harmful_share * pop.harmful_effect
    assert mean == pytest.approx(0.04, abs=1e-12)  # E[L] = mu, by the truncated means
    lifts_only = {k: v for k, v in WORLD.items() if k != "users"}
    path.write_text(json.dumps(lifts_only))
    assert fitted_population(load_world(path)).heterogeneity == 0.0


def test_users_fitted_is_a_config_switch(tmp_path, compose_preset):
    from experiments.build import build_scenario

    path = tmp_path / "world.json"
    path.write_text(json.dumps(WORLD))
    cfg = compose_preset("quickstart", ["case=explore_seed", "users=fitted",
                                        f"users.world={path}"])  # fmt: skip
    pop = build_scenario(cfg).population
    assert pop.base_rate == pytest.approx(0.61) and pop.heterogeneity == pytest.approx(0.03)
