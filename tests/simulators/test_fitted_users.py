"""``users=fitted``: the population matched to a fitted world keeps its mean lift, its
share of helpful procedures and its withheld success rate; the config switch builds it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from experiments.analyze.world_file import load_world, world_bases, world_draws
from procmem_core.flat.design import RuleTargets
from procmem_core.logs.prescribe import flat_rule
from procmem_core.logs.world import withheld_rate
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


def test_prescription_and_fitted_users_read_one_base(tmp_path):
    """The flat-rule prescription's base and ``users=fitted``'s base rate are the one
    withheld success rate of the world: ``m - mu`` = 0.65 - 0.04, SE ``hypot(0.02, 0.01)``;
    its bootstrap draws have that mean and sd (within 4 SE over 200 draws)."""
    path = tmp_path / "world.json"
    path.write_text(json.dumps(WORLD))
    world = load_world(path)
    base = withheld_rate(world)
    assert base.value == pytest.approx(0.61, abs=1e-12)
    assert base.se == pytest.approx(np.hypot(0.02, 0.01), abs=1e-12)
    assert fitted_population(world).base_rate == base.value
    bases = world_bases(world)
    ms, _ = world_draws(world)  # the same rates' draws, less the lifts' mean drawn after
    assert abs((ms - bases).mean() - 0.04) < 4 * 0.01 / np.sqrt(bases.size)
    assert abs(bases.mean() - 0.61) < 4 * base.se / np.sqrt(bases.size)
    assert abs(bases.std(ddof=1) - base.se) < 4 * base.se / np.sqrt(2 * (bases.size - 1))
    no_lifts = {k: v for k, v in world.items() if k != "lifts"}
    assert withheld_rate(no_lifts).value == 0.65 == fitted_population(no_lifts).base_rate
    assert np.array_equal(world_bases(no_lifts), world_draws(no_lifts)[0])


def test_explore_world_plans_over_the_withheld_rate(tmp_path):
    """``experiments.design explore --world``'s base is the worst draw of the same
    withheld rate (the largest ``p1 q1 + p0 q0`` at lift 0.1: the draw nearest 0.45)."""
    from experiments.design.explore import world_base

    path = tmp_path / "world.json"
    path.write_text(json.dumps(WORLD))
    bases = world_bases(load_world(path))
    base, sentence = world_base(str(path), 0.1)
    assert base == bases[np.argmin(np.abs(bases - 0.45))]
    assert "withheld success rate 0.610 +- 0.022" in sentence


@pytest.mark.slow
def test_rule_world_designs_at_the_fitted_users_base(tmp_path, capsys):
    """``experiments.design rule --world`` designs at the base ``users=fitted`` simulates
    (0.61, not the shown mean 0.65) and checks at the extreme draws of that base."""
    from experiments.design.__main__ import main as design

    path = tmp_path / "world.json"
    path.write_text(json.dumps(WORLD))
    args = ["rule", "--world", str(path), "--helpful-lift", "0.2", "--harmful-lift", "-0.2",
            "--keep", "0.8", "--exclude", "0.8", "--within", "10", "--family", "confidence",
            "--frontier", "0"]  # fmt: skip
    assert design(args) == 0
    out = capsys.readouterr().out
    world = load_world(path)
    bases = world_bases(world)
    assert "withheld success rate 0.610 +- 0.022" in out and "designed at base 0.61," in out
    assert f"base {bases.min():.3f} for keeping, {bases.max():.3f} for excluding" in out
    p = flat_rule(0.61, bases, RuleTargets(0.2, -0.2, 0.61, 0.8, 0.8, 10))
    assert p.details["base"] == fitted_population(world).base_rate
    assert p.sentence in out
