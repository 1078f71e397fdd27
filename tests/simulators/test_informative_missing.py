"""``InformativeMissing`` (issue 24, item 6): arrival channels see the outcomes and the
users; the flat rule's exact fate when only rated sessions update it; the naive
shown-vs-withheld lift on rated sessions is biased by ``g(p1) - g(p0) - (p1 - p0)``."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core import DifferenceInMeans, ParameterError, flat_fate, shown_mask, snap
from procmem_core.flat import DEFAULT_RULE, DEFAULT_THRESHOLD
from simulators import Feedback, GateScenario, InformativeMissing, MissingRatings
from simulators.result import mean_and_se, rate_and_se

Z = 4.0


def test_reporting_depends_on_the_outcome_at_the_set_rates():
    channel = InformativeMissing(missing_if_success=0.6, missing_if_failure=0.1)
    outcome = np.arange(200_000) % 4 == 0  # a quarter successes
    seen = Feedback((channel,)).transmit(np.random.default_rng(1), outcome, 0.5).observed
    for ok, rate in ((True, 0.4), (False, 0.9)):
        r, se = rate_and_se(np.count_nonzero(seen[outcome == ok]), np.count_nonzero(outcome == ok))
        assert abs(r - rate) < Z * se
    assert Feedback.of(missing_if_failure=0.2).informative
    assert not Feedback((MissingRatings(0.3),)).informative


def test_missing_at_random_keeps_its_random_stream():
    """The new signature leaves MissingRatings' draws as they were."""
    outcome = np.random.default_rng(0).random((50, 30)) < 0.6
    got = Feedback((MissingRatings(0.3),)).transmit(np.random.default_rng(9), outcome, 0.5)
    assert (got.observed == (np.random.default_rng(9).random((50, 30)) >= 0.3)).all()


def test_the_rated_success_rate_is_bayes_and_the_gate_scenario_refuses_it():
    fb = Feedback.of(missing_if_success=0.6, missing_if_failure=0.1)
    q = np.array([0.2, 0.5, 0.9])
    assert fb.positive_rate(q) == pytest.approx(q * 0.4 / (q * 0.4 + (1 - q) * 0.9))
    flipped = Feedback.of(missing_if_success=0.6, missing_if_failure=0.1, false_negative=0.2)
    # P(positive | rated) = P(success | rated) * (1 - false_negative)
    assert flipped.positive_rate(q) == pytest.approx(fb.positive_rate(q) * 0.8)
    with pytest.raises(ParameterError, match="feedback"):
        GateScenario(feedback=fb, replications=10)
    with pytest.raises(ParameterError, match="missing_if_failure"):
        InformativeMissing(missing_if_failure=1.0)


def test_no_missingness_gives_the_flat_fate_itself():
    got = InformativeMissing().flat_fate(0.7, 20)
    want = flat_fate(0.7, 20)
    assert got.p_excluded == pytest.approx(want.p_excluded, abs=1e-12)
    assert got.expected_sessions_applied == pytest.approx(want.expected_sessions_applied)


def _simulate_fate(channel, p, sessions, reps, seed):
    """The engine's rule on a procedure whose sessions update it only when rated."""
    rng = np.random.default_rng(seed)
    fb = Feedback((channel,))
    conf = np.full(reps, snap(DEFAULT_RULE.start(None)))
    shown_sessions = np.zeros(reps)
    for _ in range(sessions):
        shown = shown_mask(conf[:, None], DEFAULT_THRESHOLD, 1)[:, 0]
        outcome = rng.random(reps) < p
        sig = fb.transmit(rng, outcome, 0.5)
        update = shown & sig.reported()
        conf = np.where(update, DEFAULT_RULE.update(conf, sig.label), conf)
        shown_sessions += shown
    excluded = ~shown_mask(conf[:, None], DEFAULT_THRESHOLD, 1)[:, 0]
    return excluded, shown_sessions


@pytest.mark.parametrize(("ms", "mf"), [(0.5, 0.1), (0.1, 0.5)])
def test_the_exact_fate_agrees_with_simulation(ms, mf):
    channel = InformativeMissing(missing_if_success=ms, missing_if_failure=mf)
    exact = channel.flat_fate(0.75, 20)
    excluded, shown = _simulate_fate(channel, 0.75, 20, 40_000, seed=3)
    rate, se = rate_and_se(np.count_nonzero(excluded), excluded.size)
    assert abs(rate - exact.p_excluded) < Z * se
    mean, mse = mean_and_se(shown)
    assert abs(mean - exact.expected_sessions_applied) < Z * mse
    # failures rated more often (successes missing more) make a good procedure's
    # exclusion likelier than when every session is rated; the other way, less likely
    plain = flat_fate(0.75, 20).p_excluded
    gap = exact.p_excluded - plain
    assert gap > Z * se if ms > mf else gap < -Z * se


def test_the_naive_lift_on_rated_sessions_is_biased_by_the_exact_amount():
    p0, p1, sessions, reps = 0.3, 0.5, 2_000, 400
    fb = Feedback.of(missing_if_success=0.6, missing_if_failure=0.1)
    rng = np.random.default_rng(11)
    shown = rng.random((reps, sessions)) < 0.8
    outcome = rng.random((reps, sessions)) < np.where(shown, p1, p0)
    sig = fb.transmit(rng, outcome, p0)
    est = DifferenceInMeans().estimate(sig.label.astype(float), shown, np.zeros(shown.shape),
                                       sig.reported(), 0.8)  # fmt: skip
    naive, se = mean_and_se(est.tau)
    exact_bias = float(fb.positive_rate(p1) - fb.positive_rate(p0)) - (p1 - p0)
    assert abs((naive - (p1 - p0)) - exact_bias) < Z * se
    assert abs(exact_bias) > 20 * se  # a bias the experiment sees, not noise


def test_the_config_option_reaches_the_scenarios():
    """``feedback=failures_rated`` builds the channel; the gate scenario names the field."""
    from experiments.build import build_scenario
    from experiments.run import compose_job

    conf = build_scenario(compose_job("confidence_sweep", ["feedback=failures_rated"]))
    channel = conf.feedback.channel("informative_missing")
    assert (channel.missing_if_success, channel.missing_if_failure) == (0.5, 0.1)
    with pytest.raises(ParameterError, match="feedback"):
        build_scenario(compose_job("gate_tuning", ["feedback=failures_rated"]))


def test_a_procedure_never_shown_keeps_its_own_success_rate():
    """A threshold above the start: never shown, so never excluded later; the fate reports
    the procedure's ``p``, not the rated sessions' success rate ``g(p)``."""
    fate = InformativeMissing(0.5, 0.1).flat_fate(0.7, 10, threshold=0.65)
    assert (fate.p, fate.sessions, fate.p_excluded, fate.expected_sessions_applied) == (
        0.7, 10, 1.0, 0.0)  # fmt: skip
