"""Time-uniform boundaries: confseq's published values, closed forms against independent
root finding, and the empirical-Bernstein and Beta-mixture sequences against loops
written here from the papers' formulas (the reference side never calls the code)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special, stats

from procmem_core.ab.boundaries import (
    NormalMixture,
    TwoPointMixture,
    best_rho,
    beta_concentration,
    beta_mixture_bounds,
    empirical_bernstein_bounds,
)
from procmem_core.errors import ParameterError

Z95 = stats.norm.ppf(0.975)


def test_normal_mixture_reproduces_confseq_unit_test_values():
    # confseq test/uniform_boundaries_unittest.cpp, TestTwoSidedNormalMixture (1e-5 there)
    assert best_rho(100, 0.05) == pytest.approx(12.60056, abs=1e-5)
    mix = NormalMixture(v_opt=100, alpha_opt=0.05)
    assert mix.log_supermartingale(10, 100) == pytest.approx(-0.6510052, abs=1e-6)
    assert mix.bound(100, math.exp(-math.log(20))) == pytest.approx(30.35209, abs=1e-5)


def test_normal_mixture_bound_is_where_the_supermartingale_crosses_1_over_alpha():
    mix = NormalMixture(v_opt=500, alpha_opt=0.05)
    for v in (1.0, 50.0, 500.0, 5e4):
        root = optimize.brentq(lambda s, v=v: mix.log_supermartingale(s, v) - math.log(20), 0, 1e4)
        assert mix.bound(v, 0.05) == pytest.approx(root, rel=1e-9)


def test_width_at_the_tuned_time_against_the_fixed_n_interval():
    # the normal mixture is 1.5486 times the fixed-n z interval at its tuned time (a fact of
    # the boundary, min over rho of sqrt((1 + r)(log(1 + 1/r) + 2 log 20)) / 1.96); the
    # two-point mixture sqrt(2 log 40) / 1.96 = 1.3858
    v = 400.0
    normal = NormalMixture(v, 0.05).bound(v, 0.05) / (Z95 * math.sqrt(v))
    two_point = TwoPointMixture(v, 0.05).bound(v, 0.05) / (Z95 * math.sqrt(v))
    best = optimize.minimize_scalar(
        lambda r: (1 + r) * (math.log1p(1 / r) + 2 * math.log(20)),
        bounds=(1e-3, 10),
        method="bounded",
    )
    assert normal == pytest.approx(1.5486, abs=1e-4)
    assert normal == pytest.approx(math.sqrt(best.fun) / Z95, abs=2e-3)  # rho is near-optimal
    assert two_point == pytest.approx(math.sqrt(2 * math.log(40)) / Z95, rel=1e-6)
    assert two_point == pytest.approx(1.3858, abs=1e-4)


def test_two_point_bound_solves_its_own_supermartingale():
    mix = TwoPointMixture(v_opt=200, alpha_opt=0.05)
    for v in (10.0, 200.0, 3000.0):
        lam = math.sqrt(2 * math.log(40) / 200)
        root = optimize.brentq(
            lambda s, v=v, lam=lam: math.log(math.cosh(lam * s)) - lam * lam * v / 2 - math.log(20),
            0,
            1e3,
        )
        assert mix.bound(v, 0.05) == pytest.approx(root, rel=1e-9)


def test_always_valid_p_value_is_below_alpha_exactly_when_the_bound_was_crossed():
    rng = np.random.default_rng(3)
    s = np.cumsum(rng.normal(0.15, 1.0, size=(200, 300)), axis=1)
    v = np.arange(1, 301, dtype=float)
    for mix in (NormalMixture(300, 0.05), TwoPointMixture(300, 0.05)):
        crossed = np.maximum.accumulate(np.abs(s) >= mix.bound(v, 0.05), axis=1)
        assert np.array_equal(mix.p_value(s, v) <= 0.05, crossed)
        assert crossed[:, -1].any() and not crossed[:, -1].all()


def _eb_reference(z: list[float], alpha: float, tuning: float) -> tuple[float, float]:
    """Waudby-Smith and Ramdas (2024) Theorem 2 written out as a loop."""
    mu_prev, s2_prev, sum_z, sum_dev = 0.5, 0.25, 0.0, 0.0
    lam_sum = lam_z = pen = 0.0
    for t, x in enumerate(z, start=1):
        lam = min(0.5, math.sqrt(2 * math.log(2 / alpha) / (tuning * s2_prev)))
        pen += (x - mu_prev) ** 2 * (-math.log(1 - lam) - lam)
        lam_sum += lam
        lam_z += lam * x
        sum_z += x
        mu = (0.5 + sum_z) / (t + 1)
        sum_dev += (x - mu) ** 2
        mu_prev, s2_prev = mu, (0.25 + sum_dev) / (t + 1)
    centre, margin = lam_z / lam_sum, (math.log(2 / alpha) + pen) / lam_sum
    return max(centre - margin, 0.0), min(centre + margin, 1.0)


def test_empirical_bernstein_matches_the_paper_written_as_a_loop():
    rng = np.random.default_rng(7)
    z = rng.beta(2, 5, size=(3, 60))
    eb = empirical_bernstein_bounds(z, np.ones_like(z, dtype=bool), 0.05, tuning=40)
    for r in range(3):
        for t in (0, 9, 59):
            lo, hi = _eb_reference(list(z[r, : t + 1]), 0.05, 40)
            assert eb.low[r, t] == pytest.approx(lo, abs=1e-12)
            assert eb.high[r, t] == pytest.approx(hi, abs=1e-12)


def test_empirical_bernstein_skips_masked_sessions():
    rng = np.random.default_rng(8)
    z = rng.random((1, 50))
    mask = rng.random((1, 50)) < 0.6
    eb = empirical_bernstein_bounds(z, mask, 0.1, tuning=30)
    lo, hi = _eb_reference(list(z[0][mask[0]]), 0.1, 30)
    assert (eb.low[0, -1], eb.high[0, -1]) == pytest.approx((lo, hi), abs=1e-12)


def test_beta_mixture_bounds_sit_where_the_mixture_reaches_1_over_alpha():
    k, n, c, alpha = (
        np.array([0.0, 3.0, 40.0, 50.0]),
        np.array([10.0, 10.0, 100.0, 50.0]),
        6.0,
        0.025,
    )
    low, high = beta_mixture_bounds(k, n, alpha, c)

    def log_m(kk: float, nn: float, p: float) -> float:  # Robbins' mixture, written out
        marginal = special.betaln(c / 2 + kk, c / 2 + nn - kk) - special.betaln(c / 2, c / 2)
        return marginal - special.xlogy(kk, p) - special.xlogy(nn - kk, 1 - p)

    for i in range(k.size):
        for edge in (low[i], high[i]):
            if 0 < edge < 1:
                assert log_m(k[i], n[i], edge) == pytest.approx(math.log(1 / alpha), abs=1e-8)
        assert low[i] <= k[i] / n[i] <= high[i]
    assert low[0] == 0.0 and high[3] == 1.0  # no failures: the upper end reaches 1


def test_beta_concentration_is_the_normal_mixtures_rho():
    assert beta_concentration(1000, 0.025) == pytest.approx(best_rho(1000, 0.025))
    assert beta_concentration(2, 0.025) == 1.0


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: best_rho(0, 0.05), "v_opt"),
        (lambda: best_rho(100, 1.0), "alpha"),
        (lambda: NormalMixture(100, 0.0), "alpha"),
        (lambda: NormalMixture(100).bound(10, 1.5), "alpha"),
        (lambda: TwoPointMixture(-1.0), "v_opt"),
        (lambda: beta_concentration(0, 0.05), "tuning_sessions"),
    ],
)
def test_invalid_boundary_parameters(call, field):
    with pytest.raises(ParameterError, match=field):
        call()
