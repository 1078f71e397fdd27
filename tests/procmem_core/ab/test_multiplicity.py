"""Holm and Benjamini-Hochberg: hand-computed adjustments, and their error rates on tables of
20 procedures whose p-values come from simulated A/B arms read by the engine's estimator."""

from __future__ import annotations

import math

import numpy as np
import pytest

from procmem_core.ab import DifferenceInMeans
from procmem_core.ab.multiplicity import benjamini_hochberg, holm
from procmem_core.errors import ParameterError

PROCEDURES = 20


def test_hand_computed_adjustments():
    p = np.array([0.01, 0.04, 0.03, 0.005])
    # Holm: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1, running max
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: 4 p / rank = 0.02, 0.02, 0.04, 0.04, running min from the top
    assert benjamini_hochberg(p) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    with_gap = np.array([[0.01, np.nan, 0.04], [0.5, 0.2, np.nan]])
    h, b = holm(with_gap), benjamini_hochberg(with_gap)
    assert h[0, 0] == pytest.approx(0.02) and h[0, 2] == pytest.approx(0.04)
    assert b[1, 1] == pytest.approx(0.4) and b[1, 0] == pytest.approx(0.5)
    assert np.isnan(h[0, 1]) and np.isnan(b[1, 2])
    assert holm([0.7]) == pytest.approx([0.7]) and holm([[0.9, 0.8]]).shape == (1, 2)


def _p_values(deployments: int, lifts: np.ndarray, seed: int) -> np.ndarray:
    """``(deployments, procedures)`` Newcombe p-values: 300 sessions per procedure at
    explore rate 0.2, base rate 0.5, each procedure's own lift."""
    rng = np.random.default_rng(seed)
    rows, sessions = deployments * lifts.size, 300
    shown = rng.random((rows, sessions)) >= 0.2
    lift = np.tile(lifts, deployments)[:, None]
    y = (rng.random((rows, sessions)) < 0.5 + lift * shown).astype(float)
    est = DifferenceInMeans().estimate(y, shown, np.zeros_like(y), np.ones_like(shown), 0.8)
    return est.p.reshape(deployments, lifts.size)


def _limit(rate: float, reps: int) -> float:
    return rate + 4 * math.sqrt(rate * (1 - rate) / reps)


def test_all_null_table_of_twenty_procedures():
    """2,000 deployments of 20 procedures with no effect: family-wise error of Holm and
    false discovery rate of BH (= FWER when every null is true) <= 0.05 + 4 SE = 0.0695;
    unadjusted, some "effect" is found in most deployments."""
    reps = 2000
    p = _p_values(reps, np.zeros(PROCEDURES), seed=1)
    assert ((p < 0.05).any(axis=1)).mean() > 0.5
    assert ((holm(p) < 0.05).any(axis=1)).mean() <= _limit(0.05, reps)
    assert ((benjamini_hochberg(p) < 0.05).any(axis=1)).mean() <= _limit(0.05, reps)


def test_false_discovery_rate_with_five_real_effects():
    """2,000 deployments, 5 of 20 procedures lift by 0.25: BH's mean false-discovery
    proportion <= 0.05 + 4 SE of its own spread, and it finds more than Holm."""
    reps = 2000
    lifts = np.r_[np.full(5, 0.25), np.zeros(15)]
    p = _p_values(reps, lifts, seed=2)
    null = lifts == 0
    found_bh, found_holm = benjamini_hochberg(p) < 0.05, holm(p) < 0.05
    fdp = (found_bh & null).sum(axis=1) / np.maximum(found_bh.sum(axis=1), 1)
    assert fdp.mean() <= 0.05 + 4 * fdp.std(ddof=1) / math.sqrt(reps)
    assert ((found_holm & null).any(axis=1)).mean() <= _limit(0.05, reps)
    assert found_bh[:, ~null].mean() > found_holm[:, ~null].mean()


def test_invalid_p_values():
    with pytest.raises(ParameterError, match="p="):
        holm([0.2, 1.5])
    with pytest.raises(ParameterError, match="p="):
        benjamini_hochberg([-0.1])
