"""Lifts of procedures whose logged explore rate changed: withholding is random within a
rate, not across rates, so the lift is stratified by the logged rate
(``procmem_core.logs.strata``). Before, shown minus withheld was pooled over the rates:
with the rate lowered while the success rate rose, the pooled withheld arm was mostly
early sessions, and the estimate, its interval and its sequence missed the truth."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.ab import newcombe_estimate
from procmem_core.logs import Table, Text, check_log, estimate_lifts


def _stacked(reps: int, n: int, seed: int, eps, base, lift: float) -> Table:
    """``reps`` logs of one procedure each (key ``p<r>``), ``n`` sessions at the rates
    ``eps`` and success rates ``base`` (without the procedure) per session, ``lift``
    when shown, 10 % of ratings missing."""
    rng = np.random.default_rng(seed)
    eps, base = np.broadcast_to(eps, (reps, n)), np.broadcast_to(base, (reps, n))
    w = rng.random((reps, n)) < eps
    y = (rng.random((reps, n)) < base + lift * ~w).astype(float)
    y[rng.random((reps, n)) < 0.1] = np.nan
    top = np.repeat(np.arange(reps), n)
    return Table("sessions", "sessions.csv", reps * n, {
        "session_id": Text(np.arange(reps * n), np.arange(reps * n).astype(str)),
        "time": np.tile(np.arange(n, dtype=float), reps),
        "top_key": Text(top, np.char.add("p", np.arange(reps).astype(str)).astype(object)),
        "withheld": w.ravel(), "explore_rate": eps.ravel().astype(float), "outcome": y.ravel(),
    })  # fmt: skip


def test_a_lowered_rate_while_successes_rose_is_estimated_within_its_strata():
    """Rate 0.5 then 0.05 halfway, success 0.3 then 0.7, true lift +0.1, 400 sessions:
    the pooled estimate averaged +0.327 over 400 logs, its 95 % interval covered 0.030
    and its sequence 0.79. Now the mean is within 4 SE of 0.1 and the coverage nominal."""
    half = np.arange(400) >= 200
    t = _stacked(600, 400, 3, np.where(half, 0.05, 0.5), np.where(half, 0.7, 0.3), 0.1)
    c = estimate_lifts(check_log(t).sessions).columns
    lift = c["lift"]
    assert abs(lift.mean() - 0.1) < 4 * lift.std() / np.sqrt(lift.size)
    covered = (c["ci_low"] <= 0.1) & (c["ci_high"] >= 0.1)
    assert 0.93 <= covered.mean() <= 0.98
    assert ((c["cs_low"] <= 0.1) & (c["cs_high"] >= 0.1)).mean() >= 0.95
    assert set(c["estimator"]) == {"dim, stratified by explore_rate"}


def test_the_estimate_is_the_post_stratified_difference_in_means():
    """Two rates, counts chosen by hand: rate 0.1, shown 6 of 8 and withheld 1 of 2; rate
    0.4, shown 2 of 6 and withheld 3 of 4: weights 10/20 each, lift 0.5 (0.75 - 0.5) +
    0.5 (1/3 - 0.75) = -0.0833, SE by the strata's variances."""
    y = [1] * 6 + [0] * 2 + [1, 0] + [1] * 2 + [0] * 4 + [1] * 3 + [0]
    w = [False] * 8 + [True] * 2 + [False] * 6 + [True] * 4
    eps = [0.1] * 10 + [0.4] * 10
    n = len(y)
    t = Table("sessions", "sessions.csv", n, {
        "session_id": Text(np.arange(n), np.arange(n).astype(str)),
        "time": np.arange(n, dtype=float),
        "top_key": Text(np.zeros(n, dtype=np.int64), np.array(["p"], dtype=object)),
        "withheld": np.array(w), "explore_rate": np.array(eps), "outcome": np.array(y, float),
    })  # fmt: skip
    c = estimate_lifts(check_log(t).sessions).columns
    assert c["lift"][0] == pytest.approx(0.5 * (0.75 - 0.5) + 0.5 * (1 / 3 - 0.75))
    var = 0.25 * (0.75 * 0.25 / 8 + 0.25 / 2) + 0.25 * (2 / 9 / 6 + 0.75 * 0.25 / 4)
    assert c["se"][0] == pytest.approx(np.sqrt(var))
    assert c["ci_low"][0] < c["lift"][0] < c["ci_high"][0]


def test_a_rate_of_zero_drops_out_and_one_stratum_is_newcombes_interval():
    """Sessions logged at rate 0 cannot be withheld, so they are no comparison: with
    them and one other rate, the lift and its interval are exactly Newcombe's of that
    rate's sessions (the pooled estimate compared withheld sessions at 0.2 with shown
    ones at both rates)."""
    eps = np.r_[np.zeros(150), np.full(150, 0.2)]
    t = _stacked(1, 300, 5, eps, np.r_[np.full(150, 0.2), np.full(150, 0.5)], 0.15)
    s = check_log(t).sessions
    c = estimate_lifts(s).columns
    m = (s.explore_rate > 0) & ~np.isnan(s.outcome)
    sh, wh = m & ~s.withheld, m & s.withheld
    ref = newcombe_estimate(*(np.array([float(a)]) for a in (
        s.outcome[sh].sum(), sh.sum(), s.outcome[wh].sum(), wh.sum())), 0.95)  # fmt: skip
    assert c["lift"][0] == pytest.approx(ref.tau[0], abs=1e-12)
    assert c["ci_low"][0] == pytest.approx(ref.low[0], abs=1e-12)
    assert c["ci_high"][0] == pytest.approx(ref.high[0], abs=1e-12)
    assert c["p_value"][0] == pytest.approx(ref.p[0], rel=1e-9)


def test_users_and_a_changed_rate_are_both_accounted_for():
    """Users seen many times and the rate switched: the stratified lift's SE is summed by
    user, labelled so, and its interval covers a true 0 at the nominal rate."""
    reps, n, users = 300, 300, 20
    rng = np.random.default_rng(8)
    u = rng.integers(0, users, (reps, n))
    offset = rng.normal(0, 0.15, (reps, users))[np.arange(reps)[:, None], u]
    half = np.arange(n) >= n // 2
    t = _stacked(reps, n, 9, np.where(half, 0.1, 0.3),
                 np.clip(np.where(half, 0.6, 0.4) + offset, 0, 1), 0.0)  # fmt: skip
    t.columns["user_id"] = Text((np.arange(reps)[:, None] * users + u).ravel(),
                                np.arange(reps * users).astype(str).astype(object))  # fmt: skip
    c = estimate_lifts(check_log(t).sessions).columns
    assert set(c["estimator"]) == {"dim, stratified by explore_rate, cluster-robust by user_id"}
    covered = (c["ci_low"] <= 0) & (c["ci_high"] >= 0)
    assert 0.92 <= covered.mean() <= 0.985
    assert abs(c["lift"].mean()) < 4 * c["lift"].std() / np.sqrt(reps)
