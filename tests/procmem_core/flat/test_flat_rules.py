"""The alternative flat rules: formulas, one rule at two speeds, exact fate by enumeration.

References are written here in fractions (the baseline rule's ``c + step (y - b)``; the
posterior's ``P(p > 1/2)`` for a ``Beta(1 + s, 1 + f)`` as a binomial tail) and the fate
by enumerating every outcome path, without calling ``flat_fate``.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction as F

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.flat import (
    FLAT_RULES,
    BaselineRule,
    ConfidenceRule,
    PosteriorRule,
    Procedure,
    flat_fate,
    prior_weighted_rate,
)


def test_registry_builds_every_rule_by_name():
    assert {"confidence", "baseline", "posterior"} <= set(FLAT_RULES.names())
    assert FLAT_RULES.build("baseline", step=0.1) == BaselineRule(step=0.1)
    assert FLAT_RULES.build("posterior", prior_sessions=4.0) == PosteriorRule(4.0)
    assert BaselineRule.needs_baseline and not BaselineRule.needs_counts
    assert PosteriorRule.needs_baseline and PosteriorRule.needs_counts


def baseline_step(c: F, good: bool, step: F, b: F) -> F:
    return min(F(1), max(F(0), c + step * ((1 if good else 0) - b)))


def test_baseline_rule_moves_by_outcome_minus_baseline():
    rule = BaselineRule(initial=0.6, step=0.2)
    for c, good, b in [(0.6, True, 0.5), (0.6, False, 0.9), (0.95, True, 0.1), (0.05, False, 0.8)]:
        want = baseline_step(F(c).limit_denominator(100), good, F(1, 5), F(b).limit_denominator(10))
        assert rule.update(c, good, baseline=b) == pytest.approx(float(want), abs=1e-12)
    arr = rule.update(np.array([0.6, 0.6]), np.array([True, False]), baseline=np.array([0.5, 0.9]))
    assert arr.tolist() == [0.7, 0.42]
    assert rule.break_even_rate(0.73) == 0.73 and math.isnan(rule.break_even)
    assert rule.drift(0.6, 0.5) == pytest.approx(0.2 * 0.1)
    assert rule.baseline_estimate(3, 8) == pytest.approx((3 + 2 * 0.6) / 10)
    assert prior_weighted_rate(0, 0, 0.6, 2.0) == pytest.approx(0.6)


def posterior_half(s: int, f: int) -> F:
    """P(p > 1/2) for p ~ Beta(1 + s, 1 + f) = P(Bin(s + f + 1, 1/2) <= s)."""
    n = s + f + 1
    return F(sum(math.comb(n, j) for j in range(s + 1)), 2**n)


def test_posterior_confidence_is_the_probability_of_a_positive_lift():
    rule = PosteriorRule(prior_sessions=2.0)  # Beta(1, 1) at b = 1/2
    for s, f in [(0, 0), (3, 1), (1, 4), (10, 10), (7, 0)]:
        got = rule.update(0.0, True, successes=s, failures=f, baseline=0.5)
        assert got == pytest.approx(float(posterior_half(s, f)), abs=1e-12)
    assert rule.start(0.5) == 0.5
    assert rule.update(0.3, False, successes=2, failures=0, baseline=0.0) == 1.0
    assert rule.update(0.3, False, successes=2, failures=0, baseline=1.0) == 0.0
    grid = rule.update(
        np.zeros((2, 2)),
        True,
        successes=np.array([[3, 1], [0, 10]]),
        failures=np.array([[1, 4], [0, 10]]),
        baseline=np.full((2, 1), 0.5),
    )
    assert grid.tolist() == [
        [float(posterior_half(3, 1)), float(posterior_half(1, 4))],
        [0.5, float(posterior_half(10, 10))],
    ]


def enumerate_fate(p: F, n: int, start: F, move, threshold: F) -> tuple[F, F]:
    """P(excluded within n) and E[sessions applied], over all 2^n outcome paths;
    ``move(c, good, s, f)`` is the rule written here."""
    p_out = applied = F(0)
    for path in itertools.product([True, False], repeat=n):
        w = F(1)
        for good in path:
            w *= p if good else 1 - p
        c, s, f, used, shown = start, 0, 0, 0, start >= threshold
        for good in path:
            if not shown:
                break
            used += 1
            s, f = s + good, f + (not good)
            c = move(c, good, s, f)
            shown = c >= threshold
        p_out += w * (not shown)
        applied += w * used
    return p_out, applied


@pytest.mark.parametrize(("p", "b"), [(F(3, 5), F(1, 2)), (F(4, 5), F(9, 10)), (F(1, 2), F(1, 2))])
def test_baseline_rule_fate_is_exact(p, b):
    rule = BaselineRule(initial=0.7, step=0.2)
    ref = enumerate_fate(
        p, 10, F(7, 10), lambda c, good, s, f: baseline_step(c, good, F(1, 5), b), F(11, 20)
    )
    fate = flat_fate(float(p), 10, rule, 0.55, baseline=float(b))
    assert fate.p_excluded == pytest.approx(float(ref[0]), abs=1e-12)
    assert fate.expected_sessions_applied == pytest.approx(float(ref[1]), abs=1e-12)
    assert fate.break_even == float(b)


@pytest.mark.parametrize("p", [F(1, 2), F(7, 10), F(3, 10)])
def test_posterior_rule_fate_is_exact(p):
    rule = PosteriorRule(prior_sessions=2.0)
    ref = enumerate_fate(p, 11, F(1, 2), lambda c, good, s, f: posterior_half(s, f), F(1, 10))
    fate = flat_fate(float(p), 11, rule, 0.1, baseline=0.5)
    assert fate.p_excluded == pytest.approx(float(ref[0]), abs=1e-12)
    assert fate.expected_sessions_applied == pytest.approx(float(ref[1]), abs=1e-12)


def test_object_api_and_vectorized_update_agree_for_every_rule():
    rules = [ConfidenceRule(), BaselineRule(step=0.3), PosteriorRule(prior_sessions=3.0)]
    rng = np.random.default_rng(0)
    outcomes = rng.random((6, 15)) < 0.6
    for rule in rules:
        procs = [Procedure(f"p{i}", "t", "d", confidence=rule.start(0.55)) for i in range(6)]
        conf = np.full(6, rule.start(0.55))
        succ, fail = np.zeros(6), np.zeros(6)
        for t in range(outcomes.shape[1]):
            y = outcomes[:, t]
            for proc, good in zip(procs, y, strict=True):
                proc.record_outcome(bool(good), rule, baseline=0.55)
            succ, fail = succ + y, fail + ~y
            conf = rule.update(conf, y, successes=succ, failures=fail, baseline=0.55)
            objects = [p.confidence for p in procs]
            np.testing.assert_allclose(objects, conf, rtol=1e-12, atol=1e-15, err_msg=rule.name)


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: ConfidenceRule(reward=1.5), "reward"),
        (lambda: ConfidenceRule(penalty=-0.1), "penalty"),
        (lambda: BaselineRule(step=0.0), "step"),
        (lambda: BaselineRule(step=1.5), "step"),
        (lambda: BaselineRule(baseline_prior=1.0), "baseline_prior"),
        (lambda: BaselineRule(baseline_weight=0.0), "baseline_weight"),
        (lambda: BaselineRule(initial=1.2), "initial"),
        (lambda: PosteriorRule(prior_sessions=0.0), "prior_sessions"),
        (lambda: PosteriorRule(baseline_prior=0.0), "baseline_prior"),
        (lambda: BaselineRule().update(0.6, True), "baseline"),
        (lambda: BaselineRule().update(0.6, True, baseline=1.5), "baseline"),
        (lambda: PosteriorRule().update(0.6, True, baseline=0.5), "successes"),
        (lambda: Procedure("a", "t", "d").record_outcome(True, BaselineRule()), "baseline"),
        (lambda: flat_fate(0.5, 5, BaselineRule()), "baseline"),
        (lambda: flat_fate(0.5, 5, BaselineRule(), baseline=-0.2), "baseline"),
        (lambda: PosteriorRule().with_initial(0.5), "initial"),
        (lambda: FLAT_RULES.build("baseline", reward=0.1), "reward"),
    ],
)
def test_bad_input_names_the_field(call, field):
    with pytest.raises(ParameterError) as info:
        call()
    assert info.value.field == field


def test_a_rejected_outcome_leaves_the_procedure_unchanged():
    proc = Procedure("a", "t", "d")
    with pytest.raises(ParameterError):
        proc.record_outcome(True, BaselineRule())
    assert (proc.successes, proc.failures, proc.confidence) == (0, 0, 0.6)


def test_object_api_loop_with_a_withheld_whole_prompt_estimates_the_baseline():
    """An agent's loop: a withheld session shows no procedure (pack_flat withhold="all");
    its outcome feeds the baseline estimate the relative rule compares against."""
    from procmem_core.flat import pack_flat

    rule = BaselineRule(step=0.2)
    rng = np.random.default_rng(4)
    procs = [Procedure("p", "t", "d", confidence=rule.start())]
    base_s = base_n = 0
    for _ in range(400):
        pack = pack_flat(procs, 0.3, rng, withhold="all")
        if pack.withheld_titles:
            assert pack.shown_titles == () and "LEARNED" not in pack.text
            base_s, base_n = base_s + (rng.random() < 0.9), base_n + 1
        elif pack.shown_titles:
            b = rule.baseline_estimate(base_s, base_n)
            procs[0].record_outcome(bool(rng.random() < 0.95), rule, baseline=b)
    assert abs(rule.baseline_estimate(base_s, base_n) - 0.9) < 0.06
    assert procs[0].successes + procs[0].failures > 0
    with pytest.raises(ParameterError, match="withhold"):
        pack_flat(procs, 0.3, rng, withhold="some")
