"""Logs the round-trip tests do not cover, each checked by value: no procedure matched,
two users (a t(1) interval scaled past [-1, 1]), one user (nothing to cluster over),
times mixing timestamps and integers, a revision listed twice, nothing to fit a world to.
Each of these failed before the fix named in its test."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.ab import benjamini_hochberg, holm, newcombe_estimate
from procmem_core.logs import LogError, Table, Text, check_log, estimate_lifts
from procmem_core.logs.world import fit_world, normal_lifts, pooled_se


def _text(values) -> Text:
    return Text.encode(np.array(values, dtype=object))


def _sessions(top, withheld, outcome, user=None, time=None) -> Table:
    n = len(top)
    cols = {
        "session_id": _text([f"s{i}" for i in range(n)]),
        "time": np.arange(n, dtype=float) if time is None else time,
        "top_key": _text(top),
        "withheld": np.array(withheld, dtype=bool),
        "explore_rate": np.full(n, 0.3),
        "outcome": np.array(outcome, dtype=float),
    }
    if user is not None:
        cols["user_id"] = _text(user)
    return Table("sessions", "sessions.csv", n, cols)


def test_adjusting_an_empty_family_gives_an_empty_family():
    # was: ValueError "cannot reshape array of size 0"
    assert holm(np.array([])).shape == (0,)
    assert benjamini_hochberg(np.array([])).shape == (0,)


def test_a_log_where_no_procedure_matched_gives_no_lift_and_the_planner():
    # was: the same ValueError from holm inside estimate_lifts (the live loop's first
    # sessions, before any procedure exists, are such a log)
    s = check_log(_sessions(["", "", ""], [False] * 3, [1, 0, 1])).sessions
    lifts = estimate_lifts(s, target_lift=0.1)
    assert lifts.columns["key"].size == 0 and lifts.summary["matched"] == 0.0
    assert lifts.plan["withheld"] > 0 and lifts.plan["base"] == pytest.approx(2 / 3)


def test_two_users_interval_stays_within_the_lifts_range():
    """One rated session per arm from two users: Newcombe's interval for 1/1 - 1/1 times
    t_0.975(1) / z_0.975 = 6.48 was [-5.14, 5.14]; a lift lies in [-1, 1]."""
    s = check_log(_sessions(["p", "p"], [False, True], [1, 1], user=["a", "b"])).sessions
    lifts = estimate_lifts(s).columns
    ref = newcombe_estimate(*[np.array([1.0])] * 4, 0.95)
    assert ref.high[0] * 6.48 > 1  # the scaled interval overshoots without the clip
    assert lifts["lift"][0] == 0.0
    assert (lifts["ci_low"][0], lifts["ci_high"][0]) == (-1.0, 1.0)


def test_a_procedure_rated_by_one_user_keeps_the_per_session_estimate_and_says_so():
    rng = np.random.default_rng(4)
    n = 300
    top = np.where(rng.random(n) < 0.5, "p", "q")
    w = rng.random(n) < 0.3
    y = (rng.random(n) < 0.5).astype(float)
    user = np.where(top == "p", "solo", rng.integers(0, 30, n).astype(str))
    clustered = estimate_lifts(check_log(_sessions(top, w, y, user=user)).sessions).columns
    plain = estimate_lifts(check_log(_sessions(top, w, y)).sessions).columns
    assert list(clustered["key"]) == ["p", "q"]
    # was: "dim, cluster-robust by user_id" for p, whose SE is the per-session one
    assert list(clustered["estimator"]) == ["dim, one user", "dim, cluster-robust by user_id"]
    for c in ("lift", "se", "ci_low", "ci_high", "p_value"):
        assert clustered[c][0] == pytest.approx(plain[c][0])
    assert clustered["se"][1] != pytest.approx(plain["se"][1])


def test_integer_times_written_as_text_are_ticks():
    # was: read as the years 0005 and 0007, wrapped in nanoseconds to 1758 and 1760
    t = _sessions(["p", "p"], [False, True], [1, 0], time=np.array(["5", "7"], dtype=object))
    s = check_log(t).sessions
    assert s.time_unit == "ticks" and list(s.time) == [5.0, 7.0]


@pytest.mark.parametrize(
    "times, row, value, first",
    [
        (["2026-01-01T00:00:00", "5"], 2, "5", "row 1 is a timestamp"),
        (["5", "2026-01-01T00:00:00"], 2, "2026-01-01T00:00:00", "row 1 is an integer"),
        ([None, "3", "2026-01-02"], 3, "2026-01-02", "row 2 is an integer"),
    ],
)
def test_times_mixing_timestamps_and_integers_are_refused(times, row, value, first):
    # was: accepted, the integer read as a year
    n = len(times)
    t = _sessions(["p"] * n, [False] * n, [1] * n, time=np.array(times, dtype=object))
    with pytest.raises(LogError) as err:
        check_log(t)
    assert (err.value.file, err.value.row, err.value.column) == ("sessions.csv", row, "time")
    assert err.value.value == value and first in err.value.allowed


def test_a_revision_listed_twice_is_refused():
    # was: replayed twice, once per logged verdict, and counted twice in the agreement
    runs = Table("runs", "runs.csv", 2, {
        "key": _text(["p", "p"]), "revision": _text(["r1", "r2"]),
        "ok": np.array([True, False]), "time": np.array([1.0, 5.0]),
    })  # fmt: skip
    revisions = Table("revisions", "revisions.csv", 3, {
        "key": _text(["p", "p", "p"]), "revision": _text(["r1", "r2", "r2"]),
        "prior_revision": _text(["", "r1", "r1"]), "proposed_at": np.array([0.0, 3.0, 4.0]),
    })  # fmt: skip
    with pytest.raises(LogError) as err:
        check_log(_sessions(["p"], [False], [1]), runs, revisions)
    assert (err.value.file, err.value.row, err.value.column) == ("revisions.csv", 3, "revision")
    assert err.value.value == "r2" and "(row 2 has it too)" in err.value.allowed


@pytest.mark.parametrize(
    "top, withheld, outcome, value",
    [
        ([], [], [], "no session rows"),
        (["p", "p"], [False, True], [np.nan, 1], "2 sessions, 2 matched, 1 rated"),
        (["", ""], [False, False], [1, 0], "2 sessions, 0 matched, 2 rated"),
    ],
)
def test_a_log_with_nothing_to_fit_a_world_to_is_refused(top, withheld, outcome, value):
    # was: NaN rates handed to Generator.binomial ("p contains NaNs") after lifts.csv;
    # the analysis asks the same check (check_fittable) before it writes anything
    s = check_log(_sessions(top, withheld, outcome)).sessions
    with pytest.raises(LogError) as err:
        fit_world(s, np.array([]), np.array([]), np.random.default_rng(0))
    assert err.value.file == "sessions.csv" and value in str(err.value.value)


def _rare_rates_log(rng: np.random.Generator, procedures: int = 60, n: int = 8000) -> Table:
    """Base rates Beta(1.5, 3.5) (many near 0), no lift at all, 10 % withheld: about 13
    withheld sessions per procedure, so many withheld arms have 0 successes."""
    p = rng.beta(1.5, 3.5, procedures)
    top = rng.integers(0, procedures, n)
    y = (rng.random(n) < p[top]).astype(float)
    table = _sessions([f"p{k:02d}" for k in top], rng.random(n) < 0.1, y)
    table.columns["explore_rate"] = np.full(n, 0.1)
    return table


def test_the_lifts_mean_is_unbiased_where_withheld_arms_are_small_and_rates_rare():
    """Truth: every lift 0. Weighing each lift by its per-arm Wald SE (a withheld 0 of 13
    has none) put the fitted mean at +0.027 +- 0.002 over 60 logs; the pooled-rate SE
    (``pooled_se``), which the analysis passes as ``counts``, is unbiased within 4 SE."""
    mus = []
    for child in np.random.SeedSequence(26).spawn(40):
        lifts = estimate_lifts(check_log(_rare_rates_log(np.random.default_rng(child))).sessions)
        c = lifts.columns
        counts = tuple(c[k] for k in ("successes_shown", "rated_shown",
                                      "successes_withheld", "rated_withheld"))  # fmt: skip
        mus.append(normal_lifts(c["lift"], pooled_se(c["se"], counts))[0]["mean"].value)
    mus = np.array(mus)
    mc_se = mus.std(ddof=1) / np.sqrt(mus.size)
    assert abs(mus.mean()) < 4 * mc_se, (mus.mean(), mc_se)


def test_pooled_se_values_and_the_design_effect_it_keeps():
    # 3/10 vs 1/10: pooled 0.2, sqrt(0.2 * 0.8 * 0.2) = 0.178885; a given SE twice the
    # Wald one (a design effect of 2) doubles it; 0/13 withheld, 5/10 shown: Wald is
    # sqrt(0.025) with no withheld variance, pooled 5/23
    wald = np.sqrt(0.3 * 0.7 / 10 + 0.1 * 0.9 / 10)
    se = pooled_se(np.array([wald, 2 * wald]), ([3, 3], [10, 10], [1, 1], [10, 10]))
    assert se == pytest.approx([np.sqrt(0.2 * 0.8 * 0.2), 2 * np.sqrt(0.2 * 0.8 * 0.2)])
    p = 5 / 23
    one = pooled_se(np.array([np.sqrt(0.025)]), ([5], [10], [0], [13]))
    assert one[0] == pytest.approx(np.sqrt(p * (1 - p) * (1 / 10 + 1 / 13)))


def test_rates_without_over_dispersion_give_no_concentration_se_but_a_lower_bound():
    """Ten procedures at one rate (kappa infinite): the fit's kappa is wherever the flat,
    noisy likelihood left it (was: 993,507,702 +- 28,276,749, a precise-looking SE; and
    at 100 procedures a mean SE of 0.000). Now kappa's SE is null, the mean's SE is the
    binomial sqrt(m (1 - m) / sum r), and the profile lower bound is finite and leaves
    the likelihood ratio at its 95 % cut."""
    from scipy import stats

    from procmem_core.logs.world import PROFILE_DROP, beta_binomial

    r = np.full(10, 100)
    s = np.random.default_rng(1).binomial(r, 0.6)
    fit = beta_binomial(s, r)
    m = fit["mean"].value
    assert m == pytest.approx(s.sum() / r.sum(), abs=1e-4)
    assert fit["mean"].se == pytest.approx(np.sqrt(m * (1 - m) / r.sum()), rel=1e-6)
    assert np.isnan(fit["concentration"].se) and np.isnan(fit["a"].se)
    low = fit["concentration_low"].value
    assert 10 < low < 1000

    # the bound's likelihood ratio against the binomial (kappa infinite) is the 95 % cut
    # (the mean held at m: the profile's re-fitted mean barely moves, m being orthogonal)
    top = float(stats.binom.logpmf(s, r, m).sum())

    def drop(kappa: float) -> float:
        return top - float(stats.betabinom.logpmf(s, r, m * kappa, (1 - m) * kappa).sum())

    assert drop(low) == pytest.approx(PROFILE_DROP, abs=0.01)
    assert drop(low / 2) > PROFILE_DROP + 0.3


def test_a_revision_run_logged_at_its_proposal_time_is_replayed():
    """Prior: 20 of 20 before the proposal at tick 20. Revision: F at tick 20 (the
    proposal's tick), F, F, then 10 S. By hand, the seed's SPRT with the plug-in p0 =
    21/22, p1 = p0 - 0.15: each failure adds ln((1 - p1)/(1 - p0)) = 1.458, so three
    reach ln A = ln(0.8/0.05) = 2.773 at run 3 (min_runs) and revert. Was: the tick-20
    run dropped, 12 revision runs, and F F S at run 3 (LLR 2.745 < ln A) kept going."""
    from procmem_core.gates import SPRTGate
    from procmem_core.logs.replay import gate_replay

    oks = [True] * 20 + [False] * 3 + [True] * 10
    runs = Table("runs", "runs.csv", 33, {
        "key": _text(["a"] * 33), "revision": _text(["r1"] * 20 + ["r2"] * 13),
        "ok": np.array(oks), "time": np.r_[np.arange(20), np.arange(20, 33)].astype(float),
    })  # fmt: skip
    revisions = Table("revisions", "revisions.csv", 2, {
        "key": _text(["a", "a"]), "revision": _text(["r1", "r2"]),
        "prior_revision": _text(["", "r1"]), "proposed_at": np.array([0.0, 20.0]),
    })  # fmt: skip
    log = check_log(_sessions(["a"], [False], [1]), runs, revisions)
    p0 = 21 / 22
    p1 = p0 - 0.15
    fail, win = np.log((1 - p1) / (1 - p0)), np.log(p1 / p0)
    assert 3 * fail >= np.log(0.8 / 0.05) > 2 * fail + win
    out = gate_replay(log, {"sprt": SPRTGate()})
    assert out["revision_runs"][0] == 13 and out["prior_runs"][0] == 20
    assert (out["sprt_verdict"][0], out["sprt_runs"][0]) == ("reverted", 3)


def test_the_planner_counts_logged_sessions_at_the_matched_sessions_rate():
    """No session withheld; matched sessions succeed 1 in 5 and half of them are rated;
    unmatched ones all succeed. The planner sizes for a base of 0.2 (was: 5/9, all
    rated sessions') and asks for its rated sessions over the rated share 0.5 (was:
    rated sessions reported as logged ones)."""
    from procmem_core.ab import Design, plan_rate

    top = ["p"] * 10 + [""] * 4
    outcome = [1, 0, 0, 0, 0] + [np.nan] * 5 + [1] * 4
    plan = estimate_lifts(check_log(_sessions(top, [False] * 14, outcome)).sessions).plan
    expect = plan_rate(Design(lift=0.1, base=0.2), 0.3)
    assert plan["base"] == pytest.approx(0.2) and plan["rated_share"] == 0.5
    assert plan["sessions"] == np.ceil(expect.sessions / 0.5)
    assert plan["withheld"] == pytest.approx(expect.withheld / 0.5)


def _with_rated_at(time, rated_at) -> Table:
    t = _sessions(["p", "p"], [False, True], [1, 0], time=np.array(time, dtype=object))
    t.columns["rated_at"] = np.array(rated_at, dtype=object)
    return t


@pytest.mark.parametrize(
    "time, rated_at, row, value, allowed",
    [
        # was: a delay of -5 ticks, fitted into world.json's delay_mean
        ([10, 20], [11, 15], 2, 15, "a time at or after the session's time (20)"),
        # was: seconds since 1970 less ticks, a delay of 1.77e9
        ([10, 20], ["2026-01-01T00:00:00", None], None, "timestamps",
         "integer ticks, as 'time' is"),
    ],
)  # fmt: skip
def test_rated_at_before_its_session_or_in_another_unit_is_refused(time, rated_at, row,
                                                                    value, allowed):  # fmt: skip
    with pytest.raises(LogError) as err:
        check_log(_with_rated_at(time, rated_at))
    assert (err.value.row, err.value.column, err.value.value) == (row, "rated_at", value)
    assert err.value.allowed == allowed


def test_runs_and_revisions_in_different_time_units_are_refused():
    # was: ticks compared with seconds since 1970: every run "before" the proposal
    runs = Table("runs", "runs.csv", 1, {
        "key": _text(["p"]), "revision": _text(["r1"]), "ok": np.array([True]),
        "time": np.array([5.0]),
    })  # fmt: skip
    revisions = Table("revisions", "revisions.csv", 1, {
        "key": _text(["p"]), "revision": _text(["r1"]), "prior_revision": _text([""]),
        "proposed_at": np.array(["2026-01-01T00:00:00"], dtype=object),
    })  # fmt: skip
    with pytest.raises(LogError) as err:
        check_log(_sessions(["p"], [False], [1]), runs, revisions)
    assert (err.value.file, err.value.column, err.value.value) == (
        "revisions.csv",
        "proposed_at",
        "timestamps",
    )
    assert err.value.allowed == "integer ticks, as runs.csv's 'time' is"


def test_aipw_with_users_is_clustered_by_user():
    """A covariate and ``user_id``: AIPW's SE sums each user's influence (was: the
    session-level SE, ignoring that users' lifts differ; over 200 logs of 8 users with
    a user-level lift sd of 0.15 its 95 % interval held the population lift 0.70 of the
    time, the clustered one 0.885, as the clustered difference in means does)."""
    from scipy import stats

    from procmem_core.ab import AugmentedIPW

    rng = np.random.default_rng(8)
    n, users = 1200, 10
    u = rng.integers(0, users, n)
    w = rng.random(n) < 0.3
    p = np.clip(
        0.5 + rng.normal(0, 0.1, users)[u] + np.where(w, 0, rng.normal(0.1, 0.3, users)[u]), 0, 1
    )
    y = (rng.random(n) < p).astype(float)
    x = rng.normal(size=n)
    t = _sessions(["p"] * n, w, y, user=u.astype(str))
    t.columns["covariate"] = x
    lifts = estimate_lifts(check_log(t).sessions).columns
    assert lifts["estimator"][0] == "aipw, cluster-robust by user_id"
    psi = AugmentedIPW().influence(y, ~w, x, np.ones(n, bool), np.full(n, 0.7))[0]
    tau = psi.mean()
    sums = np.bincount(u, psi - tau)
    se = np.sqrt(users / (users - 1) * (sums**2).sum()) / n
    q = stats.t.isf(0.025, users - 1)
    assert lifts["lift"][0] == pytest.approx(tau)
    assert lifts["se"][0] == pytest.approx(se)
    assert lifts["ci_high"][0] == pytest.approx(tau + q * se)
    assert lifts["p_value"][0] == pytest.approx(2 * stats.t.sf(abs(tau) / se, users - 1))
    session_se = AugmentedIPW().estimate(y, ~w, x, np.ones(n, bool), np.full(n, 0.7)).se[0]
    assert se > 2 * session_se  # the users' differing lifts are most of the variance


def test_the_rates_fit_stays_where_the_likelihood_is_a_likelihood():
    """3/11, 0/1, 2/2 (a live run's ledger): the likelihood rises towards kappa = infinity,
    and past ~1e16 betaln's difference is rounding noise; Nelder-Mead ran to kappa = e^38.6
    where it read a log-likelihood of +1032 (a probability above 1). Capped at 1e8, the
    fit is at the boundary: the binomial mean and SE, kappa's 95 % lower bound."""
    from procmem_core.logs.world import beta_binomial

    fit = beta_binomial(np.array([3.0, 0.0, 2.0]), np.array([11.0, 1.0, 2.0]))
    assert fit["concentration"].value <= 1e8 and np.isnan(fit["concentration"].se)
    m = fit["mean"].value
    assert m == pytest.approx(5 / 14, abs=1e-3)
    assert fit["mean"].se == pytest.approx(np.sqrt(m * (1 - m) / 14), rel=1e-6)
    assert 0.01 < fit["concentration_low"].value < 100
