"""Users, feedback, chunking and the result helpers."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from simulators.feedback import ArrivalLine as DelayLine
from simulators.feedback import Feedback
from simulators.replication import CHUNK_LISTENER, chunks
from simulators.result import RatioTally, ratio_and_se
from simulators.scenarios.fate import ProcedureFateScenario
from simulators.users import HARMFUL, HELPFUL, NEUTRAL, UserPopulation, effect_kind


def test_base_rates_have_the_documented_mean_and_variance():
    pop = UserPopulation(base_rate=0.3, heterogeneity=0.2)
    b = pop.sample_base(np.random.default_rng(1), 400_000)
    se_mean = np.sqrt(0.3 * 0.7 * 0.2 / b.size)
    assert abs(b.mean() - 0.3) < 4 * se_mean
    assert b.var() == pytest.approx(0.3 * 0.7 * 0.2, rel=0.02)


def test_effect_shares_match_parameters():
    pop = UserPopulation(helpful_share=0.3, harmful_share=0.1, helpful_effect=0.2)
    e = pop.sample_effects(np.random.default_rng(2), (200_000, 3))
    kind = effect_kind(e)
    for code, share in ((HELPFUL, 0.3), (HARMFUL, 0.1), (NEUTRAL, 0.6)):
        r = np.mean(kind == code)
        assert abs(r - share) < 4 * np.sqrt(share * (1 - share) / kind.size)
    assert set(np.unique(e)) == {-0.15, 0.0, 0.2}


@pytest.mark.parametrize("effect", [0.3, 0.05, -0.1, -0.4])
def test_expected_lift_is_exact_under_clipping(effect):
    pop = UserPopulation(base_rate=0.7, heterogeneity=0.3)
    b = pop.sample_base(np.random.default_rng(3), 1_000_000)
    lift = np.clip(b + effect, 0, 1) - b
    se = lift.std() / np.sqrt(lift.size)
    assert abs(lift.mean() - pop.expected_lift(effect)) < 4 * se + 1e-12


def test_expected_lift_without_heterogeneity_clips():
    pop = UserPopulation(base_rate=0.9)
    assert pop.expected_lift(0.2) == pytest.approx(0.1)
    assert pop.expected_lift(-0.95) == pytest.approx(-0.9)


def test_feedback_flip_rates_and_missing():
    fb = Feedback.of(false_negative=0.2, false_positive=0.1, missing=0.25)
    rng = np.random.default_rng(4)
    truth = rng.random(400_000) < 0.6
    signals = fb.transmit(rng, truth, 0.5)
    sig, obs = signals.label, signals.observed
    assert abs(sig[truth].mean() - 0.8) < 0.005
    assert abs(sig[~truth].mean() - 0.1) < 0.005
    assert abs(obs.mean() - 0.75) < 0.005
    assert fb.positive_rate(0.6) == pytest.approx(0.6 * 0.8 + 0.4 * 0.1)


def test_noiseless_feedback_draws_nothing():
    fb = Feedback.of()
    rng = np.random.default_rng(5)
    before = rng.bit_generator.state
    truth = np.array([True, False])
    signals = fb.transmit(rng, truth, 0.5)
    assert (signals.label == truth).all() and signals.observed is None
    assert rng.bit_generator.state == before
    assert fb.noiseless


def test_delay_line_returns_items_delay_sessions_later():
    line = DelayLine(2)
    out = [line.push(i) for i in range(5)]
    assert out == [None, None, 0, 1, 2]
    assert DelayLine(0).push("x") == "x"


def test_chunks_cover_replications_and_do_not_depend_on_order():
    a = list(chunks(7, 10, 4))
    assert [(c.start, c.stop) for c in a] == [(0, 4), (4, 8), (8, 10)]
    b = list(chunks(7, 10, 4))
    assert a[2].rng.random() == b[2].rng.random()  # third chunk alone, same stream
    assert a[0].rng.random() != a[1].rng.random()


def test_ratio_se_reduces_to_mean_se():
    x = np.random.default_rng(6).random(1000)
    r, se = ratio_and_se(x, np.ones_like(x))
    assert r == pytest.approx(x.mean())
    assert se == pytest.approx(x.std(ddof=1) / np.sqrt(x.size))


@pytest.mark.parametrize(
    ("cls", "kwargs", "fragment"),
    [
        (UserPopulation, {"base_rate": 1.2}, "base_rate"),
        (UserPopulation, {"heterogeneity": 1.0}, "heterogeneity"),
        (UserPopulation, {"base_rate": 0.0, "heterogeneity": 0.1}, "base_rate"),
        (UserPopulation, {"helpful_share": 0.7, "harmful_share": 0.5}, "harmful_share"),
        (UserPopulation, {"helpful_effect": -0.1}, "helpful_effect"),
        (Feedback.of, {"false_negative": 1.5}, "false_negative"),
        (Feedback.of, {"false_positive": "x"}, "false_positive"),
        (Feedback.of, {"missing": 1.0}, "missing"),
        (Feedback.of, {"delay": -1}, "delay"),
        (Feedback.of, {"delay": 1.5}, "delay"),
    ],
)
def test_invalid_world_parameters(cls, kwargs, fragment):
    with pytest.raises(ParameterError, match=fragment):
        cls(**kwargs)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [((-1, 10, 4), "seed"), ((1, 0, 4), "replications"), ((1, 10, 0), "chunk_size")],
)
def test_invalid_chunking(args, fragment):
    with pytest.raises(ParameterError, match=fragment):
        list(chunks(*args))


def test_chunk_listener_hears_each_finished_chunk_without_changing_results():
    heard = []
    sc = ProcedureFateScenario(replications=1000, chunk_size=300)
    token = CHUNK_LISTENER.set(lambda chunk, n: heard.append((chunk.index, n)))
    try:
        with_listener = sc.run(3).metrics
    finally:
        CHUNK_LISTENER.reset(token)
    assert heard == [(0, 4), (1, 4), (2, 4), (3, 4)]
    assert with_listener == sc.run(3).metrics


def test_ratio_tally_matches_ratio_and_se_chunk_by_chunk():
    rng = np.random.default_rng(8)
    x, y = rng.poisson(3, 900).astype(float), rng.poisson(5, 900).astype(float) + 1
    tally = RatioTally(2)
    for lo in range(0, 900, 250):
        tally.add(1, x[lo : lo + 250], y[lo : lo + 250])
    r, se = tally.rates()
    assert np.isnan(r[0]) and np.isnan(se[0])
    assert (r[1], se[1]) == pytest.approx(ratio_and_se(x, y))
