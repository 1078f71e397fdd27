"""The gates that compare the two arms: exact recursions against brute-force enumeration
of every outcome path through ``decide`` (the object path, run by run), the batch path
against the object path decision by decision, and invalid input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.gates import (
    CalibratedSPRTGate,
    DiscordantSPRTGate,
    GateError,
    MixtureEGate,
    RevisionStats,
    TwoSampleGate,
    make_gate,
)
from procmem_core.gates.eprocess import log_mixture


def bits(n: int):
    return list(itertools.product([False, True], repeat=n))


def prob(outcomes, p: float) -> float:
    k = sum(outcomes)
    return p**k * (1 - p) ** (len(outcomes) - k)


def first_decision(gate, ledger, rev, conc):
    """Ask ``decide`` after every run (pair) of this path, as the store does."""
    for k in range(1, len(rev) + 1):
        c = conc[:k]
        prior = RevisionStats(len(ledger) + len(c), sum(ledger) + sum(c), concurrent=c)
        revision = RevisionStats(k, sum(rev[:k]), outcomes=rev[:k])
        d = gate.decide(prior, revision)
        if d.verdict != "continue":
            return d.verdict, k
    return "continue", len(rev)


def enumerate_two_arms(gate, ledger_runs: int, p0: float, p: float, concurrent: bool):
    """P(revert), P(accept), E[runs] over every ledger, revision and concurrent path."""
    t = gate.max_runs
    out = {"revert": 0.0, "accept": 0.0, "runs": 0.0}
    conc_paths = bits(t) if concurrent else [()]
    for ledger in bits(ledger_runs):
        for rev in bits(t):
            for conc in conc_paths:
                w = prob(ledger, p0) * prob(rev, p) * (prob(conc, p0) if concurrent else 1.0)
                verdict, k = first_decision(gate, ledger, rev, conc if concurrent else ())
                out[verdict] = out.get(verdict, 0.0) + w
                out["runs"] += w * k
    return out


SMALL = dict(min_drop=0.3, max_runs=4, min_runs=1, revert_level=0.6, accept_level=-0.4)


@pytest.mark.parametrize("design", ["concurrent", "fixed"])
@pytest.mark.parametrize(
    ("p0", "p"), [(0.5, 0.5), (0.8, 0.5), (0.3, 0.6), (0.8, 0.8), (0.9, 0.7), (0.2, 0.05)]
)  # every orientation of ``twolattice.ratio_powers``: each rate below or above 1/2
def test_two_sample_recursion_equals_enumeration(design, p0, p):
    gate = TwoSampleGate(**SMALL, design=design, ledger=2, final_level=0.3)
    ref = enumerate_two_arms(gate, 2, p0, p, design == "concurrent")
    op = gate.operating_point(p, p0, prior_runs=2)
    assert op.p_revert == pytest.approx(ref["revert"], abs=1e-12)
    assert op.p_accept == pytest.approx(ref["accept"], abs=1e-12)
    assert op.expected_runs == pytest.approx(ref["runs"], abs=1e-12)
    curve = gate.operating_curve(np.array([p0]), p0 - p if p <= p0 else 0.0, prior_runs=2)
    if p <= p0:
        assert curve.p_revert[0] == pytest.approx(ref["revert"], abs=1e-12)


@pytest.mark.parametrize(("p0", "p"), [(0.7, 0.7), (0.9, 0.55), (0.2, 0.2)])
def test_calibrated_sprt_recursion_equals_enumeration(p0, p):
    gate = CalibratedSPRTGate(
        min_drop=0.2, max_runs=5, min_runs=2, ledger=3, revert_level=0.8, accept_level=-0.6,
        final_level=0.1,
    )  # fmt: skip
    ref = enumerate_two_arms(gate, 3, p0, p, concurrent=False)
    op = gate.operating_point(p, p0, prior_runs=3)
    assert op.p_revert == pytest.approx(ref["revert"], abs=1e-12)
    assert op.expected_runs == pytest.approx(ref["runs"], abs=1e-12)
    curve = gate.operating_curve(np.array([p0]), max(p0 - p, 0.0), prior_runs=3)
    assert curve.p_revert[0] == pytest.approx(ref["revert"], abs=1e-12)
    assert curve.expected_runs[0] == pytest.approx(ref["runs"], abs=1e-12)


@pytest.mark.parametrize(
    "gate",
    [
        DiscordantSPRTGate(min_drop=0.3, alpha=0.2, beta=0.3, max_runs=5, min_runs=1),
        DiscordantSPRTGate(min_drop=0.3, alpha=0.2, beta=0.3, max_runs=5, at_cap="llr"),
        MixtureEGate(alpha=0.25, max_runs=5, accept_below=0.6),
    ],
)
@pytest.mark.parametrize(("p0", "p"), [(0.5, 0.5), (0.8, 0.6), (0.4, 0.1)])
def test_paired_recursion_equals_enumeration(gate, p0, p):
    ref = enumerate_two_arms(gate, 0, p0, p, concurrent=True)
    op = gate.operating_point(p, p0, prior_runs=0)  # alternative at design_p0, as decide
    assert op.p_revert == pytest.approx(ref["revert"], abs=1e-12)
    assert op.p_accept == pytest.approx(ref["accept"], abs=1e-12)
    assert op.expected_runs == pytest.approx(ref["runs"], abs=1e-12)


def test_mixture_e_value_is_the_beta_binomial_integral():
    """ln M against a direct quadrature of 2^m * 2 * int_{1/2}^1 theta^W (1-theta)^(m-W)."""
    theta = np.linspace(0.5, 1.0, 200_001)
    for w, b in [(0, 0), (3, 1), (7, 2), (2, 6), (15, 5)]:
        m = w + b
        f = theta**w * (1 - theta) ** b
        integral = np.sum((f[1:] + f[:-1]) / 2 * np.diff(theta))
        assert float(np.exp(log_mixture(w, b))) == pytest.approx(2**m * 2 * integral, rel=1e-6)


@pytest.mark.parametrize(
    "gate",
    [
        TwoSampleGate(max_runs=30, ledger=10),
        TwoSampleGate(max_runs=30, ledger=10, design="fixed"),
        DiscordantSPRTGate(max_runs=30),
        MixtureEGate(max_runs=30, accept_below=0.2),
        CalibratedSPRTGate(max_runs=30, ledger=10),
    ],
)
def test_batch_path_equals_decide_run_by_run(gate):
    rng = np.random.default_rng(11)
    rows, t = 120, 36
    outcomes = rng.random((rows, t)) < 0.6
    conc = rng.random((rows, t)) < 0.75
    ledger = rng.random((rows, 10)) < 0.75
    batch = gate.decide_evidence(
        outcomes, ledger_successes=ledger.sum(axis=1), ledger_runs=10, concurrent=conc
    )
    for i in range(rows):
        verdict, k = "continue", min(t, gate.max_runs)
        for n in range(1, min(t, gate.max_runs) + 1):
            c = tuple(conc[i, :n]) if "fixed" not in gate.designs else ()
            prior = RevisionStats(10 + len(c), int(ledger[i].sum()) + sum(c), concurrent=c)
            rev = RevisionStats(n, int(outcomes[i, :n].sum()), outcomes=tuple(outcomes[i, :n]))
            d = gate.decide(prior, rev)
            if d.verdict != "continue":
                verdict, k = d.verdict, n
                break
        assert (batch.names()[i], int(batch.runs_used[i])) == (verdict, k), i
        if verdict != "continue":
            assert batch.reason[i] == d.reason_code
            assert batch.statistic[i] == pytest.approx(d.statistic)


def test_config_rebuilds_the_same_gate_with_its_calibrated_boundaries():
    gate = TwoSampleGate(max_runs=40)
    again = make_gate(**gate.config())
    assert again == gate
    assert again.final_level == gate.final_level
    assert gate.certificate() is not None and again.certificate() is None
    fresh = make_gate(**{**gate.config(), "final_level": None, "revert_level": None})
    assert fresh.final_level == gate.final_level


def test_the_store_contract_for_paired_gates():
    gate = DiscordantSPRTGate()
    prior = RevisionStats(3, 3, concurrent=(True, True, True))
    rev = RevisionStats(3, 0, outcomes=(False, False, False))
    assert gate.decide(prior, rev).runs_used == 3
    with pytest.raises(GateError, match="outcomes"):
        gate.decide(prior, RevisionStats(3, 0))
    with pytest.raises(ParameterError, match="concurrent"):
        TwoSampleGate(max_runs=20).decide(
            RevisionStats(1, 1, concurrent=(True, True)), RevisionStats(1, 1, outcomes=(True,))
        )


@pytest.mark.parametrize(
    ("build", "fragment"),
    [
        (lambda: TwoSampleGate(design="paired"), "design"),
        (lambda: TwoSampleGate(design="fixed", ledger=0), "ledger"),
        (lambda: TwoSampleGate(alpha=0.5, beta=0.5), "alpha"),
        (lambda: TwoSampleGate(p0_low=0.9, p0_high=0.2), "p0_range"),
        (lambda: TwoSampleGate(max_runs=2), "max_runs"),
        (lambda: TwoSampleGate(accept_level=float("nan")), "accept_level"),
        (lambda: TwoSampleGate(max_runs=600, ledger=20), "max_runs"),
        (lambda: CalibratedSPRTGate(prior="lower_bound"), "prior"),
        (lambda: CalibratedSPRTGate(ledger=-1), "ledger"),  # 0 allowed: recalibrated per ledger
        (lambda: DiscordantSPRTGate(at_cap="revert"), "at_cap"),
        (lambda: DiscordantSPRTGate(max_discordant=0), "max_discordant"),
        (lambda: DiscordantSPRTGate(design_p0=1.0), "design_p0"),
        (lambda: MixtureEGate(accept_below=2.0), "accept_below"),
        (lambda: MixtureEGate(alpha=0.0), "alpha"),
    ],
)
def test_invalid_parameters(build, fragment):
    with pytest.raises(ParameterError, match=fragment):
        build()


def test_batch_without_the_prior_arm_is_refused():
    with pytest.raises(ParameterError, match="concurrent"):
        TwoSampleGate(max_runs=20).decide_batch(np.ones((2, 5), bool))
    with pytest.raises(ParameterError, match="ledger_successes"):
        TwoSampleGate(max_runs=20, design="fixed").decide_batch(
            np.ones((2, 5), bool), ledger_runs=4
        )


def test_a_prior_ledger_past_the_recursion_is_refused_naming_the_ledger():
    """A prior whose ledger is too long for the exact recursion at the gate's cap is named
    as such (the refusal named max_runs=185, the gate's own valid cap)."""
    gate = TwoSampleGate(max_runs=185, ledger=20, revert_level=2.77, accept_level=-1.64,
                         final_level=1.10, accept_shrink=4.0)  # fmt: skip
    prior = RevisionStats(705, 560, concurrent=(True,) * 5)
    with pytest.raises(ParameterError) as err:
        gate.decide(prior, RevisionStats(5, 4, outcomes=(True, True, False, True, True)))
    assert err.value.field == "ledger" and err.value.value == 700
    assert err.value.allowed.startswith("at most 630 runs at max_runs 185")
    with pytest.raises(ParameterError) as err:
        TwoSampleGate(max_runs=600, ledger=20)  # the cap alone is too long: named
    assert err.value.field == "max_runs"
