"""Revision gates: validation, the SPRT's cap rules and p0 edge cases, margin and cost
gates (``decide_batch`` against ``decide``: test_gate_batch.py)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import stats

from procmem_core.errors import ParameterError
from procmem_core.gates import (
    ACCEPT,
    CONTINUE,
    CONTINUE_CODE,
    REVERT,
    REVERT_CODE,
    VERDICT_CODES,
    VERDICT_NAMES,
    BatchDecision,
    CostGate,
    GateDecision,
    MarginGate,
    RevisionStats,
    SPRTGate,
    make_gate,
)

PRIOR = RevisionStats(runs=20, successes=16)


def llr_by_hand(s: int, n: int, p0: float, p1: float) -> float:
    return s * math.log(p1 / p0) + (n - s) * math.log((1 - p1) / (1 - p0))


# --- validation ---------------------------------------------------------------------

INVALID = [
    (lambda: SPRTGate(alpha=0.0), ParameterError, "alpha"),
    (lambda: SPRTGate(alpha=1.0), ParameterError, "alpha"),
    (lambda: SPRTGate(beta=-0.1), ParameterError, "beta"),
    (lambda: SPRTGate(alpha=0.5, beta=0.5), ParameterError, "alpha + beta < 1"),
    (lambda: SPRTGate(min_drop=0.0), ParameterError, "min_drop"),
    (lambda: SPRTGate(min_drop=1.0), ParameterError, "min_drop"),
    (lambda: SPRTGate(min_drop="big"), ParameterError, "min_drop"),
    (lambda: SPRTGate(min_runs=0), ParameterError, "min_runs"),
    (lambda: SPRTGate(min_runs=2.5), ParameterError, "min_runs"),
    (lambda: SPRTGate(min_runs=10, max_runs=5), ParameterError, "max_runs"),
    (lambda: SPRTGate(at_cap="coin"), ParameterError, "at_cap"),
    (lambda: SPRTGate(prior="bayes"), ParameterError, "prior"),
    (lambda: MarginGate(margin=1.0), ParameterError, "margin"),
    (lambda: MarginGate(margin=-0.01), ParameterError, "margin"),
    (lambda: MarginGate(min_runs=0), ParameterError, "min_runs"),
    (lambda: MarginGate(min_runs=6, max_runs=5), ParameterError, "max_runs"),
    (lambda: CostGate(tolerance=-0.1), ParameterError, "tolerance"),
    (lambda: CostGate(tolerance=math.inf), ParameterError, "tolerance"),
    (lambda: CostGate(tolerance="x"), ParameterError, "tolerance"),
    (lambda: CostGate(min_samples=0), ParameterError, "min_samples"),
    (lambda: RevisionStats(runs=-1, successes=0), ParameterError, "runs"),
    (lambda: RevisionStats(runs=3, successes=4), ParameterError, "successes"),
    (lambda: RevisionStats(runs=3, successes=True), ParameterError, "successes"),
    (lambda: RevisionStats(3, 2, (1.0, 2.0, 3.0)), ParameterError, "at most one cost"),
    (lambda: RevisionStats(3, 2, (1.0, -2.0)), ParameterError, "success_costs"),
    (lambda: RevisionStats(3, 2, (math.nan,)), ParameterError, "success_costs"),
    (lambda: RevisionStats(3, 2, ("a",)), ParameterError, "success_costs"),
    (lambda: RevisionStats(2, 1, outcomes=(2, 0)), ParameterError, "outcomes=2"),
    (lambda: RevisionStats(2, 1, outcomes=(True, math.nan)), ParameterError, "outcomes=nan"),
    (lambda: RevisionStats(2, 1, outcomes=("yes", False)), ParameterError, "outcomes='yes'"),
    (lambda: RevisionStats(4, 3, concurrent=(0.5,)), ParameterError, "concurrent=0.5"),
    (lambda: RevisionStats(4, 3, concurrent=5), ParameterError, "concurrent=5"),
    (
        lambda: GateDecision(
            verdict="maybe",
            reason_code="undecided",
            reason="",
            runs_used=0,
            statistic=0.0,
            gate="sprt",
        ),
        ParameterError,
        "verdict",
    ),
    (
        lambda: GateDecision(
            verdict="accept",
            reason_code="hunch",
            reason="",
            runs_used=0,
            statistic=0.0,
            gate="sprt",
        ),
        ParameterError,
        "reason_code",
    ),
    (lambda: make_gate("bandit"), ParameterError, "gate"),
    (lambda: make_gate("sprt", margin=0.1), ParameterError, "margin"),
    (lambda: make_gate("cost", alpha=0.1), ParameterError, "not a parameter of the cost"),
    (lambda: SPRTGate().decide(PRIOR, RevisionStats(5, 3), p0=1.5), ParameterError, "p0"),
    (lambda: MarginGate().decide(PRIOR, RevisionStats(5, 3), p0=-1), ParameterError, "p0"),
    (lambda: CostGate().decide(PRIOR, RevisionStats(5, 3), p0=2.0), ParameterError, "p0"),
    # a string p0 was converted by these (the cost gate refused it): one check for all
    (lambda: SPRTGate().decide(PRIOR, RevisionStats(5, 3), p0="0.8"), ParameterError, "p0='0.8'"),
    (lambda: MarginGate().decide(PRIOR, RevisionStats(5, 3), p0="0.8"), ParameterError, "p0='0.8'"),
    (
        lambda: make_gate("discordant_sprt").decide(
            RevisionStats(2, 1, concurrent=(True,)), RevisionStats(1, 1, outcomes=(True,)), p0="0.8"
        ),
        ParameterError,
        "p0='0.8'",
    ),
    (
        lambda: SPRTGate().decide_batch(np.zeros((3, 4), dtype=np.int8), 0.8),
        ParameterError,
        "outcomes",
    ),
    (
        lambda: SPRTGate().decide_batch(np.zeros(4, dtype=bool), 0.8),
        ParameterError,
        "outcomes",
    ),
    (
        lambda: SPRTGate().decide_batch(np.zeros((3, 4), dtype=bool), np.full(2, 0.8)),
        ParameterError,
        "p0",
    ),
    (
        lambda: MarginGate().decide_batch(np.zeros((3, 4), dtype=bool), np.nan),
        ParameterError,
        "p0",
    ),
    (
        lambda: SPRTGate().decide_batch(np.zeros((3, 4), dtype=bool), 1.2),
        ParameterError,
        "p0",
    ),
    (
        lambda: BatchDecision(np.zeros(1, np.int8), np.zeros(1), np.zeros(1)).count("x"),
        ParameterError,
        "verdict",
    ),
]


@pytest.mark.parametrize(("build", "error", "fragment"), INVALID)
def test_invalid_input_is_rejected_with_its_field(build, error, fragment):
    with pytest.raises(error, match=re.escape(fragment)):
        build()


def test_verdict_codes_are_the_documented_contract():
    assert VERDICT_CODES == {CONTINUE: 0, ACCEPT: 1, REVERT: 2}
    assert [VERDICT_NAMES[c] for c in (0, 1, 2)] == [CONTINUE, ACCEPT, REVERT]
    batch = BatchDecision(np.array([0, 2, 2, 1], np.int8), np.zeros(4), np.zeros(4))
    assert (batch.count(REVERT), batch.count(ACCEPT), batch.count(CONTINUE)) == (2, 1, 1)
    assert list(batch.names()) == [CONTINUE, REVERT, REVERT, ACCEPT]


def test_seed_defaults_and_factory():
    g = make_gate("sprt")
    assert (g.min_drop, g.alpha, g.beta, g.max_runs, g.min_runs) == (0.15, 0.05, 0.20, 50, 3)
    assert (g.at_cap, g.prior, g.name) == ("llr", "plugin", "sprt")
    m = make_gate("margin")
    assert (m.margin, m.min_runs, m.max_runs, m.name) == (0.05, 5, 50, "margin")
    c = make_gate("cost", tolerance=0.5)
    assert (c.tolerance, c.min_samples, c.name) == (0.5, 5, "cost")
    assert make_gate("sprt", at_cap="revert").at_cap == "revert"
    ln_a, ln_b = g.boundaries
    assert ln_a == pytest.approx(math.log(0.8 / 0.05))
    assert ln_b == pytest.approx(math.log(0.2 / 0.95))


# --- SPRT: p0 estimates ---------------------------------------------------------------


def test_plugin_p0_is_laplace_smoothed():
    g = SPRTGate()
    assert float(g.estimate_p0(16, 20)) == pytest.approx(17 / 22)
    assert float(g.estimate_p0(0, 0)) == 0.5
    assert float(g.estimate_p0(7, 7)) == pytest.approx(8 / 9)


@pytest.mark.parametrize(("s", "n"), [(16, 20), (1, 5), (30, 30), (40, 100)])
def test_lower_bound_p0_is_clopper_pearson(s, n):
    g = SPRTGate(prior="lower_bound", alpha=0.1)
    lb = float(g.estimate_p0(s, n))
    # Clopper-Pearson: at the bound, P(X >= s) equals the level exactly.
    assert stats.binom.sf(s - 1, n, lb) == pytest.approx(0.1, abs=1e-9)
    assert lb < s / n


def test_lower_bound_p0_with_no_successes_is_zero_and_explained():
    g = SPRTGate(prior="lower_bound")
    assert float(g.estimate_p0(0, 10)) == 0.0
    d = g.decide(RevisionStats(10, 0), RevisionStats(5, 0))
    assert "clipped" in d.reason and math.isfinite(d.statistic)


# --- SPRT: the per-run rule and the cap ---------------------------------------------------

P0, P1 = 0.8, 0.65  # min_drop 0.15


@pytest.mark.parametrize(
    ("s", "n", "expected"),
    [
        (0, 2, CONTINUE),  # LLR 1.12 but fewer than min_runs runs
        (0, 5, REVERT),  # 5 failures: 2.798 >= ln A = 2.773
        (1, 5, CONTINUE),
        (8, 8, ACCEPT),  # 8 successes: -1.661 <= ln B = -1.558
        (7, 7, CONTINUE),
    ],
)
def test_sprt_decides_at_wald_boundaries(s, n, expected):
    d = SPRTGate().decide(PRIOR, RevisionStats(n, s), p0=P0)
    assert d.verdict == expected
    assert d.statistic == pytest.approx(llr_by_hand(s, n, P0, P1), abs=1e-12)
    assert (d.runs_used, d.gate) == (n, "sprt")
    assert f"{s}/{n}" in d.reason


# At the cap (max_runs=4) the LLR is strictly between ln B and ln A for every s.
CAP_CASES = [
    # (successes of 4, LLR by hand, verdict for accept / revert / llr)
    (0, 4 * math.log(0.35 / 0.2), (ACCEPT, REVERT, REVERT)),  # 2.238
    (2, 2 * math.log(0.65 / 0.8) + 2 * math.log(0.35 / 0.2), (ACCEPT, REVERT, REVERT)),  # 0.704
    (3, 3 * math.log(0.65 / 0.8) + math.log(0.35 / 0.2), (ACCEPT, REVERT, ACCEPT)),  # -0.063
    (4, 4 * math.log(0.65 / 0.8), (ACCEPT, REVERT, ACCEPT)),  # -0.831
]


@pytest.mark.parametrize(("s", "llr", "expected"), CAP_CASES)
def test_three_cap_rules_on_hand_computed_examples(s, llr, expected):
    ln_a, ln_b = SPRTGate().boundaries
    assert ln_b < llr < ln_a
    for at_cap, verdict in zip(("accept", "revert", "llr"), expected, strict=True):
        g = SPRTGate(max_runs=4, min_runs=1, at_cap=at_cap)
        d = g.decide(PRIOR, RevisionStats(4, s), p0=P0)
        assert (d.verdict, d.statistic) == (verdict, pytest.approx(llr, abs=1e-12))
        assert "max_runs=4" in d.reason
        # one run earlier the same test is still open
        before = g.decide(PRIOR, RevisionStats(3, min(s, 3)), p0=P0)
        assert before.verdict == CONTINUE


def test_runs_past_the_cap_still_get_a_verdict():
    g = SPRTGate(max_runs=4, min_runs=1, at_cap="llr")
    # 6 of 9: LLR = 6 ln(0.65/0.8) + 3 ln(0.35/0.2) = 0.433 > 0, so the LLR rule reverts
    assert llr_by_hand(6, 9, P0, P1) == pytest.approx(0.4330, abs=1e-4)
    assert g.decide(PRIOR, RevisionStats(9, 6), p0=P0).verdict == REVERT


def test_decide_uses_the_prior_estimate_when_p0_is_not_given():
    g = SPRTGate()
    p0 = 17 / 22
    d = g.decide(PRIOR, RevisionStats(6, 2))
    assert d.statistic == pytest.approx(llr_by_hand(2, 6, p0, p0 - 0.15), abs=1e-12)
    assert "plugin" in d.reason and "16/20" in d.reason


# --- SPRT: degenerate p0 ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("p0", "path", "verdict", "fragment"),
    [
        (1.0, [True, True, False], REVERT, "one failure"),  # a failure is impossible under H0
        (1.0, [True] * 10, ACCEPT, "clipped"),
        (0.1, [False, False, True], ACCEPT, "min_drop"),  # H1 = never succeeds
        (0.15, [False] * 10, CONTINUE, "min_drop"),  # p0 - min_drop = 0 exactly
        (0.0, [False] * 10, CONTINUE, "cap rule decides"),
        (0.0, [True] * 3, ACCEPT, "ln(1/2) toward accept"),
    ],
)
def test_degenerate_p0_has_a_reason_and_no_nan(p0, path, verdict, fragment):
    g = SPRTGate()
    n, s = len(path), sum(path)
    d = g.decide(PRIOR, RevisionStats(n, s), p0=p0)
    assert d.verdict == verdict
    assert fragment in d.reason
    assert math.isfinite(d.statistic)
    batch = g.decide_batch(np.array([path]), p0)
    assert np.isfinite(batch.statistic).all()


@pytest.mark.parametrize("p0", [0.0, 0.05, 0.15, 1.0])
def test_degenerate_p0_always_ends_in_a_decision_at_the_cap(p0):
    g = SPRTGate(max_runs=12)
    rng = np.random.default_rng(3)
    batch = g.decide_batch(rng.random((200, 12)) < 0.5, p0)
    assert batch.count(CONTINUE) == 0
    assert np.isfinite(batch.statistic).all()


# --- margin and cost gates ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("revision", "p0", "verdict"),
    [
        (RevisionStats(4, 0), None, CONTINUE),  # before min_runs
        (RevisionStats(5, 3), None, REVERT),  # 0.6 < 0.8 - 0.05
        (RevisionStats(20, 15), None, CONTINUE),  # 0.75: exactly the margin, not more
        (RevisionStats(20, 14), None, REVERT),
        (RevisionStats(50, 39), None, ACCEPT),  # 0.78 at the cap
        (RevisionStats(50, 30), None, REVERT),  # the cap never overrides a revert
        (RevisionStats(10, 6), 0.6, CONTINUE),  # known baseline
        (RevisionStats(10, 5), 0.6, REVERT),
    ],
)
def test_margin_gate(revision, p0, verdict):
    d = MarginGate().decide(PRIOR, revision, p0=p0)
    assert (d.verdict, d.gate, d.runs_used) == (verdict, "margin", revision.runs)
    base = 0.8 if p0 is None else p0
    assert d.statistic == pytest.approx(base - revision.successes / revision.runs)


def test_margin_gate_without_prior_runs_only_accepts_at_the_cap():
    g = MarginGate(max_runs=10)
    empty = RevisionStats(0, 0)
    assert g.decide(empty, RevisionStats(9, 0)).verdict == CONTINUE
    d = g.decide(empty, RevisionStats(10, 0))
    assert d.verdict == ACCEPT and "no runs" in d.reason


COSTS_1 = (1.0, 1.0, 1.0, 1.0, 1.0)


@pytest.mark.parametrize(
    ("prior", "revision", "verdict", "excess"),
    [
        (RevisionStats(9, 5, COSTS_1), RevisionStats(5, 5, (2.0,) * 5), REVERT, 1.0),
        (RevisionStats(9, 5, COSTS_1), RevisionStats(5, 5, (1.25,) * 5), CONTINUE, 0.25),
        (RevisionStats(9, 5, COSTS_1), RevisionStats(5, 5, (1.3,) * 5), REVERT, 0.3),
        (RevisionStats(9, 5, COSTS_1), RevisionStats(5, 5, (0.2,) * 5), CONTINUE, -0.8),
        (RevisionStats(9, 5, COSTS_1), RevisionStats(9, 4, (9.0,) * 4), CONTINUE, 0.0),
        (RevisionStats(9, 5, (0.0,) * 5), RevisionStats(5, 5, (0.1,) * 5), REVERT, math.inf),
        (RevisionStats(9, 5, (0.0,) * 5), RevisionStats(5, 5, (0.0,) * 5), CONTINUE, 0.0),
    ],
)
def test_cost_gate_reverts_or_stays_silent(prior, revision, verdict, excess):
    d = CostGate().decide(prior, revision)
    assert (d.verdict, d.gate) == (verdict, "cost")
    assert d.statistic == pytest.approx(excess)
    assert d.verdict != ACCEPT  # the cost gate never accepts on its own


@pytest.mark.parametrize(("cost", "verdict"), [(0.1125, CONTINUE), (0.1126, REVERT)])
def test_cost_gate_reads_exactly_25_percent_above_as_within(cost, verdict):
    """The seed reverts a revision whose successful runs cost *more than* 25 % above the
    prior's. Prior successes at 0.09 and the revision's at 0.1125 are exactly 25 % above
    in decimals, but 0.09 * 1.25 is 0.11249999999999999 in binary floats, so the gate
    reverted (48 of the boundaries a / 100 * 1.25 for a = 1..399 did); the margin gate
    already counts a difference within 1e-12 of its margin as equal. Both the scalar
    ``decide`` and the vectorized ``run_codes`` read it now as within."""
    gate = CostGate()
    prior = RevisionStats(5, 5, (0.09,) * 5)
    assert gate.decide(prior, RevisionStats(5, 5, (cost,) * 5)).verdict == verdict
    codes = gate.run_codes(np.ones((1, 5), bool), 0.8, np.full((1, 5), cost), np.full((1, 5), 0.09))
    assert codes[0, -1] == (REVERT_CODE if verdict == REVERT else CONTINUE_CODE)


def test_outcomes_are_bools_or_0_1_never_read_by_truth_value():
    """Before, ``RevisionStats`` read each outcome as ``bool(x)``: ``outcomes=(2, 0)`` and
    ``concurrent=(0.5,)`` became successes (``decide_batch`` refuses such outcomes)."""
    stats = RevisionStats(3, 2, outcomes=(1, 0, np.True_), concurrent=(0.0, 1.0))
    assert stats.outcomes == (True, False, True) and stats.concurrent == (False, True)
    assert all(type(x) is bool for x in stats.outcomes + stats.concurrent)


@pytest.mark.parametrize("name", ["sprt", "margin", "cost", "calibrated_sprt", "two_sample",
                                  "discordant_sprt", "eprocess"])  # fmt: skip
def test_decide_names_an_argument_that_is_not_revision_stats(name):
    """``decide(None, revision)`` raised an ``AttributeError`` from inside every gate."""
    gate = make_gate(name, max_runs=20) if name != "cost" else make_gate(name)
    revision = RevisionStats(2, 1, outcomes=(True, False))
    with pytest.raises(ParameterError, match=r"^prior=None is not allowed: a RevisionStats"):
        gate.decide(None, revision)
    with pytest.raises(ParameterError, match=r"^revision=\(2, 1\) is not allowed"):
        gate.decide(PRIOR, (2, 1))


@pytest.mark.parametrize("name", ["sprt", "margin", "calibrated_sprt", "two_sample"])
@pytest.mark.parametrize(
    ("ledger", "runs", "field", "shown"),
    [
        (np.array([-1, 5, 5]), 20, "ledger_successes", "-1.0"),
        (np.array([5.5, 5, 5]), 20, "ledger_successes", "5.5"),
        (np.array([np.nan, 5, 5]), 20, "ledger_successes", "nan"),
        (np.array([25, 5, 5]), 20, "ledger_successes", "25.0"),
        (np.array([5, 5]), 20, "ledger_successes", "shape (2,)"),
        (5, 2.5, "ledger_runs", "2.5"),
    ],
)
def test_decide_evidence_names_a_ledger_that_cannot_be(name, ledger, runs, field, shown):
    """``decide_evidence`` read -1 or 5.5 ledger successes as they were (the SPRT's
    plug-in p0 from -1 of 20 runs) or truncated them (the two-sample test), cast a NaN to
    an integer with a warning, and took a fractional ``ledger_runs``; two rows' ledgers
    for three rows were a numpy ``ValueError``."""
    gate = make_gate(name, max_runs=20)
    outcomes = np.ones((3, 10), dtype=bool)
    extra = {"concurrent": outcomes} if gate.compares_arms else {}
    with pytest.raises(ParameterError) as err:
        gate.decide_evidence(outcomes, ledger_successes=ledger, ledger_runs=runs, **extra)
    assert err.value.field == field and shown in str(err.value)
    ok = gate.decide_evidence(outcomes, ledger_successes=np.array([5, 20, 0]), ledger_runs=20,
                              **extra)  # fmt: skip
    assert ok.verdict.shape == (3,)


@pytest.mark.parametrize("name", ["sprt", "margin", "cost", "calibrated_sprt", "two_sample",
                                  "discordant_sprt", "eprocess"])  # fmt: skip
def test_estimate_p0_refuses_counts_no_ledger_has(name):
    """``estimate_p0`` (a public verb) gave p0 = 1.18 from 25 of 20 runs (plug-in), 1.25 or
    -0.05 (raw rate) and a ``ZeroDivisionError`` for -2 runs; valid counts are unchanged."""
    gate = make_gate(name) if name == "cost" else make_gate(name, max_runs=20)
    bad = [(25, 20, "25 of 20"), (-1, 20, "-1 of 20"), (5.5, 20, "5.5 of 20"),
           (5, -2, "5 of -2"), (np.array([3, 4]), np.array([5, 3]), "4 of 3")]  # fmt: skip
    for s, n, shown in bad:
        with pytest.raises(ParameterError, match=f"^successes='{shown} runs' is not allowed"):
            gate.estimate_p0(s, n)
    plugin = name in ("sprt", "calibrated_sprt")
    expected = [1 / 22, 16 / 22, 21 / 22] if plugin else [0.0, 0.75, 1.0]
    got = gate.estimate_p0(np.array([0, 15, 20]), 20)
    assert np.allclose(got, expected, rtol=0, atol=1e-15)
