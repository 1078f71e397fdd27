"""Confidence sequences under continuous monitoring, in simulated worlds with known truth.

The world is drawn here with numpy (users with a Beta base rate, a constant lift when
shown, the pack's coin with the known explore rate); the check is the probability that
the true lift ever leaves the sequence within the horizon, read after every session.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from procmem_core.ab import ESTIMATORS
from procmem_core.ab.estimators import newcombe_path
from procmem_core.ab.sequential import (
    BernsteinAIPW,
    BetaMixtureArms,
    NormalMixtureAIPW,
    TwoPointAIPW,
)

ALPHA = 0.05
PSEUDO_SEQUENCES = ("cs_aipw", "cs_ipw", "cs_aipw_linear", "cs_eb_aipw", "cs_eb_ipw")


def world(reps: int, sessions: int, explore_rate: float, lift: float, seed: int):
    """``(y, shown, x, mask)``: base rates Beta(5, 5) (x = the user's base rate), success
    probability ``x + lift`` when shown; the truth is ``lift`` for every replication."""
    rng = np.random.default_rng(seed)
    x = rng.beta(5.0, 5.0, size=(reps, sessions)) * (1 - lift)
    shown = rng.random((reps, sessions)) >= explore_rate
    y = (rng.random((reps, sessions)) < x + lift * shown).astype(float)
    return y, shown, x, np.ones_like(shown)


def _limit(reps: int) -> float:
    return ALPHA + 4 * math.sqrt(ALPHA * (1 - ALPHA) / reps)


@pytest.mark.parametrize("lift", [0.0, 0.1])
def test_miscoverage_under_monitoring_with_20_withheld_sessions(lift):
    """4,000 deployments of 200 sessions at explore rate 0.1 (20 withheld on average):
    P(lift ever outside) <= 0.05 + 4 SE = 0.064, so a sequence missing 0.064 or more is
    caught; the goal figure, coverage >= 0.95 - 4 SE, is the same statement."""
    reps = 4000
    y, shown, x, mask = world(reps, 200, 0.1, lift, seed=11 + int(lift * 10))
    for name in PSEUDO_SEQUENCES:
        path = ESTIMATORS[name]().path(y, shown, x, mask, 0.9)
        miss = path.ever_excludes(lift).mean()
        assert miss <= _limit(reps), (name, lift, miss)


@pytest.mark.slow
@pytest.mark.parametrize("lift", [0.0, 0.1])
def test_miscoverage_under_monitoring_with_2000_withheld_sessions(lift):
    """600 deployments of 4,000 sessions at explore rate 0.5 (2,000 withheld): limit
    0.05 + 4 SE = 0.086 (catches a sequence that misses 0.086 or more)."""
    reps = 600
    y, shown, x, mask = world(reps, 4000, 0.5, lift, seed=21 + int(lift * 10))
    for name in PSEUDO_SEQUENCES:
        path = ESTIMATORS[name]().path(y, shown, x, mask, 0.5)
        miss = path.ever_excludes(lift).mean()
        assert miss <= _limit(reps), (name, lift, miss)


@pytest.mark.parametrize("lift", [0.0, 0.1])
def test_arms_sequence_under_monitoring_with_small_arms(lift):
    """1,000 deployments of 200 sessions at explore rate 0.1: limit 0.05 + 4 SE = 0.078."""
    reps = 1000
    y, shown, x, mask = world(reps, 200, 0.1, lift, seed=31 + int(lift * 10))
    path = BetaMixtureArms().path(y, shown, x, mask, 0.9)
    assert path.ever_excludes(lift).mean() <= _limit(reps)
    final = BetaMixtureArms().estimate(y, shown, x, mask, 0.9)
    assert np.allclose(final.low, path.low[:, -1]) and np.allclose(final.p, path.p[:, -1])


def test_peeking_at_the_fixed_n_interval_misses_far_more_often_than_its_level():
    """The same A/A world read with Newcombe's fixed-n interval after every session: the
    truth leaves it in far more than 5 % of deployments (the reason for sequences)."""
    y, shown, x, mask = world(2000, 200, 0.1, 0.0, seed=41)
    low, high = newcombe_path(y, shown, mask, 0.95)
    peeked = ((low > 0) | (high < 0)).any(axis=1).mean()
    sequence = NormalMixtureAIPW().path(y, shown, x, mask, 0.9).ever_excludes(0.0).mean()
    assert peeked > 0.2 and sequence < _limit(2000)


def test_p_value_is_below_alpha_exactly_when_zero_left_the_sequence():
    y, shown, x, mask = world(600, 300, 0.2, 0.12, seed=5)
    for name in PSEUDO_SEQUENCES:
        path = ESTIMATORS[name]().path(y, shown, x, mask, 0.8)
        left = np.maximum.accumulate(path.excludes(0.0), axis=1)
        agree = (path.p <= ALPHA) == left
        assert agree.mean() > 0.999, name  # up to ties at the boundary itself
        assert 0 < left[:, -1].mean() < 1, name  # the check is not vacuous
        est = ESTIMATORS[name]().estimate(y, shown, x, mask, 0.8)
        assert np.array_equal(est.high, path.high[:, -1]), name


def test_width_at_the_tuned_size_against_the_fixed_n_interval():
    """At the tuned size (the horizon, 2,000 sessions at explore rate 0.5), 300
    deployments: the two-point sequence is within the 1.5x goal of the fixed-n AIPW
    interval and the normal mixture near its theoretical 1.549 (mean ratios, SE < 0.002)."""
    y, shown, x, mask = world(300, 2000, 0.5, 0.05, seed=9)
    fixed = ESTIMATORS["aipw"]().estimate(y, shown, x, mask, 0.5)
    width = fixed.high - fixed.low
    linear = TwoPointAIPW().estimate(y, shown, x, mask, 0.5)
    normal = NormalMixtureAIPW().estimate(y, shown, x, mask, 0.5)
    ratio_linear = np.mean((linear.high - linear.low) / width)
    ratio_normal = np.mean((normal.high - normal.low) / width)
    assert ratio_linear <= 1.5
    assert 1.53 <= ratio_normal <= 1.62


def test_tuning_sessions_moves_where_the_sequence_is_tightest():
    y, shown, x, mask = world(200, 2000, 0.3, 0.05, seed=6)
    early = BernsteinAIPW(tuning_sessions=200).path(y, shown, x, mask, 0.7)
    late = BernsteinAIPW(tuning_sessions=2000).path(y, shown, x, mask, 0.7)
    w_early, w_late = early.high - early.low, late.high - late.low
    assert np.median(w_early[:, 199]) < np.median(w_late[:, 199])
    assert np.median(w_early[:, -1]) > np.median(w_late[:, -1])
    with pytest.raises(ValueError, match="tuning_sessions"):
        NormalMixtureAIPW(tuning_sessions=0)


def test_what_a_sequences_p_value_says_at_the_last_session():
    """docs/ab.md: a pseudo-outcome sequence's p-value is running (below alpha once 0 has
    left the sequence, even where the last interval holds 0 again: 19 of 300 deployments
    here), while cs_arms' p-value is its last session's own (not running) and agrees with
    its last interval."""
    rng = np.random.default_rng(2)
    shown = rng.random((300, 400)) < 0.7
    y = (rng.random(shown.shape) < 0.5 + 0.07 * shown).astype(float)
    x, mask = np.full(y.shape, 0.5), np.ones_like(shown)
    est = NormalMixtureAIPW().estimate(y, shown, x, mask, 0.7)
    disagree = (est.p < ALPHA) != ((est.low > 0) | (est.high < 0))
    assert disagree.sum() == 19 and (est.p[disagree] < ALPHA).all()
    arms = BetaMixtureArms().path(y, shown, x, mask, 0.7)
    final = arms.final()
    assert ((final.p < ALPHA) == ((final.low > 0) | (final.high < 0))).all()
    assert (np.diff(arms.p, axis=1) > 0).any(axis=1).mean() == pytest.approx(0.2)
