"""The revision gates against references written out in the test.

Wald's SPRT (docs/statistics.md, "The SPRT revision gate"): ``ln A = ln((1 - beta) /
alpha)``, ``ln B = ln(beta / (1 - alpha))``; a success adds ``ln(p1 / p0)``, a failure
``ln((1 - p1) / (1 - p0))`` with ``p1 = p0 - min_drop``; from run ``min_runs`` on revert at
``LLR >= ln A``, accept at ``LLR <= ln B``; at ``max_runs`` a test that crossed neither
boundary follows the cap rule (accept, revert, or revert exactly when ``LLR > 0``). The
margin gate: revert from ``min_runs`` on when ``p0 - s/n > margin``, accept at
``max_runs``. The cost gate: revert once both revisions have ``min_samples`` costed
successes and the revision's mean exceeds the prior's by more than ``tolerance``.

Each reference below computes with ``math.log``, ``fractions.Fraction`` and
``math.comb`` only; no engine rule, boundary or recursion is called on the reference
side. The operating point reference is a forward recursion over ``(runs, successes)``
in plain Python.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest

from procmem_core.gates import (
    ACCEPT,
    CONTINUE,
    REVERT,
    VERDICT_NAMES,
    CostGate,
    MarginGate,
    RevisionStats,
    SPRTGate,
)

EMPTY = RevisionStats(0, 0)


def ref_boundaries(alpha: float, beta: float) -> tuple[float, float]:
    return math.log((1 - beta) / alpha), math.log(beta / (1 - alpha))


def ref_llr(s: int, n: int, p0: float, drop: float) -> float:
    p1 = p0 - drop
    return s * math.log(p1 / p0) + (n - s) * math.log((1 - p1) / (1 - p0))


def exact(x) -> F:
    """A float given as a decimal (0.05 -> 1/20), or a Fraction as it is."""
    return x if isinstance(x, F) else F(str(x))


def ref_ratio(s: int, n: int, p0, drop) -> F:
    """The likelihood ratio of H1 to H0, exactly: ``(p1/p0)^s ((1-p1)/(1-p0))^(n-s)``."""
    p0, p1 = exact(p0), exact(p0) - exact(drop)
    return (p1 / p0) ** s * ((1 - p1) / (1 - p0)) ** (n - s)


def ref_sprt(s: int, n: int, p0, g: dict) -> str:
    """The SPRT's verdict at ``(n, s)``, from the docstring above, in exact arithmetic
    (``LLR >= ln A`` is ``ratio >= A``: the logarithm is increasing)."""
    alpha, beta = exact(g["alpha"]), exact(g["beta"])
    ratio = ref_ratio(s, n, p0, g["min_drop"])
    live = n >= g["min_runs"]
    if live and ratio >= (1 - beta) / alpha:
        return REVERT
    if live and ratio <= beta / (1 - alpha):
        return ACCEPT
    if n >= g["max_runs"]:
        return {"accept": ACCEPT, "revert": REVERT}.get(
            g["at_cap"], REVERT if ratio > 1 else ACCEPT
        )
    return CONTINUE


def ref_margin(s: int, n: int, p0: F, g: dict) -> str:
    if n >= g["min_runs"] and p0 - F(s, n) > F(g["margin"]):
        return REVERT
    return ACCEPT if n >= g["max_runs"] else CONTINUE


def ref_operating_point(verdict, p: float, max_runs: int) -> tuple[float, float, float]:
    """``(P(revert), P(accept), E[runs])``: mass on undecided lattice cells moves one run at
    a time; a cell's verdict (``verdict(s, n)``) absorbs it."""
    alive = {0: 1.0}
    revert = accept = runs = 0.0
    for n in range(1, max_runs + 1):
        nxt: dict[int, float] = {}
        for s, mass in alive.items():
            for s2, w in ((s + 1, p), (s, 1 - p)):
                if w:
                    nxt[s2] = nxt.get(s2, 0.0) + mass * w
        alive = {}
        for s, mass in nxt.items():
            v = verdict(s, n)
            if v == REVERT:
                revert, runs = revert + mass, runs + n * mass
            elif v == ACCEPT:
                accept, runs = accept + mass, runs + n * mass
            else:
                alive[s] = mass
    assert not alive  # every gate here decides by its cap
    return revert, accept, runs


SEED = {"min_drop": 0.15, "alpha": 0.05, "beta": 0.2, "min_runs": 3, "max_runs": 50}


def sprt(**kw) -> tuple[SPRTGate, dict]:
    g = {**SEED, "at_cap": "llr", **kw}
    return SPRTGate(**g), g


# --- boundaries and increments ------------------------------------------------------


@pytest.mark.parametrize(("alpha", "beta"), [(0.05, 0.2), (0.01, 0.1), (0.2, 0.05)])
def test_boundaries_are_walds(alpha, beta):
    gate, _ = sprt(alpha=alpha, beta=beta)
    ln_a, ln_b = ref_boundaries(alpha, beta)
    assert gate.boundaries == pytest.approx((ln_a, ln_b), rel=1e-12)
    # the seed's numbers, pinned: ln 16 and ln(4/19)
    assert ref_boundaries(0.05, 0.2) == pytest.approx((math.log(16), math.log(4 / 19)), rel=1e-15)


@pytest.mark.parametrize("p0", [0.3, 0.55, 0.8, 0.95])
def test_llr_is_the_sum_of_the_two_increments(p0):
    gate, _ = sprt()
    for n in range(0, 12):
        for s in range(n + 1):
            assert gate.statistic(s, n, p0) == pytest.approx(
                ref_llr(s, n, p0, 0.15), rel=1e-12, abs=1e-12
            )


# --- the per-run rule on every lattice cell --------------------------------------------

RULE_CASES = [
    {"at_cap": "llr"},
    {"at_cap": "accept", "max_runs": 10},
    {"at_cap": "revert", "max_runs": 10, "min_runs": 1},
    {"at_cap": "llr", "alpha": 0.1, "beta": 0.1, "min_drop": 0.2, "max_runs": 12},
    {"at_cap": "accept", "alpha": 0.01, "beta": 0.3, "min_runs": 5, "max_runs": 30},
]


@pytest.mark.parametrize("kw", RULE_CASES)
@pytest.mark.parametrize("p0", [0.5, 0.8, 0.9])
def test_rule_matches_the_reference_on_every_cell(kw, p0):
    """Every (runs, successes) up to the cap, through ``decide`` (the store's path) and
    ``rule`` on the whole lattice (the simulators' path), against the exact ratio. A cell
    exactly on a boundary (p0 0.8, drop 0.2, alpha = beta = 0.1: 4 failures, 2 successes
    give ratio 9 = A) must decide as the boundary says; cells within 1e-9 of a boundary
    without being on it could go either way in floats: counted, and must be rare."""
    gate, g = sprt(**kw)
    ln_a, ln_b = ref_boundaries(g["alpha"], g["beta"])
    n = np.arange(g["max_runs"] + 1)[:, None]
    s = np.arange(g["max_runs"] + 1)[None, :]
    table = gate.rule(s, n, p0)
    near = ties = 0
    bounds = (
        F(1),
        (1 - exact(g["beta"])) / exact(g["alpha"]),
        exact(g["beta"]) / (1 - exact(g["alpha"])),
    )
    for runs in range(g["max_runs"] + 1):
        for succ in range(runs + 1):
            llr = ref_llr(succ, runs, p0, g["min_drop"])
            ratio = ref_ratio(succ, runs, p0, g["min_drop"])
            ties += runs > 0 and ratio in bounds
            if min(abs(llr - ln_a), abs(llr - ln_b), abs(llr)) < 1e-9 and ratio not in bounds:
                near += 1  # within float noise of a boundary, yet not on it: either is right
                continue
            expected = ref_sprt(succ, runs, p0, g)
            assert VERDICT_NAMES[table[runs, succ]] == expected, (runs, succ)
            if runs <= 12:  # decide is slower: the first dozen runs are plenty
                assert gate.decide(EMPTY, RevisionStats(runs, succ), p0=p0).verdict == expected
    assert near <= 2
    if kw.get("min_drop") == 0.2 and p0 == 0.8:
        assert ties >= 1  # the exact tie above is among the cells checked


@pytest.mark.parametrize("at_cap", ["accept", "revert", "llr"])
def test_a_revert_boundary_crossed_exactly_on_the_cap_run_reverts(at_cap):
    """p0 0.8: four failures give LLR 2.238 < ln 16 = 2.773, five give 2.798 >= ln 16.
    With ``max_runs = 5`` the boundary is crossed on the cap run itself: the boundary
    decides, whatever the cap rule."""
    gate, _ = sprt(at_cap=at_cap, max_runs=5, min_runs=1)
    assert ref_llr(0, 4, 0.8, 0.15) < math.log(16) <= ref_llr(0, 5, 0.8, 0.15)
    assert gate.decide(EMPTY, RevisionStats(4, 0), p0=0.8).verdict == CONTINUE
    d = gate.decide(EMPTY, RevisionStats(5, 0), p0=0.8)
    assert (d.verdict, d.reason_code) == (REVERT, "revert_boundary")
    batch = gate.decide_batch(np.zeros((3, 5), bool), 0.8)
    assert batch.names().tolist() == [REVERT] * 3
    assert batch.reason.tolist() == ["revert_boundary"] * 3
    point = gate.operating_point(0.0, 0.8)  # every path is five failures
    assert (point.p_revert, point.expected_runs) == (pytest.approx(1.0), pytest.approx(5.0))


@pytest.mark.parametrize("at_cap", ["accept", "revert", "llr"])
def test_an_accept_boundary_crossed_exactly_on_the_cap_run_accepts(at_cap):
    """Seven successes give LLR -1.453 > ln(4/19) = -1.558, eight give -1.661: with
    ``max_runs = 8`` the accept boundary is crossed on the cap run."""
    gate, _ = sprt(at_cap=at_cap, max_runs=8, min_runs=1)
    assert ref_llr(8, 8, 0.8, 0.15) <= math.log(4 / 19) < ref_llr(7, 7, 0.8, 0.15)
    assert gate.decide(EMPTY, RevisionStats(7, 7), p0=0.8).verdict == CONTINUE
    d = gate.decide(EMPTY, RevisionStats(8, 8), p0=0.8)
    assert (d.verdict, d.reason_code) == (ACCEPT, "accept_boundary")
    point = gate.operating_point(1.0, 0.8)
    assert (point.p_accept, point.expected_runs) == (pytest.approx(1.0), pytest.approx(8.0))


def test_runs_past_the_cap_follow_the_sign_of_the_llr():
    """6 of 9 at p0 0.8: LLR = 6 ln(0.65/0.8) + 3 ln(0.35/0.2) = 0.433 > 0, so "llr"
    reverts (and "accept" accepts)."""
    assert ref_llr(6, 9, 0.8, 0.15) == pytest.approx(0.4330, abs=1e-4)
    for at_cap, verdict in (("llr", REVERT), ("accept", ACCEPT), ("revert", REVERT)):
        gate, _ = sprt(at_cap=at_cap, max_runs=4, min_runs=1)
        assert gate.decide(EMPTY, RevisionStats(9, 6), p0=0.8).verdict == verdict


# --- exact operating points against the reference recursion ---------------------------


@pytest.mark.parametrize("kw", RULE_CASES)
@pytest.mark.parametrize("p0", [0.6, 0.8])
def test_operating_point_matches_the_reference_recursion(kw, p0):
    gate, g = sprt(**kw)
    for p in (p0, p0 - 0.15, 0.3, 0.95):
        revert, accept, runs = ref_operating_point(
            lambda s, n: ref_sprt(s, n, p0, g), p, g["max_runs"]
        )
        point = gate.operating_point(p, p0)
        assert point.p_revert == pytest.approx(revert, abs=1e-12)
        assert point.p_accept == pytest.approx(accept, abs=1e-12)
        assert point.expected_runs == pytest.approx(runs, rel=1e-12)


def test_the_cap_rule_moves_the_error_rates_by_the_amounts_the_reference_gives():
    """At p0 0.8, max_runs 10, the revision at p = 0.65: P(revert) under each cap rule,
    from the reference recursion (pinned to 4 decimals) and from the engine to 1e-12."""
    pinned = {"accept": 0.03648, "revert": 0.96814, "llr": 0.73839}
    for at_cap, value in pinned.items():
        gate, g = sprt(at_cap=at_cap, max_runs=10)
        revert, _, _ = ref_operating_point(lambda s, n, g=g: ref_sprt(s, n, 0.8, g), 0.65, 10)
        assert revert == pytest.approx(value, abs=1e-5)
        assert gate.operating_point(0.65, 0.8).p_revert == pytest.approx(revert, abs=1e-12)


@pytest.mark.parametrize(
    ("prior", "prior_runs"), [("plugin", 20), ("lower_bound", 20), ("plugin", 7)]
)
def test_operating_point_with_an_estimated_p0_mixes_the_ledger_exactly(prior, prior_runs):
    """With p0 estimated from a ledger of ``n0`` runs, ``sum_k C(n0, k) p0^k (1 - p0)^(n0 - k)
    x point(p, p0_hat(k))``; ``p0_hat`` is ``(k + 1) / (n0 + 2)`` (plug-in) or the
    one-sided Clopper-Pearson lower bound at level alpha, the root of
    ``P(Binomial(n0, q) >= k) = alpha`` found here by bisection on ``math.comb`` sums."""
    gate, g = sprt(prior=prior, max_runs=15)

    def tail(q: float, k: int) -> float:
        return sum(math.comb(prior_runs, j) * q**j * (1 - q) ** (prior_runs - j)
                   for j in range(k, prior_runs + 1))  # fmt: skip

    def p0_hat(k: int) -> float:
        if prior == "plugin":
            return F(k + 1, prior_runs + 2)
        if k == 0:
            return F(0)
        lo, hi = 0.0, 1.0
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if tail(mid, k) < g["alpha"] else (lo, mid)
        return F(lo)

    p0 = 0.8
    for p in (0.8, 0.65):
        revert = runs = 0.0
        for k in range(prior_runs + 1):
            w = math.comb(prior_runs, k) * p0**k * (1 - p0) ** (prior_runs - k)
            hat = p0_hat(k)
            r, _, e = ref_operating_point(lambda s, n, h=hat: ref_sprt_clipped(s, n, h, g), p, 15)
            revert, runs = revert + w * r, runs + w * e
        point = gate.operating_point(p, p0, prior_runs=prior_runs)
        assert point.p_revert == pytest.approx(revert, abs=1e-9)
        assert point.expected_runs == pytest.approx(runs, rel=1e-9)


def ref_sprt_clipped(s: int, n: int, p0, g: dict) -> str:
    """``ref_sprt`` with the documented handling of degenerate p0 (gates.llr): p0 into
    ``[2e-6, 1 - 1e-6]``, p1 at least ``1e-6``."""
    p0c = min(max(exact(p0), F(2, 10**6)), 1 - F(1, 10**6))
    drop = p0c - max(p0c - exact(g["min_drop"]), F(1, 10**6))
    return ref_sprt(s, n, p0c, {**g, "min_drop": drop})


@pytest.mark.parametrize("at_cap", ["accept", "llr"])
def test_simulated_decisions_match_the_reference_within_four_se(at_cap):
    """``decide_batch`` on outcomes drawn here (seed SPRT, max_runs 50, p0 0.8) against
    the reference recursion, within 4 SE. At p = 0.65 (P(revert) 0.5-0.75) 40,000
    replications give an SE of at most 0.0025, so a 5 % error (0.026-0.037) is over 10
    SE; at p = 0.8 (false revert 0.03 when kept at the cap, 0.10 following the LLR)
    250,000 replications give an SE of 0.00034-0.0006, so a 5 % error (0.0015-0.005)
    is 4.4-8.3 SE and fails too. Mean runs: SE below 0.03 runs, a 5 % error is over 10 SE."""
    gate, g = sprt(at_cap=at_cap)
    rng = np.random.default_rng(np.random.SeedSequence([19, len(at_cap)]))
    for p, reps in ((0.65, 40_000), (0.8, 250_000)):
        revert, _, runs = ref_operating_point(lambda s, n: ref_sprt(s, n, 0.8, g), p, 50)
        batch = gate.decide_batch(rng.random((reps, 50)) < p, 0.8)
        rate = batch.count(REVERT) / reps
        se = math.sqrt(revert * (1 - revert) / reps)
        assert abs(rate - revert) <= 4 * se, (p, rate, revert, se)
        assert 0.05 * revert > 4.4 * se  # the claim in the docstring
        used = batch.runs_used
        runs_se = used.std(ddof=1) / math.sqrt(reps)
        assert abs(used.mean() - runs) <= 4 * runs_se
        assert 0.05 * runs > 10 * runs_se


# --- the margin and cost gates ---------------------------------------------------------


@pytest.mark.parametrize(
    ("s", "n", "expected"),
    [
        (15, 20, CONTINUE),  # 0.8 - 0.75 = 0.05 exactly: not more than the margin
        (14, 20, REVERT),  # 0.10 > 0.05
        (3, 4, CONTINUE),  # fewer than min_runs 5, however low
        (0, 4, CONTINUE),
        (0, 5, REVERT),  # from min_runs on
        (38, 50, ACCEPT),  # 0.76: within the margin at the cap
        (37, 50, REVERT),  # 0.74: the boundary on the cap run reverts
    ],
)
def test_margin_gate_matches_the_reference(s, n, expected):
    g = {"margin": "0.05", "min_runs": 5, "max_runs": 50}
    assert ref_margin(s, n, F("0.8"), g) == expected
    gate = MarginGate(margin=0.05, min_runs=5, max_runs=50)
    assert gate.decide(EMPTY, RevisionStats(n, s), p0=0.8).verdict == expected


def test_margin_operating_point_matches_the_reference_recursion():
    gate = MarginGate(margin=0.1, min_runs=4, max_runs=20)
    g = {"margin": "0.1", "min_runs": 4, "max_runs": 20}
    for p in (0.5, 0.7, 0.85):
        revert, _, runs = ref_operating_point(lambda s, n: ref_margin(s, n, F("0.8"), g), p, 20)
        point = gate.operating_point(p, 0.8)
        assert point.p_revert == pytest.approx(revert, abs=1e-12)
        assert point.expected_runs == pytest.approx(runs, rel=1e-12)


@pytest.mark.parametrize(
    ("prior", "revision", "expected"),
    [
        ((1.0,) * 5, (1.25,) * 5, CONTINUE),  # exactly 25 % more: not more than tolerance
        ((1.0,) * 5, (1.0, 1.0, 1.0, 1.0, 2.3), REVERT),  # mean 1.26
        ((1.0,) * 5, (3.0,) * 4, CONTINUE),  # 4 costed successes < min_samples
        ((1.0,) * 4, (3.0,) * 9, CONTINUE),  # the prior has only 4
        ((2.0, 4.0, 0.0, 2.0, 2.0), (2.6,) * 5, REVERT),  # prior mean 2, limit 2.5
    ],
)
def test_cost_gate_matches_the_reference(prior, revision, expected):
    m0, m1 = F(sum(F(str(c)) for c in prior), len(prior)), None
    if len(prior) >= 5 and len(revision) >= 5:
        m1 = F(sum(F(str(c)) for c in revision), len(revision))
    reference = REVERT if m1 is not None and m1 > m0 * F("1.25") else CONTINUE
    assert reference == expected
    gate = CostGate(tolerance=0.25, min_samples=5)
    p = RevisionStats(len(prior), len(prior), prior)
    r = RevisionStats(len(revision), len(revision), revision)
    assert gate.decide(p, r).verdict == expected
    codes = gate.run_codes(
        np.ones((1, len(revision)), bool), 0.8, np.array([revision]), np.array([prior])
    )
    assert VERDICT_NAMES[codes[0, -1]] == expected
