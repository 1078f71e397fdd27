"""Sample-ratio mismatch: planted mismatches are flagged, honest splits rarely are, and the
sequential test keeps its level when checked after every session."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from procmem_core.ab.srm import (
    SRM_ALPHA,
    sequential_srm_p_value,
    srm_concentration,
    srm_flagged,
    srm_p_value,
    srm_p_value_rates,
)
from procmem_core.errors import ParameterError


def _limit(alpha: float, reps: int) -> float:
    return alpha + 4 * math.sqrt(alpha * (1 - alpha) / reps)


def test_exact_p_value_on_hand_cases():
    # no session withheld of 10 at epsilon 0.5: 2 * 0.5^10; the expected count: 1
    p = srm_p_value([0, 5, 10], [10, 10, 10], 0.5)
    assert p[0] == pytest.approx(2 * 0.5**10) and p[1] == 1.0 and p[2] == p[0]
    # at epsilon 0.5 the doubled tail equals scipy's two-sided binomial test
    for k in (0, 2, 7, 13, 20):
        ref = stats.binomtest(k, 20, 0.5).pvalue
        assert srm_p_value(k, 20, 0.5) == pytest.approx(ref, rel=1e-12)
    # an asymmetric case written out: 2 P(K <= 400), K ~ Bin(5000, 0.1)
    assert srm_p_value(400, 5000, 0.1) == pytest.approx(2 * stats.binom.cdf(400, 5000, 0.1))
    assert np.isnan(srm_p_value(0, 0, 0.1))


def test_planted_mismatch_is_flagged_in_nine_of_ten_deployments():
    """Withheld share 0.08 at epsilon 0.10 over 5,000 sessions, 2,000 deployments (the
    flag rate's SE is about 0.005, so a rate of 0.88 or less fails)."""
    rng = np.random.default_rng(1)
    withheld = rng.random((2000, 5000)) < 0.08
    fixed = srm_flagged(srm_p_value(withheld.sum(axis=1), 5000, 0.1)).mean()
    assert fixed >= 0.9
    seq = srm_flagged(sequential_srm_p_value(withheld, 0.1, 5000)[:, -1]).mean()
    assert 0.3 < seq < fixed  # always-valid costs power at the same horizon


def test_false_alarms_at_most_one_in_a_thousand():
    """200,000 honest deployments of 5,000 sessions: limit 0.001 + 4 SE = 0.00128."""
    rng = np.random.default_rng(2)
    k = rng.binomial(5000, 0.1, size=200_000)
    rate = srm_flagged(srm_p_value(k, 5000, 0.1)).mean()
    assert rate <= _limit(SRM_ALPHA, k.size)


@pytest.mark.parametrize(("alpha", "reps", "sessions"), [(0.05, 4000, 1000), (0.001, 20000, 500)])
def test_sequential_srm_keeps_its_level_checked_after_every_session(alpha, reps, sessions):
    """Honest splits checked after every session: P(ever p <= alpha) <= alpha + 4 SE
    (0.064 with 4,000 deployments at 0.05; 0.0019 with 20,000 at 0.001). The fixed test
    read the same way is far above its level, the reason for the sequential one."""
    rng = np.random.default_rng(int(alpha * 1000) + 3)
    withheld = rng.random((reps, sessions)) < 0.1
    p = sequential_srm_p_value(withheld, 0.1, sessions, alpha=alpha)
    assert (p[:, -1] <= alpha).mean() <= _limit(alpha, reps)
    assert np.all(np.diff(p, axis=1) <= 0)  # running: once flagged, stays flagged
    if alpha == 0.05:
        t = np.arange(1, sessions + 1)
        peeked = stats.binom.cdf(np.cumsum(withheld, axis=1), t, 0.1)
        peeked = np.minimum(1, 2 * np.minimum(peeked, 1 - peeked + stats.binom.pmf(
            np.cumsum(withheld, axis=1), t, 0.1)))  # fmt: skip
        assert (peeked <= alpha).any(axis=1).mean() > 3 * alpha


def test_concentration_tracks_the_tuned_sessions():
    assert srm_concentration(5000) > srm_concentration(500) > 1.0


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: srm_p_value(3, 10, 0.0), "explore_rate"),
        (lambda: srm_p_value(3, 10, 1.0), "explore_rate"),
        (lambda: srm_p_value(11, 10, 0.1), "withheld"),
        (lambda: srm_p_value([1, 2], [10, 10, 10], 0.1), "withheld"),
        (lambda: srm_p_value(3, 10.5, 0.1), "sessions"),  # answered NaN
        (lambda: srm_p_value_rates(2.7, [0.5] * 5), "withheld"),  # read as 2
        (lambda: srm_p_value_rates(float("nan"), [0.5] * 5), "withheld"),  # a raw ValueError
        (lambda: srm_p_value(3, np.inf, 0.1), "sessions"),
        (lambda: srm_p_value([3, 1], [np.nan, 4], 0.1), "sessions"),
        (lambda: sequential_srm_p_value(np.array([[0, 2]]), 0.1, 10), "withheld"),
        (lambda: sequential_srm_p_value(np.array([[0, 1]]), 0.1, 0), "tuning_sessions"),
        (lambda: srm_flagged([0.5], alpha=0.0), "srm_alpha"),
    ],
)
def test_invalid_srm_inputs(call, field):
    with pytest.raises(ParameterError, match=field):
        call()
