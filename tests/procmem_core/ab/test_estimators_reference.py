"""The lift estimators against their textbook formulas on small unbalanced examples.

The references are written out here (docs/statistics.md, "Explore rate: withheld vs
shown"), in ``fractions.Fraction`` where the formula is rational:

- difference in means: ``p1 - p0``, SE ``sqrt(p1 q1 / n1 + p0 q0 / n0)``, Newcombe's
  hybrid interval from the two Wilson intervals (Newcombe 1998, method 10);
- Hajek IPW with a constant propensity ``e``: the point estimate is the difference in
  means, and its linearization SE with the HC1 factor ``n_a / (n_a - 1)`` is
  ``sqrt(s1^2 / n1 + s0^2 / n0)`` with ``s_a^2`` each arm's sample variance (divisor
  ``n_a - 1``): the ``1/m_a`` normalisation (``m_a`` the arm's mean weight) is what makes
  it so, whatever ``e``;
- Horvitz-Thompson: ``mean(psi)`` with ``psi = (A / e - (1 - A) / (1 - e)) y``, SE
  ``sd(psi) / sqrt(n)``;
- AIPW: a least-squares line per arm (``numpy.polyfit``), ``psi = m1(x) - m0(x) + k1 A (y
  - m1(x)) / e - k0 (1 - A) (y - m0(x)) / (1 - e)`` with ``k_a = sqrt(n_a / (n_a - 2))``,
  ``tau = mean(psi)``, SE ``sd(psi) / sqrt(n)``.

The examples are unbalanced (n1 = 6, n0 = 4 at e = 0.7, so ``n1 / n != e``): there the
four estimators' SEs all differ, and a wrong normalisation shows.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest

from procmem_core.ab.estimators import (
    AugmentedIPW,
    DifferenceInMeans,
    HajekIPW,
    HorvitzThompsonIPW,
)
from simulators.feedback import Feedback
from simulators.scenarios.explore import ExploreScenario
from simulators.users import UserPopulation

Z95 = 1.959963984540054  # the two-sided 95 % normal quantile

# n1 = 6 shown sessions, n0 = 4 withheld ones; x is the user's base rate
Y_SHOWN = [1, 1, 0, 1, 1, 0]
Y_WITHHELD = [1, 0, 0, 0]
X_SHOWN = [0.2, 0.5, 0.3, 0.8, 0.6, 0.4]
X_WITHHELD = [0.7, 0.2, 0.5, 0.3]


def example(extra_masked: bool = False):
    """One replication (row) of the example; optionally with two sessions whose signal
    never arrived (masked out), which must change nothing."""
    y = Y_SHOWN + Y_WITHHELD
    x = X_SHOWN + X_WITHHELD
    shown = [True] * 6 + [False] * 4
    mask = [True] * 10
    if extra_masked:
        y, x, shown, mask = [*y, 1, 0], [*x, 0.9, 0.1], [*shown, True, False], mask + [False] * 2
    return (
        np.array([y], dtype=float),
        np.array([shown]),
        np.array([x], dtype=float),
        np.array([mask]),
    )


def sample_variance(v: list[int]) -> F:
    m = F(sum(v), len(v))
    return sum((F(a) - m) ** 2 for a in v) / (len(v) - 1)


def wilson(k: int, n: int, z: float) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize("masked", [False, True])
def test_difference_in_means_and_newcombe_interval(masked):
    est = DifferenceInMeans().estimate(*example(masked), 0.7)
    p1, p0 = F(4, 6), F(1, 4)
    assert est.tau[0] == pytest.approx(float(p1 - p0), rel=1e-12)
    se = math.sqrt(p1 * (1 - p1) / 6 + p0 * (1 - p0) / 4)
    assert est.se[0] == pytest.approx(se, rel=1e-12)
    l1, u1 = wilson(4, 6, Z95)
    l0, u0 = wilson(1, 4, Z95)
    tau = float(p1 - p0)
    low = tau - math.sqrt((float(p1) - l1) ** 2 + (u0 - float(p0)) ** 2)
    high = tau + math.sqrt((u1 - float(p1)) ** 2 + (float(p0) - l0) ** 2)
    assert (est.low[0], est.high[0]) == (
        pytest.approx(low, rel=1e-9),
        pytest.approx(high, rel=1e-9),
    )


@pytest.mark.parametrize("masked", [False, True])
def test_hajek_se_is_the_two_sample_formula(masked):
    """n1 = 6, n0 = 4, e = 0.7: SE = sqrt(s1^2 / 6 + s0^2 / 4) = sqrt(4/90 + 1/16)."""
    est = HajekIPW().estimate(*example(masked), 0.7)
    s1, s0 = sample_variance(Y_SHOWN), sample_variance(Y_WITHHELD)
    assert (s1, s0) == (F(4, 15), F(1, 4))
    assert est.tau[0] == pytest.approx(float(F(4, 6) - F(1, 4)), rel=1e-12)
    assert est.se[0] == pytest.approx(math.sqrt(s1 / 6 + s0 / 4), rel=1e-12)
    half = Z95 * math.sqrt(s1 / 6 + s0 / 4)
    assert est.high[0] - est.low[0] == pytest.approx(2 * half, rel=1e-9)


@pytest.mark.parametrize("e", [0.3, 0.7, 0.9])
def test_hajek_se_does_not_depend_on_the_propensity(e):
    """With a constant propensity the weights cancel arm by arm: the same SE at every e."""
    est = HajekIPW().estimate(*example(), e)
    s1, s0 = sample_variance(Y_SHOWN), sample_variance(Y_WITHHELD)
    assert est.se[0] == pytest.approx(math.sqrt(s1 / 6 + s0 / 4), rel=1e-12)


@pytest.mark.parametrize("masked", [False, True])
def test_horvitz_thompson_is_the_mean_of_the_weighted_outcomes(masked):
    e = F(7, 10)
    psi = [F(y) / e for y in Y_SHOWN] + [-F(y) / (1 - e) for y in Y_WITHHELD]
    tau = sum(psi) / len(psi)
    var = sum((v - tau) ** 2 for v in psi) / (len(psi) - 1)
    est = HorvitzThompsonIPW().estimate(*example(masked), 0.7)
    assert est.tau[0] == pytest.approx(float(tau), rel=1e-12)  # 4/0.7/10 - 1/0.3/10
    assert est.se[0] == pytest.approx(math.sqrt(var / len(psi)), rel=1e-12)


@pytest.mark.parametrize("masked", [False, True])
def test_aipw_is_the_augmented_mean_with_per_arm_lines(masked):
    e = 0.7
    b1, a1 = np.polyfit(X_SHOWN, Y_SHOWN, 1)
    b0, a0 = np.polyfit(X_WITHHELD, Y_WITHHELD, 1)
    k1, k0 = math.sqrt(6 / 4), math.sqrt(4 / 2)
    psi = []
    for arm, ys, xs in ((1, Y_SHOWN, X_SHOWN), (0, Y_WITHHELD, X_WITHHELD)):
        for y, x in zip(ys, xs, strict=True):
            m1, m0 = a1 + b1 * x, a0 + b0 * x
            resid = k1 * (y - m1) / e if arm else -k0 * (y - m0) / (1 - e)
            psi.append(m1 - m0 + resid)
    tau = sum(psi) / 10
    se = math.sqrt(sum((v - tau) ** 2 for v in psi) / 9 / 10)
    est = AugmentedIPW().estimate(*example(masked), e)
    assert est.tau[0] == pytest.approx(tau, rel=1e-9)
    assert est.se[0] == pytest.approx(se, rel=1e-9)
    assert est.high[0] - est.tau[0] == pytest.approx(Z95 * se, rel=1e-9)


def test_the_four_standard_errors_differ_on_the_unbalanced_example():
    """On a balanced example at e = 0.5 Hajek, HT and DiM coincide; here none may."""
    ses = [
        cls().estimate(*example(), 0.7).se[0]
        for cls in (DifferenceInMeans, HajekIPW, HorvitzThompsonIPW, AugmentedIPW)
    ]
    assert min(abs(a - b) for i, a in enumerate(ses) for b in ses[i + 1 :]) > 0.01


@pytest.mark.parametrize(("fn", "fp"), [(0.2, 0.2), (0.3, 0.1)])
def test_a_noisy_judge_biases_the_lift_by_minus_fn_plus_fp_times_the_lift(fn, fp):
    """Label flips: ``E[signal | shown] - E[signal | withheld] = (1 - fn - fp) lift``, so the
    difference in means' bias is ``-(fn + fp) lift`` (here -0.08 at lift 0.2), whether the
    judge is symmetric or biased. 4,000 replications of 400 sessions at explore rate 0.5
    give a bias SE of about 0.0008, so a 5 % error in the bias (0.004) is about 5 SE and
    fails the 4 SE check."""
    pop = UserPopulation(base_rate=0.5, heterogeneity=0.0, helpful_share=1.0,
                         harmful_share=0.0, helpful_effect=0.2)  # fmt: skip
    sc = ExploreScenario(
        population=pop,
        feedback=Feedback.of(false_negative=fn, false_positive=fp),
        explore_rate=0.5,
        sessions=400,
        users=10,
        replications=4000,
    )
    m = sc.run(23).metrics
    expected = -(fn + fp) * m["true_lift"]
    assert m["true_lift"] == pytest.approx(0.2)
    assert abs(m["dim_bias"] - expected) <= 4 * m["dim_bias_se"], (m["dim_bias"], expected)
    assert 0.05 * abs(expected) > 4.5 * m["dim_bias_se"]  # the claim in the docstring
