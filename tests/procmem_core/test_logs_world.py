"""The fitted world recovers the world a log was simulated from: every parameter within
4 SE of the truth in each of 20 logs, and the z-scores' mean square near 1 (the SEs are
neither far too small nor far too large); the predictive checks pass on a log from the
model and flag a planted sample-ratio mismatch."""

from __future__ import annotations

import numpy as np

from procmem_core.logs import check_log, estimate_lifts
from procmem_core.logs.world import fit_world
from simulators.session_log import LogWorld, log_table, simulate

M, KAPPA, MU, SIGMA = 0.6, 30.0, 0.05, 0.05


def _world(rng, procedures=150, **kw) -> LogWorld:
    p1 = rng.beta(M * KAPPA, (1 - M) * KAPPA, procedures)
    lift = rng.normal(MU, SIGMA, procedures)
    assert ((p1 - lift > 0) & (p1 - lift < 1)).all()  # no clipping: the truth is exact
    return LogWorld(tuple(p1 - lift), tuple(lift), **kw)


def _fit(world: LogWorld, rng, sessions: int):
    s = check_log(log_table(world, simulate(world, rng, sessions))).sessions
    lifts = estimate_lifts(s).columns
    return fit_world(s, lifts["lift"], lifts["se"], rng, replications=100)


def test_fitted_parameters_within_4_se_of_the_truth():
    rng = np.random.default_rng(20)
    z = {k: [] for k in ("mean", "concentration", "mu", "sigma", "missing", "delay")}
    for _ in range(20):
        world = _world(rng, explore_rate=0.25, missing=0.1, delay=2.0)
        fit = _fit(world, rng, 60_000)
        truth = {"mean": (fit["rates"]["mean"], M),
                 "concentration": (fit["rates"]["concentration"], KAPPA),
                 "mu": (fit["lifts"]["mean"], MU), "sigma": (fit["lifts"]["sd"], SIGMA),
                 "missing": (fit["ratings"]["missing_rate"], 0.1),
                 "delay": (fit["ratings"]["delay_mean"], 2.0)}  # fmt: skip
        for name, (p, true) in truth.items():
            z[name].append((p.value - true) / p.se)
    for name, zs in z.items():
        zs = np.asarray(zs)
        assert np.all(np.abs(zs) < 4), (name, zs)
        assert np.mean(zs**2) < 2.5, (name, np.mean(zs**2))


def test_user_over_dispersion_recovered():
    rng = np.random.default_rng(21)
    zs = []
    for _ in range(10):
        world = _world(rng, procedures=20, explore_rate=0.2, users=400, user_sd=0.1)
        s = check_log(log_table(world, simulate(world, rng, 40_000))).sessions
        lifts = estimate_lifts(s).columns
        fit = fit_world(s, lifts["lift"], lifts["se"], rng, replications=50)
        p = fit["users"]["user_sd"]
        zs.append((p.value - 0.1) / p.se)
    assert np.all(np.abs(zs) < 4), zs
    assert np.mean(np.square(zs)) < 2.5, zs


def test_predictive_checks_pass_on_the_model_and_flag_a_planted_mismatch():
    rng = np.random.default_rng(22)
    honest = _fit(_world(rng, explore_rate=0.1), rng, 60_000)["checks"]
    assert honest["poor_fit"] == [] and "No check" in honest["summary"]
    planted = _fit(_world(rng, explore_rate=0.07, logged_rate=0.1), rng, 60_000)["checks"]
    assert "withheld_share" in planted["poor_fit"]
    assert "withheld_share" in planted["summary"]
