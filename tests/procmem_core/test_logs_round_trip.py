"""Round trip: logs simulated from a known world, analyzed by ``estimate_lifts`` on
arrays. Many replications are stacked into one log, replication ``r``'s procedure ``k``
becoming key ``r K + k`` (each key's estimate uses only its own sessions, so stacking
changes no interval; only the multiplicity family grows, which these checks do not read).
Coverage is counted over keys, with its Monte Carlo SE in the message."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.logs import Table, Text, check_log, estimate_lifts
from simulators.session_log import LogWorld, simulate


def stacked(world: LogWorld, d: dict) -> Table:
    """All replications of ``d`` as one sessions table (keys and users per replication)."""
    reps, n = d["top"].shape
    k_count = world.procedures
    r = np.arange(reps)[:, None]
    top = np.where(d["top"] >= 0, r * k_count + d["top"], -1).ravel()
    keys = np.char.add("p", np.arange(reps * k_count).astype(str))
    cols = {
        "session_id": Text(np.arange(reps * n), np.arange(reps * n).astype(str)),
        "time": np.tile(np.arange(n), reps).astype(float),
        "top_key": Text(top, keys),
        "withheld": d["withheld"].ravel(),
        "explore_rate": d["explore_rate"].ravel(),
        "outcome": d["outcome"].ravel(),
    }
    if world.users:
        users = (r * world.users + d["user"]).ravel()
        cols["user_id"] = Text(users, np.arange(reps * world.users).astype(str))
    return Table("sessions", "stacked", reps * n, cols)


def _coverage(world: LogWorld, sessions: int, reps: int, seed: int):
    d = simulate(world, np.random.default_rng(seed), sessions, reps)
    lifts = estimate_lifts(check_log(stacked(world, d)).sessions).columns
    order = np.array([int(k[1:]) for k in lifts["key"]])
    truth = d["truth"].ravel()[order]
    inside = (lifts["ci_low"] <= truth) & (truth <= lifts["ci_high"])
    in_cs = (lifts["cs_low"] <= truth) & (truth <= lifts["cs_high"])
    return inside, in_cs, lifts


def _msg(hits: np.ndarray) -> str:
    r = hits.mean()
    return f"{r:.4f} +- {np.sqrt(r * (1 - r) / hits.size):.4f} over {hits.size}"


def test_fixed_n_and_sequence_cover_the_true_lifts():
    rng = np.random.default_rng(7)
    base = tuple(np.round(rng.uniform(0.2, 0.7, 10), 3))
    lift = tuple(np.round(rng.uniform(-0.15, 0.15, 10), 3))
    world = LogWorld(base, lift, explore_rate=0.2, missing=0.1, unmatched=0.05)
    inside, in_cs, lifts = _coverage(world, 4000, 500, seed=11)
    assert inside.size == 5000 and (lifts["estimator"] == "dim").all()
    assert 0.93 <= inside.mean() <= 0.97, _msg(inside)
    assert in_cs.mean() >= 0.95, _msg(in_cs)
    # the sequence is wider than the fixed-n interval: the price of reading it any time
    assert np.median(lifts["cs_high"] - lifts["cs_low"]) > np.median(
        lifts["ci_high"] - lifts["ci_low"]
    )
    assert (lifts["missing"] > 0).all()


def test_cluster_robust_intervals_cover_the_pool_lift_with_repeat_users():
    world = LogWorld(
        (0.4, 0.5, 0.6, 0.5, 0.3),
        (0.1, 0.0, -0.1, 0.05, 0.15),
        explore_rate=0.25,
        users=60,
        user_sd=0.15,
        missing=0.05,
    )
    inside, in_cs, lifts = _coverage(world, 3000, 500, seed=12)
    assert lifts["estimator"][0] == "dim, cluster-robust by user_id"
    assert 0.93 <= inside.mean() <= 0.97, _msg(inside)
    assert in_cs.mean() >= 0.95, _msg(in_cs)


def test_planted_sample_ratio_mismatch_is_flagged():
    """Withheld at 0.07, logged as 0.10: flagged at p < 0.001 in >= 0.95 of logs; logged
    truthfully, at about 0.001. A flagged procedure is never an effect."""
    planted = LogWorld((0.5,), (0.2,), explore_rate=0.07, logged_rate=0.10)
    d = simulate(planted, np.random.default_rng(13), 3000, 500)
    lifts = estimate_lifts(check_log(stacked(planted, d)).sessions).columns
    assert lifts["srm_flag"].mean() >= 0.95, _msg(lifts["srm_flag"])
    assert not (lifts["effect"] & lifts["srm_flag"]).any()
    assert np.isnan(lifts["p_holm"][lifts["srm_flag"]]).all()
    honest = LogWorld((0.5,), (0.2,), explore_rate=0.10)
    d = simulate(honest, np.random.default_rng(14), 3000, 500)
    lifts = estimate_lifts(check_log(stacked(honest, d)).sessions).columns
    assert lifts["srm_flag"].mean() <= 0.01, _msg(lifts["srm_flag"])
    assert lifts["effect"].mean() > 0.5  # a 0.2 lift on ~300 withheld is found mostly


def test_no_withheld_session_gives_the_planners_answer():
    from procmem_core.ab import Design, plan_rate

    world = LogWorld((0.5, 0.6), (0.1, 0.1), explore_rate=0.1, logged_rate=0.0)
    d = simulate(world, np.random.default_rng(3), 500)
    d["withheld"][:] = False
    lifts = estimate_lifts(check_log(stacked(world, d)).sessions, target_lift=0.1)
    assert lifts.columns["key"].size == 0
    y = d["outcome"][~np.isnan(d["outcome"])]
    expect = plan_rate(Design(lift=0.1, base=float(y.mean())), 0.1)
    assert lifts.plan["sessions"] == expect.sessions
    assert lifts.plan["withheld"] == expect.withheld


def test_covariate_switches_to_aipw_with_the_engines_estimator():
    from procmem_core.ab import AugmentedIPW

    world = LogWorld((0.5, 0.4), (0.1, 0.0), explore_rate=0.3)
    d = simulate(world, np.random.default_rng(30), 3000)
    table = stacked(world, d)
    x = np.random.default_rng(31).normal(size=3000)
    table.columns["covariate"] = x
    s = check_log(table).sessions
    lifts = estimate_lifts(s).columns
    assert (lifts["estimator"] == "aipw").all()
    for j in range(2):
        rows = d["top"][0] == j
        e = 1.0 - d["explore_rate"][0][rows]
        y = d["outcome"][0][rows]
        ref = AugmentedIPW().estimate(np.nan_to_num(y), ~d["withheld"][0][rows], x[rows],
                                      ~np.isnan(y), e)  # fmt: skip
        assert lifts["lift"][j] == pytest.approx(ref.tau[0])
        assert lifts["ci_low"][j] == pytest.approx(ref.low[0])


def test_a_changing_explore_rate_is_tested_against_what_was_logged():
    """The rate moved from 0.1 to 0.3 halfway: honest logs pass the Poisson-binomial
    test; withholding at 0.1 throughout while logging the change is flagged."""
    world = LogWorld((0.5,), (0.0,), explore_rate=0.1)
    rng = np.random.default_rng(32)
    d = simulate(world, rng, 4000, 200)
    half = np.arange(4000) >= 2000
    d["explore_rate"][:, half] = 0.3
    planted = stacked(world, d)
    flagged = estimate_lifts(check_log(planted).sessions).columns["srm_flag"]
    assert flagged.mean() >= 0.95
    d["withheld"][:, half] = rng.random((200, 2000)) < 0.3
    honest = estimate_lifts(check_log(stacked(world, d)).sessions).columns["srm_flag"]
    assert honest.mean() <= 0.02
