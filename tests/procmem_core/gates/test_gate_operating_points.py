"""Exact operating points of the revision gates: recursion vs enumeration of every path,
vs simulation, vs Wald's approximations and the Wald-Wolfowitz lower bounds."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.gates import (
    ACCEPT,
    CONTINUE,
    REVERT,
    VERDICT_CODES,
    MarginGate,
    RevisionStats,
    SPRTGate,
    bernoulli_kl,
    margin_operating_point,
    sprt_expected_runs_lower_bound,
    sprt_operating_point,
    wald_operating_point,
)

INVALID = [
    (lambda: sprt_operating_point(1.2, 0.8), ParameterError, "p="),
    (lambda: sprt_operating_point(np.array([0.5, -0.1]), 0.8), ParameterError, "p="),
    (lambda: sprt_operating_point(0.5, math.nan), ParameterError, "p0"),
    (lambda: sprt_operating_point(0.5, 0.8, alpha=0.0), ParameterError, "alpha"),
    (lambda: sprt_operating_point(0.5, 0.8, max_runs=2), ParameterError, "max_runs"),
    (lambda: sprt_operating_point(0.5, 0.8, at_cap="toss"), ParameterError, "at_cap"),
    (lambda: margin_operating_point(0.5, 0.8, margin=2.0), ParameterError, "margin"),
    (lambda: wald_operating_point(0.5, 1.5), ParameterError, "p0"),
    (lambda: wald_operating_point(0.5, 0.8, beta=1.0), ParameterError, "beta"),
    (lambda: sprt_expected_runs_lower_bound(0.8, min_drop=0.0), ParameterError, "min_drop"),
    (lambda: sprt_expected_runs_lower_bound(-0.2), ParameterError, "p0"),
    (lambda: sprt_operating_point(0.5, 0.8, prior_runs=-1), ParameterError, "prior_runs"),
    (lambda: sprt_operating_point(0.5, 1.1, prior_runs=10), ParameterError, "p0"),
    (
        lambda: sprt_operating_point(0.5, 0.8, prior_runs=10, prior="oracle"),
        ParameterError,
        "prior",
    ),
]


@pytest.mark.parametrize(("build", "error", "fragment"), INVALID)
def test_invalid_input_is_rejected(build, error, fragment):
    with pytest.raises(error, match=re.escape(fragment)):
        build()


def all_paths(t: int) -> np.ndarray:
    return np.array(list(itertools.product([False, True], repeat=t)), dtype=bool)


def enumerate_operating_point(gate, p: float, p0: float) -> tuple[float, float, float]:
    """P(revert), P(accept), E[runs] summed over all 2^T outcome paths."""
    paths = all_paths(gate.max_runs)
    k = paths.sum(axis=1)
    weight = p**k * (1 - p) ** (gate.max_runs - k)
    batch = gate.decide_batch(paths, p0)
    assert batch.count(CONTINUE) == 0  # the cap forces a decision on every path
    revert = weight[batch.verdict == VERDICT_CODES[REVERT]].sum()
    accept = weight[batch.verdict == VERDICT_CODES[ACCEPT]].sum()
    return revert, accept, float(weight @ batch.runs_used)


@pytest.mark.parametrize("at_cap", ["llr", "accept", "revert"])
@pytest.mark.parametrize("min_runs", [1, 3])
@pytest.mark.parametrize("p0", [0.8, 0.55, 0.1, 1.0])
def test_recursion_matches_enumeration_of_every_path(at_cap, min_runs, p0):
    gate = SPRTGate(max_runs=10, min_runs=min_runs, at_cap=at_cap)
    ps = np.array([0.0, 0.3, 0.6, 0.65, 0.8, 0.95, 1.0])
    exact = sprt_operating_point(
        ps, p0, max_runs=10, min_runs=min_runs, at_cap=at_cap, min_drop=0.15
    )
    for i, p in enumerate(ps):
        revert, accept, runs = enumerate_operating_point(gate, p, p0)
        assert exact.p_revert[i] == pytest.approx(revert, abs=1e-12)
        assert exact.p_accept[i] == pytest.approx(accept, abs=1e-12)
        assert exact.expected_runs[i] == pytest.approx(runs, rel=1e-12)
    np.testing.assert_allclose(exact.p_revert + exact.p_accept, 1.0, atol=1e-12)


def test_recursion_matches_enumeration_through_decide_run_by_run():
    """Independent of the batch code: every path of 8 runs through ``decide``."""
    gate = SPRTGate(max_runs=8, min_runs=2, min_drop=0.2, alpha=0.1, beta=0.1)
    p, p0 = 0.62, 0.75
    revert = accept = runs = 0.0
    for path in all_paths(8):
        s = 0
        for n, ok in enumerate(path, start=1):
            s += int(ok)
            d = gate.decide(RevisionStats(0, 0), RevisionStats(n, s), p0=p0)
            if d.verdict != CONTINUE:
                break
        w = p ** path.sum() * (1 - p) ** (8 - path.sum())
        revert += w * (d.verdict == REVERT)
        accept += w * (d.verdict == ACCEPT)
        runs += w * n
    exact = sprt_operating_point(p, p0, min_drop=0.2, alpha=0.1, beta=0.1, max_runs=8, min_runs=2)
    assert (exact.p_revert, exact.p_accept) == (pytest.approx(revert), pytest.approx(accept))
    assert exact.expected_runs == pytest.approx(runs)
    assert exact.method == "exact" and isinstance(exact.p_revert, float)


def test_margin_recursion_matches_enumeration():
    gate = MarginGate(margin=0.1, min_runs=3, max_runs=10)
    for p in (0.5, 0.7, 0.9):
        revert, accept, runs = enumerate_operating_point(gate, p, 0.8)
        exact = margin_operating_point(p, 0.8, margin=0.1, min_runs=3, max_runs=10)
        assert exact.p_revert == pytest.approx(revert, abs=1e-12)
        assert exact.p_accept == pytest.approx(accept, abs=1e-12)
        assert exact.expected_runs == pytest.approx(runs)


@pytest.mark.parametrize("at_cap", ["llr", "accept", "revert"])
def test_exact_matches_simulation_within_four_standard_errors(at_cap):
    gate = SPRTGate(at_cap=at_cap)  # the seed's defaults, max_runs 50
    rng = np.random.default_rng(np.random.SeedSequence([2026, len(at_cap)]))
    reps = 20_000
    for p in (0.6, 0.7, 0.8):
        exact = sprt_operating_point(p, 0.8, at_cap=at_cap)
        batch = gate.decide_batch(rng.random((reps, 50)) < p, 0.8)
        rate = batch.count(REVERT) / reps
        se = math.sqrt(exact.p_revert * (1 - exact.p_revert) / reps)
        assert abs(rate - exact.p_revert) <= 4 * se, (p, rate, exact.p_revert)
        runs = batch.runs_used.astype(float)
        assert abs(runs.mean() - exact.expected_runs) <= 4 * runs.std(ddof=1) / math.sqrt(reps)
        assert batch.count(CONTINUE) == 0


def test_hand_computed_operating_points_at_p_zero_and_one():
    # p = 1: the LLR falls by ln(0.65/0.8) per run and first reaches ln B at run 8.
    one = sprt_operating_point(1.0, 0.8)
    assert (one.p_accept, one.expected_runs) == (1.0, 8.0)
    # p = 0: it rises by ln(0.35/0.2) per run and first reaches ln A at run 5.
    zero = sprt_operating_point(0.0, 0.8)
    assert (zero.p_revert, zero.expected_runs) == (1.0, 5.0)
    # min_runs beyond the first crossing delays it.
    assert sprt_operating_point(0.0, 0.8, min_runs=7).expected_runs == 7.0


@pytest.mark.parametrize("p0", [0.0, 1e-9, 0.1, 0.15, 0.999999, 1.0])
def test_operating_point_at_the_boundaries_of_validity(p0):
    ps = np.linspace(0.0, 1.0, 11)
    for fn in (sprt_operating_point, wald_operating_point):
        op = fn(ps, p0)
        for field in (op.p_revert, op.p_accept, op.expected_runs):
            assert np.isfinite(field).all()
        np.testing.assert_allclose(op.p_revert + op.p_accept, 1.0, atol=1e-9)
    assert all(math.isfinite(x) and x > 0 for x in sprt_expected_runs_lower_bound(p0))


def test_vectorized_p_equals_scalar_calls():
    ps = np.array([0.2, 0.5, 0.77])
    vec = sprt_operating_point(ps, 0.8, at_cap="revert")
    for i, p in enumerate(ps):
        one = sprt_operating_point(float(p), 0.8, at_cap="revert")
        assert one.p_revert == pytest.approx(vec.p_revert[i], rel=1e-12, abs=1e-15)
        assert one.expected_runs == pytest.approx(vec.expected_runs[i], rel=1e-12)


def test_wald_oc_hits_the_nominal_error_rates_at_p0_and_p1():
    # L(p0) = 1 - alpha and L(p1) = beta hold exactly for Wald's formula (h = 1, h = -1).
    w = wald_operating_point(np.array([0.8, 0.65]), 0.8, min_drop=0.15, alpha=0.05, beta=0.20)
    np.testing.assert_allclose(w.p_revert, [0.05, 0.80], atol=1e-9)
    assert w.method == "wald"


def test_wald_is_continuous_through_the_zero_drift_point():
    ln_s, ln_f = math.log(0.65 / 0.8), math.log(0.35 / 0.2)
    p_star = ln_f / (ln_f - ln_s)  # E_p[z] = 0
    mid, lo, hi = (wald_operating_point(x, 0.8) for x in (p_star, p_star - 1e-6, p_star + 1e-6))
    ln_a, ln_b = SPRTGate().boundaries
    assert mid.p_accept == pytest.approx(ln_a / (ln_a - ln_b), rel=1e-9)
    for side in (lo, hi):
        assert side.p_accept == pytest.approx(mid.p_accept, abs=1e-5)
        assert side.expected_runs == pytest.approx(mid.expected_runs, rel=1e-4)


def test_wald_is_close_to_exact_when_truncation_is_far():
    """Loose by design: Wald ignores the overshoot past the boundaries, which with
    Bernoulli steps of 0.2 to 0.56 against ln A = 2.77 makes the exact test stop later
    (up to ~15 % more runs here) and err less. Tolerances: 0.04 in probability, 20 % in
    expected runs."""
    ps = np.linspace(0.4, 0.95, 12)
    exact = sprt_operating_point(ps, 0.8, max_runs=1500, min_runs=1)
    wald = wald_operating_point(ps, 0.8)
    np.testing.assert_allclose(exact.p_revert, wald.p_revert, atol=0.04)
    np.testing.assert_allclose(exact.expected_runs, wald.expected_runs, rtol=0.20)
    # the untruncated exact test does at least as well as its nominal error rates
    at = sprt_operating_point(np.array([0.8, 0.65]), 0.8, max_runs=1500, min_runs=1)
    assert at.p_revert[0] <= 0.05 and at.p_accept[1] <= 0.20


@pytest.mark.parametrize(("p0", "min_drop"), [(0.8, 0.15), (0.6, 0.1), (0.95, 0.3)])
def test_lower_bounds_do_not_exceed_exact_expected_runs(p0, min_drop):
    low0, low1 = sprt_expected_runs_lower_bound(p0, min_drop=min_drop)
    exact = sprt_operating_point(
        np.array([p0, p0 - min_drop]), p0, min_drop=min_drop, max_runs=1500, min_runs=1
    )
    assert low0 <= exact.expected_runs[0]
    assert low1 <= exact.expected_runs[1]
    # and they are not vacuous: the SPRT is within a factor of two of them
    assert exact.expected_runs[0] <= 2 * low0 and exact.expected_runs[1] <= 2 * low1


def test_lower_bound_formula_by_hand():
    a, b, p0, p1 = 0.05, 0.2, 0.8, 0.65
    k01 = p0 * math.log(p0 / p1) + (1 - p0) * math.log((1 - p0) / (1 - p1))
    k10 = p1 * math.log(p1 / p0) + (1 - p1) * math.log((1 - p1) / (1 - p0))
    assert bernoulli_kl(p0, p1) == pytest.approx(k01)
    low0, low1 = sprt_expected_runs_lower_bound(p0, min_drop=0.15, alpha=a, beta=b)
    assert low0 == pytest.approx(
        ((1 - a) * math.log((1 - a) / b) + a * math.log(a / (1 - b))) / k01
    )
    assert low1 == pytest.approx(
        ((1 - b) * math.log((1 - b) / a) + b * math.log(b / (1 - a))) / k10
    )


@pytest.mark.parametrize("prior", ["plugin", "lower_bound"])
def test_estimated_p0_mixture_matches_simulated_prior_ledgers(prior):
    """Each replication draws its own prior ledger of 20 runs, estimates p0 from it and
    runs the SPRT with that per-row p0 (the vectorized path with one p0 per row)."""
    gate = SPRTGate(prior=prior)
    rng = np.random.default_rng(np.random.SeedSequence([7, len(prior)]))
    reps = 20_000
    for p in (0.65, 0.8):
        exact = sprt_operating_point(p, 0.8, prior_runs=20, prior=prior)
        p0_hat = gate.estimate_p0(rng.binomial(20, 0.8, size=reps), 20)
        batch = gate.decide_batch(rng.random((reps, 50)) < p, p0_hat)
        rate = batch.count(REVERT) / reps
        se = math.sqrt(exact.p_revert * (1 - exact.p_revert) / reps)
        assert abs(rate - exact.p_revert) <= 4 * se, (p, rate, exact.p_revert)
        runs = batch.runs_used.astype(float)
        assert abs(runs.mean() - exact.expected_runs) <= 4 * runs.std(ddof=1) / math.sqrt(reps)


def test_estimated_p0_mixture_reduces_to_the_known_p0_case():
    # no prior runs: the plug-in estimate is 1/2 whatever prior_p is
    ps = np.array([0.3, 0.5, 0.9])
    empty = sprt_operating_point(ps, 0.8, prior_runs=0)
    known = sprt_operating_point(ps, 0.5)
    np.testing.assert_allclose(empty.p_revert, known.p_revert, rtol=1e-12)
    np.testing.assert_allclose(empty.expected_runs, known.expected_runs, rtol=1e-12)
    # a certain prior (prior_p = 1): every ledger is all successes
    sure = sprt_operating_point(0.7, 1.0, prior_runs=30)
    assert sure.p_revert == pytest.approx(sprt_operating_point(0.7, 31 / 32).p_revert)


def test_the_documented_figures_round_to_the_exact_values():
    """docs/gates.md's tables: the plug-in false revert at prior_p 0.8 with 20 and 50 prior
    runs is 0.13749 and 0.11149 (the docs said 0.138 and 0.112, a second rounding of
    0.1375 and 0.1115), and the margin gate (0.05, min_runs 5) at p 0.6 reverts 0.99747
    (the docs said 0.998). Checked against a sum over the ledger's counts written here."""
    from scipy import stats

    gate = SPRTGate()
    for runs, documented in ((10, 0.137), (20, 0.137), (50, 0.111), (200, 0.104)):
        k = np.arange(runs + 1)
        by_count = [gate.operating_point(0.8, (j + 1) / (runs + 2)).p_revert for j in k]
        mixed = float(np.sum(stats.binom.pmf(k, runs, 0.8) * np.array(by_count)))
        assert gate.operating_point(0.8, 0.8, runs).p_revert == pytest.approx(mixed, abs=1e-12)
        assert round(mixed, 3) == documented
    margin = MarginGate(margin=0.05, min_runs=5, max_runs=50).operating_point(0.6, 0.8)
    assert round(float(margin.p_revert), 3) == 0.997
