"""The gates' one-revision paths (what the store asks after every run) give exactly what
the vectorized rules give: the SPRT rule and LLR at one cell, ``Gate.verdict`` against
``decide``, the reason code at one cell, the combined verdict on names, and statistics
built from the ledger without re-validation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.gates import (
    VERDICT_CODES,
    VERDICT_NAMES,
    CostGate,
    MarginGate,
    RevisionStats,
    SPRTGate,
    combine_gate_verdicts,
    llr,
)

P0 = [0.0, 1e-7, 2e-6, 0.05, 0.15, 0.16, 0.5, 0.85, 0.999999, 1.0, math.nan]
RULES = [
    {"min_drop": 0.15, "alpha": 0.05, "beta": 0.2, "min_runs": 3, "max_runs": 12},
    {"min_drop": 0.3, "alpha": 0.1, "beta": 0.1, "min_runs": 1, "max_runs": 5},
    {"min_drop": 0.05, "alpha": 0.6, "beta": 0.6, "min_runs": 4, "max_runs": 4},  # ln B > ln A
]


@pytest.mark.parametrize("at_cap", llr.AT_CAP_RULES)
@pytest.mark.parametrize("rule", RULES)
def test_the_sprt_rule_at_one_cell_is_the_array_rule(rule, at_cap):
    runs, succ = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    ok = succ <= runs
    runs, succ = runs[ok], succ[ok]
    for p0 in P0:
        vec = llr.sprt_verdict(succ, runs, np.full(runs.shape, p0), at_cap=at_cap, **rule)
        for i in range(runs.size):
            s, n = int(succ[i]), int(runs[i])
            one = llr.sprt_verdict(s, n, p0, at_cap=at_cap, **rule)
            assert isinstance(one, np.int8) and one == vec[i], (s, n, p0)
            assert (
                llr.sprt_verdict(np.int64(s), np.int64(n), np.float64(p0), at_cap=at_cap, **rule)
                == one
            )


def test_the_llr_and_increments_of_one_cell_are_the_array_values():
    for p0, drop in itertools.product(P0, (0.05, 0.15, 0.5)):
        ln_s, ln_f = llr.sprt_increments(p0, drop)
        arr_s, arr_f = llr.sprt_increments(np.array([p0]), drop)
        assert np.float64(ln_s).tobytes() == arr_s[0].tobytes() or (
            ln_s != ln_s and arr_s[0] != arr_s[0]
        )
        assert np.float64(ln_f).tobytes() == arr_f[0].tobytes() or (
            ln_f != ln_f and arr_f[0] != arr_f[0]
        )
        for s, n in ((0, 0), (3, 7), (7, 7), (0, 40)):
            one = llr.sprt_llr(s, n, ln_s, ln_f)
            vec = llr.sprt_llr(np.array([s]), np.array([n]), arr_s, arr_f)[0]
            assert np.float64(one).tobytes() == vec.tobytes() or (one != one and vec != vec)


GATES = [
    SPRTGate(max_runs=10),
    SPRTGate(prior="lower_bound", at_cap="accept", max_runs=8),
    MarginGate(max_runs=10),
]


def _stats_grid():
    for prior_n, prior_s in ((0, 0), (10, 9), (40, 30), (7, 1), (5, 5)):
        for n in range(0, 14):
            for s in range(n + 1):
                outcomes = (True,) * s + (False,) * (n - s)
                yield RevisionStats(prior_n, prior_s), RevisionStats(n, s, (), outcomes)


@pytest.mark.parametrize("gate", GATES, ids=lambda g: g.describe())
def test_verdict_and_the_reason_code_are_decides(gate):
    seen = set()
    for prior, rev in _stats_grid():
        d = gate.decide(prior, rev)
        seen.add(d.reason_code)
        assert gate.verdict(prior, rev) == d.verdict
        p0 = float(gate.estimate_p0(prior.successes, prior.runs))
        code = np.array([VERDICT_CODES[d.verdict]], dtype=np.int8)
        vec = gate.reason_codes(np.array([rev.successes]), np.array([rev.runs]), p0, code)
        assert d.reason_code == vec[0]
    assert {"too_few_runs", "undecided", "revert_boundary", "at_cap"} <= seen


def test_the_cost_gate_verdict_is_its_decision():
    gate = CostGate(min_samples=3)
    for k0, k1, m in itertools.product(range(5), range(5), (1.0, 1.2, 1.3, 3.0)):
        prior = RevisionStats(10, 8, (1.0,) * k0)
        rev = RevisionStats(9, 7, (m,) * k1)
        assert gate.verdict(prior, rev) == gate.decide(prior, rev).verdict
    assert (
        gate.verdict(RevisionStats(9, 7, (1.0,) * 4), RevisionStats(9, 7, (2.0,) * 4)) == "revert"
    )


def test_a_gate_without_a_fast_verdict_answers_through_decide():
    costs = RevisionStats(10, 8, (1.0,) * 8), RevisionStats(9, 7, (2.0,) * 7)
    gate = CostGate()
    assert gate.verdict(*costs) == gate.decide(*costs).verdict == "revert"

    class Always(SPRTGate):  # overrides decide: its verdict must come from it
        def decide(self, prior, revision, p0=None):
            return SPRTGate(min_runs=1, max_runs=1, at_cap="revert").decide(prior, revision)

    assert Always().verdict(RevisionStats(10, 9), RevisionStats(1, 1)) == "revert"
    assert SPRTGate().verdict(RevisionStats(10, 9), RevisionStats(1, 1)) == "continue"


def test_the_combined_verdict_on_names_is_the_array_rule():
    for p, v in itertools.product(VERDICT_NAMES, VERDICT_NAMES):
        codes = combine_gate_verdicts(np.int8(VERDICT_CODES[p]), np.int8(VERDICT_CODES[v]))
        assert combine_gate_verdicts(p, v) == VERDICT_NAMES[int(codes)]
    assert combine_gate_verdicts("accept", "revert") == "revert"
    assert combine_gate_verdicts("accept", "continue") == "accept"
    with pytest.raises(ParameterError, match="cost"):
        combine_gate_verdicts("accept", "maybe")
    with pytest.raises(ParameterError, match="primary"):
        combine_gate_verdicts("later", "continue")


def test_ledger_statistics_equal_validated_ones():
    args = (5, 3, (1.0, 2.5), (True, False, True, True, False), (False, True))
    fast, checked = RevisionStats.of_ledger(*args), RevisionStats(*args)
    assert fast == checked and hash(fast) == hash(checked)
    assert fast.success_rate == checked.success_rate == 0.6
    with pytest.raises(ParameterError, match="successes"):
        RevisionStats(3, 4)  # the public constructor still checks


@pytest.mark.parametrize(("alpha", "beta"), [(0.05, 0.2), (0.1, 0.1), (0.6, 0.6), (1e-9, 0.5)])
def test_the_kept_boundaries_are_walds_for_any_scalar_type(alpha, beta):
    want = (math.log((1.0 - beta) / alpha), math.log(beta / (1.0 - alpha)))
    for a, b in [(alpha, beta), (np.float64(alpha), beta), (alpha, np.float32(beta))]:
        got = llr.sprt_boundaries(a, b)
        exact = (math.log((1.0 - b) / a), math.log(b / (1.0 - a)))
        assert got == exact and all(type(x) is float for x in got)
    assert llr.sprt_boundaries(alpha, beta) == want


@pytest.mark.parametrize("min_drop", [0.0, 0.15, 0.5, 1.0])
def test_the_hypotheses_of_one_float_p0_are_the_arrays_clip(min_drop):
    for p0 in [*P0, -0.0, -1.0, 2.0, 1e-300]:
        p0c, p1 = llr.sprt_hypotheses(p0, min_drop)
        want_c, want_1 = llr.sprt_hypotheses(np.array([p0]), min_drop)
        for got, want in ((p0c, want_c[0]), (p1, want_1[0])):
            assert got == want or (math.isnan(got) and math.isnan(want))


def test_the_boundaries_crossed_at_one_statistic_are_the_array_ones():
    ln_a, ln_b = llr.sprt_boundaries(0.05, 0.2)
    tol = llr.LLR_TOLERANCE
    values = [ln_a, ln_a - tol, ln_a - 2 * tol, ln_b, ln_b + tol, ln_b + 2 * tol, 0.0, -0.0,
              math.inf, -math.inf, math.nan, 1e300]  # fmt: skip
    arrays = llr.sprt_crossed(np.array(values), ln_a, ln_b)
    for i, v in enumerate(values):
        for x in (v, np.float64(v)):
            got = llr.sprt_crossed(x, ln_a, ln_b)
            assert [type(g) for g in got] == [np.bool_, np.bool_]
            assert (bool(got[0]), bool(got[1])) == (bool(arrays[0][i]), bool(arrays[1][i])), v
    assert arrays[0].tolist()[:3] == [True, True, False]  # the tolerance counts
