"""Holds-if rows of a paired gate prescribed at a 0-run ledger. The sweep's answer passed
``prior_runs=None`` ("p0 known") to ``sensitivity`` when the question's ledger was 0: a
paired gate's curve then sets its alternative at the true p0, which has no bound between
grid points, and the row's check compared None with alpha (TypeError: the finalize step
crashed). The design question evaluates paired families at ledger 0 with their
``design_p0`` (the rule the gate decides by), so the answer now asks at the question's
ledger, and ``sensitivity`` refuses a p0-known curve, naming ``prior_runs``."""

from __future__ import annotations

import pytest

from experiments.answers.gate import holds_if
from procmem_core.errors import ParameterError
from procmem_core.gates import make_gate
from procmem_core.gates.design import DesignQuestion, design_gate
from procmem_core.gates.sensitivity import sensitivity
from procmem_core.gates.worst import P0Range, worst_case

QUESTION = DesignQuestion(alpha=0.1, beta=0.2, min_drop=0.3, ledger=0, concurrent=0.5,
                          p0_low=0.35, p0_high=0.9, max_runs=60)  # fmt: skip


@pytest.fixture(scope="module")
def paired_answers():
    answers = design_gate(QUESTION).answers
    return [a for a in answers if a.family in ("discordant_sprt", "eprocess")]


def test_holds_if_at_ledger_zero_is_the_designed_rule(paired_answers):
    assert len(paired_answers) == 2
    for a in paired_answers:
        rows = holds_if(a, QUESTION)
        gate = make_gate(**a.config)
        rng = P0Range(QUESTION.p0_low, QUESTION.p0_high)
        fr = worst_case(gate, 0.0, 0, rng, target=QUESTION.alpha).bound
        assert rows[0]["figures"]["false_revert"] == pytest.approx(fr, abs=1e-12)
        assert rows[0]["figures"]["false_revert"] <= QUESTION.alpha
        assert rows[0]["holds"] is True


@pytest.mark.parametrize("name", ["discordant_sprt", "sprt"])
def test_p0_known_is_refused_naming_prior_runs(name):
    gate = make_gate(name=name, min_drop=0.3, max_runs=30)
    with pytest.raises(ParameterError, match="prior_runs"):
        sensitivity(gate, QUESTION, None)
