"""``gate=prescribed`` (issue 29, item 3): the loop runs the gate the design tool picks for
the config's question (targets, ledger, the scenario's concurrent share), not a stored
copy of an answer; a bad question is refused at config time naming the key."""

from __future__ import annotations

import re

import pytest
from hydra.errors import ConfigCompositionException

from experiments.build import validate
from experiments.run import compose_job
from procmem_core.errors import ParameterError
from procmem_core.gates import DesignQuestion, design_gate, make_gate, worst_case

EASY = {"alpha": 0.1, "beta": 0.3, "min_drop": 0.3, "ledger": 10, "p0_low": 0.4,
        "p0_high": 0.9, "max_runs": 40}  # fmt: skip
"""A question the design tool answers in a second (tests/procmem_core/gates/test_gate_design)."""


def _overrides(question: dict, share: float = 0.5) -> list[str]:
    return ["gate=prescribed", f"scenario.concurrent_share={share}",
            *(f"gate.{k}={v}" for k, v in question.items())]  # fmt: skip


def test_the_loop_runs_the_design_tools_pick_for_the_configs_question():
    scenario = validate(compose_job("loop", _overrides(EASY)))
    q = DesignQuestion(**EASY, concurrent=0.5)
    chosen = design_gate(q).chosen  # asked here again, independently of the config's cache
    assert chosen is not None
    assert scenario.gate == make_gate(**chosen.config)
    assert scenario.gate.config() == chosen.config
    # the pick meets both targets, exactly, at every p0 in the range (its own ledger)
    fr = worst_case(scenario.gate, 0.0, q.ledger, q.p0_range, target=q.alpha)
    pw = worst_case(scenario.gate, q.min_drop, q.ledger, q.p0_range, target=1 - q.beta)
    assert fr.bound <= q.alpha and pw.bound >= 1 - q.beta
    # a target moved moves the gate with it: no stored answer
    tighter = {**EASY, "alpha": 0.05}
    other = validate(compose_job("loop", _overrides(tighter))).gate
    expected = design_gate(DesignQuestion(**tighter, concurrent=0.5)).chosen
    assert other.config() == expected.config and other != scenario.gate


def test_the_question_takes_the_scenarios_concurrent_share():
    cfg = compose_job("loop", _overrides(EASY, share=0.3))
    assert cfg.gate.concurrent == pytest.approx(0.3)
    assert compose_job("seed_demo", ["gate=prescribed"]).gate.concurrent == 0.0  # none: 0


@pytest.mark.slow
def test_the_loop_presets_prescribed_gate_is_the_design_tools_default_answer():
    """The preset's question (conf/gate/prescribed.yaml at q = 0.5) is the design tool's
    default one with --concurrent 0.5: the same pick, the exact two-sample test (the
    statistics doc: concurrent design, ledger 20; max_runs 185 at the time of writing)."""
    scenario = validate(compose_job("loop", ["gate=prescribed", "scenario.concurrent_share=0.5"]))
    chosen = design_gate(DesignQuestion(concurrent=0.5)).chosen
    assert scenario.gate.config() == chosen.config
    assert (scenario.gate.name, scenario.gate.design, scenario.gate.ledger) == (
        "two_sample", "concurrent", 20)  # fmt: skip
    assert scenario.gate.alpha == 0.05 and scenario.gate.min_drop == 0.15


@pytest.mark.parametrize(
    ("overrides", "message"),
    [(["gate.alpha=1.5"], "gate.alpha=1.5 is not allowed"),
     (["gate.beta=0.95"], "gate.alpha=(0.1, 0.95) is not allowed: need alpha + beta < 1"),
     (["gate.ledger=-1"], "gate.ledger=-1 is not allowed"),
     (["gate.min_drop=0.5"], "gate.min_drop"),
     (["gate.max_runs=2"], "gate.max_runs=2 is not allowed"),
     (["gate.objective=fastest"], "gate.objective='fastest' is not allowed"),
     (["gate.weight=0.3"], "gate.weight=0.3 is not allowed: 1 (the default): only the mixed"),
     (["gate.p0_low=0.95"], "gate.p0_low=0.95 is not allowed: low < high"),
     (["gate.p0_high=1.0"], "gate.p0_high=1.0 is not allowed")],
)  # fmt: skip
def test_a_bad_question_is_refused_naming_the_key(overrides, message):
    with pytest.raises(ParameterError, match=re.escape(message)):
        validate(compose_job("loop", _overrides(EASY) + overrides))


def test_an_unanswerable_question_is_refused_naming_what_to_change():
    # 3 runs at most cannot reach power 0.7 against a drop of 0.3 with any family
    with pytest.raises(ParameterError, match=r"gate\.max_runs=3 is not allowed: larger: no gate"):
        validate(compose_job("loop", _overrides({**EASY, "max_runs": 3})))
    # a concurrent-only gate in a loop that never serves the prior concurrently
    with pytest.raises(ParameterError, match=r"scenario\.concurrent_share=0\.0 is not allowed"):
        validate(compose_job("loop", ["gate=two_sample"]))


def test_an_unknown_key_is_refused_by_the_schema():
    with pytest.raises(ConfigCompositionException, match=r"gate\.power"):
        compose_job("loop", ["gate=prescribed", "gate.power=0.8"])
