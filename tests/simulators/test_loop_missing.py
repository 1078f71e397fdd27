"""The loop under informative missingness (issue 29, item 6): failed sessions rated more
often. The naive shown-vs-withheld lift on rated sessions is biased by what the exact
formula (``loop_lift``: Bayes over the report rates) says, within 4 SE; the loop runs
under the channel by config (``feedback=failures_rated``)."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.build import validate
from experiments.run import compose_job
from simulators import Feedback, InformativeMissing
from simulators.scenarios.loop import LoopScenario
from simulators.scenarios.loop_lift import replication_lifts

SMALL = {"tasks": 2, "sessions": 300, "revise_every": 20, "explore_rate": 0.3}
FAILURES_RATED = Feedback((InformativeMissing(missing_if_success=0.8, missing_if_failure=0.0),))


@pytest.fixture(scope="module")
def worlds():
    return LoopScenario(**SMALL, replications=24, feedback=FAILURES_RATED).simulate(3)


def _lifts(worlds, feedback=FAILURES_RATED):
    per = [replication_lifts(w, feedback, 0.3) for w in worlds]
    return {k: np.array([d[k] for d in per if d is not None]) for k in per[0]}


def _z(diff: np.ndarray) -> float:
    return float(np.mean(diff) / (np.std(diff, ddof=1) / np.sqrt(len(diff))))


def test_the_naive_lift_is_biased_by_the_exact_formula(worlds):
    d = _lifts(worlds)
    assert len(d["lift"]) == 24
    # each replication's naive lift against its exact expectation given the rates drawn
    assert abs(_z(d["naive_lift"] - d["naive_lift_exact"])) < 4
    assert abs(_z(d["lift"] - d["lift_exact"])) < 4
    # the bias: a success rated with probability 0.2, a failure always, so
    # g(p) = 0.2 p / (0.2 p + 1 - p): g(0.3) = 0.06 / 0.76 = 0.0789 at the base rate
    bias = d["naive_lift_bias"]
    assert np.all(bias < -0.05) and float(np.mean(bias)) == pytest.approx(-0.15, abs=0.02)
    assert abs(_z((d["naive_lift"] - d["lift"]) - bias)) < 4
    assert _z(d["naive_lift"] - d["lift"]) < -4  # and the bias is there, far beyond noise


def test_one_replication_s_exact_figure_by_hand(worlds):
    w = worlds[0]
    p = np.array([x.p_true for x in w.sessions if x.followed and x.withheld is None])
    g = 0.2 * p / (0.2 * p + 1 - p)
    weight = 0.2 * p + 1 - p
    want = float(np.sum(weight * g) / np.sum(weight)) - 0.06 / 0.76
    got = replication_lifts(w, FAILURES_RATED, 0.3)
    assert got["naive_lift_exact"] == pytest.approx(want, rel=1e-12)
    assert got["lift_exact"] == pytest.approx(float(np.mean(p)) - 0.3, rel=1e-12)


def test_under_perfect_feedback_the_naive_lift_is_the_lift():
    sc = LoopScenario(**SMALL, replications=3)
    res = sc.run(4)
    m = res.metrics
    assert m["rated_rate"] == 1.0
    assert m["naive_lift"] == m["lift"] and m["naive_lift_bias"] == 0.0
    # the ratings of sessions without a procedure draw from a spawned child: the engine's
    # own numbers are those of a run under a channel that rates every session
    none_missing = Feedback((InformativeMissing(),))
    assert LoopScenario(**SMALL, replications=3, feedback=none_missing).run(4).metrics == m


def test_the_loop_preset_runs_under_the_channel_by_config():
    sc = validate(compose_job("loop", ["feedback=failures_rated"]))
    channel = sc.feedback.channel("informative_missing")
    assert channel == InformativeMissing(missing_if_success=0.5, missing_if_failure=0.1)
    assert validate(compose_job("loop")).feedback.noiseless


def test_the_lifts_simulated_vs_exact_se_is_that_of_the_paired_difference(worlds):
    """lift_exact is mean(p_i) - b of the same replications, so the z of lift against it
    divides by the SE of the per-replication differences (lift_diff_se), far smaller than
    lift_se, which also holds the spread of mean(p_i): with lift_se the loop preset's 128
    z-scores had variance 0.26."""
    from simulators.result import ScenarioResult
    from simulators.scenarios.loop_lift import add_lift_metrics

    result = ScenarioResult("loop", {})
    add_lift_metrics(result, worlds, FAILURES_RATED, 0.3)
    m, d = result.metrics, _lifts(worlds)
    for name in ("lift", "naive_lift"):
        diff = d[name] - d[f"{name}_exact"]
        want = np.std(diff, ddof=1) / np.sqrt(len(diff))
        assert m[f"{name}_diff_se"] == pytest.approx(want, rel=1e-12)
        assert m[f"{name}_diff_n"] == len(diff)  # the t-score's df is this - 1
    assert m["lift_diff_se"] < 0.8 * m["lift_se"]
