"""CUPED regression adjustment: nominal coverage, and narrower exactly as much as the
covariate explains (the width ratio against theory), no narrower when it explains nothing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from procmem_core.ab import RegressionAdjusted, regression_adjustment
from procmem_core.ab.adjustment import cuped_theta

REPS, SESSIONS, EPS, LIFT = 4000, 400, 0.3, 0.1


def _world(seed: int, predictive: bool):
    """Users' base rates Beta(2, 2) scaled to [0, 0.9] (x = the base rate when
    ``predictive``, else an independent draw of the same law), lift 0.1 when shown."""
    rng = np.random.default_rng(seed)
    base = 0.9 * rng.beta(2.0, 2.0, size=(REPS, SESSIONS))
    x = base if predictive else 0.9 * rng.beta(2.0, 2.0, size=base.shape)
    shown = rng.random(base.shape) >= EPS
    y = (rng.random(base.shape) < base + LIFT * shown).astype(float)
    return y, shown, x, np.ones_like(shown), base


@pytest.mark.parametrize("predictive", [True, False])
def test_adjusted_interval_covers_at_its_nominal_level(predictive):
    """4,000 deployments: |coverage - 0.95| <= 4 SE = 0.0138."""
    y, shown, x, mask, _ = _world(1 + predictive, predictive)
    est = RegressionAdjusted().estimate(y, shown, x, mask, 1 - EPS)
    covered = ((est.low <= LIFT) & (est.high >= LIFT)).mean()
    assert abs(covered - 0.95) <= 4 * math.sqrt(0.95 * 0.05 / REPS)
    assert abs(est.tau.mean() - LIFT) <= 4 * est.tau.std(ddof=1) / math.sqrt(REPS)


def test_narrower_by_what_the_covariate_explains():
    """The SE ratio should be about ``sqrt(E[p q] / (E[p q] + Var(base)))`` (theta = 1:
    the base rate's whole variance goes; the Bernoulli noise stays), computed here from
    the Beta(2, 2) law: the mean reduction agrees within 0.01."""
    y, shown, x, mask, _ = _world(3, True)
    adj = regression_adjustment(y, shown, x, mask, 1 - EPS)
    var_b = 0.81 * (2 * 2) / (4**2 * 5)  # Var(0.9 B), B ~ Beta(2, 2): 0.81 * 0.05
    mean_pq = 0.0
    for arm, share in ((0.0, EPS), (LIFT, 1 - EPS)):
        m = 0.45 + arm
        mean_pq += share * (m - (var_b + m * m))  # E[p (1 - p)] = E[p] - E[p^2]
    theory = 1 - math.sqrt(mean_pq / (mean_pq + var_b))
    assert adj.width_reduction.mean() == pytest.approx(theory, abs=0.01)
    reduction = adj.width_reduction
    assert reduction.mean() > 4 * reduction.std(ddof=1) / math.sqrt(REPS)
    assert np.allclose(cuped_theta(y, x, mask).mean(), 1.0, atol=0.02)


def test_a_covariate_that_predicts_nothing_buys_nothing():
    y, shown, x, mask, _ = _world(4, False)
    adj = regression_adjustment(y, shown, x, mask, 1 - EPS)
    assert abs(adj.width_reduction.mean()) < 0.005
    assert np.median(adj.adjusted.se / adj.unadjusted.se) == pytest.approx(1.0, abs=0.005)
