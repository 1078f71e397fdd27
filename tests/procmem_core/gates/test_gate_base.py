"""The gate base, slimmer (issue 24, item 4): ``Gate`` keeps only the verbs callers outside
``gates/`` use, every gate's sentence has one ``explain`` signature, and the fields gates
and the design question share (alpha, beta, min_drop, min_runs, max_runs) are checked in
one place, ``ErrorTargets`` and ``check_runs``."""

from __future__ import annotations

import ast
import inspect
import math
from pathlib import Path

import pytest

from procmem_core.errors import ParameterError
from procmem_core.gates import (
    GATES,
    DesignQuestion,
    DiscordantSPRTGate,
    ErrorTargets,
    Evidence,
    Gate,
    MarginGate,
    MixtureEGate,
    RevisionStats,
    SPRTGate,
    TwoSampleGate,
    make_gate,
)
from procmem_core.gates.llr import sprt_hypotheses, wald_wolfowitz_bound

ROOT = Path(__file__).resolve().parents[3]
GATES_DIR = ROOT / "procmem_core" / "gates"
OWN_TESTS = ROOT / "tests" / "procmem_core" / "gates"
CALLER_ROOTS = ("procmem_core", "simulators", "experiments", "reports", "tests", "benchmarks",
                "examples", "tools")  # fmt: skip
BASE_VERBS = 14
"""Methods and properties ``Gate`` keeps (it had 21): decide, verdict, decide_batch,
decide_evidence, arm_runs, estimate_p0, operating_point, operating_curve,
approximate_operating_point, expected_runs_lower_bound, targets, design_drop, config,
describe."""
FLAGS = {"name", "label", "exact", "veto_only", "compares_arms", "wald_nominal", "designs"}


def _public_verbs() -> set[str]:
    names = {n for n in dir(Gate) if not n.startswith("_")}
    return names - FLAGS


def _attributes_used_outside_gates() -> set[str]:
    """Every ``x.attr`` read or called in the repository's Python outside
    ``procmem_core/gates`` and its own tests (this file included)."""
    used: set[str] = set()
    for root in CALLER_ROOTS:
        for path in (ROOT / root).rglob("*.py"):
            if GATES_DIR in path.parents or OWN_TESTS in path.parents:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            used |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    return used


def test_the_base_keeps_only_the_verbs_callers_outside_gates_use():
    verbs = _public_verbs()
    assert len(verbs) <= BASE_VERBS, sorted(verbs)
    used = _attributes_used_outside_gates()
    unused = sorted((verbs | FLAGS - {"name", "label"}) - used)
    assert unused == [], f"Gate members no caller outside gates/ uses: {unused}"


def test_every_gate_with_a_sentence_explains_with_one_signature():
    with_explain = {name: cls for name, cls in GATES.items() if hasattr(cls, "explain")}
    signatures = {str(inspect.signature(cls.explain)) for cls in with_explain.values()}
    assert signatures == {"(self, reason_code: 'str', evidence: 'Evidence') -> 'str'"}
    without = {name for name, cls in GATES.items() if name not in with_explain}
    assert without == {name for name, cls in GATES.items() if cls.veto_only} == {"cost"}


@pytest.mark.parametrize(
    ("gate", "source"),
    [
        (SPRTGate(), "plugin estimate from prior 16/20"),
        (MarginGate(), "prior 16/20"),
        (DiscordantSPRTGate(), "design_p0"),
        (MixtureEGate(), "design_p0"),
    ],
    ids=lambda x: getattr(x, "name", ""),
)
def test_the_sentence_is_explain_of_the_decisions_evidence(gate, source):
    """``decide``'s reason is ``explain(reason_code, evidence)`` of the numbers it decided
    on: 3 successes in 10 runs; paired with the prior's concurrent runs (9 successes, then
    a failure), 6 worse pairs (the prior succeeded alone) and none better."""
    outcomes = (True, False, False, True, False, False, False, True, False, False)
    prior = RevisionStats(20, 16, concurrent=(True,) * 9 + (False,))
    revision = RevisionStats(len(outcomes), sum(outcomes), outcomes=outcomes)
    d = gate.decide(prior, revision)
    pairs = {"worse": 6, "better": 0} if gate.compares_arms else {}
    evidence = Evidence(10, 3, d.p0, d.statistic, source, **pairs)
    assert d.reason == gate.explain(d.reason_code, evidence)
    assert source in d.reason or gate.compares_arms


def test_the_two_sample_sentence_reads_both_arms():
    gate = TwoSampleGate(design="fixed", ledger=20, final_level=2.0)
    prior, revision = RevisionStats(20, 16), RevisionStats(10, 3)
    d = gate.decide(prior, revision)
    evidence = Evidence(10, 3, 16 / 20, d.statistic, "", prior_runs=20, prior_successes=16)
    assert d.reason == gate.explain(d.reason_code, evidence)
    assert "revision 3/10 vs prior 16/20 (fixed design)" in d.reason


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        ({"alpha": 0.0}, "alpha", "alpha=0.0 is not allowed: expected a number in (0, 1)"),
        ({"alpha": 1.0}, "alpha", "alpha=1.0 is not allowed: expected a number in (0, 1)"),
        ({"beta": -0.1}, "beta", "beta=-0.1 is not allowed: expected a number in (0, 1)"),
        ({"beta": math.nan}, "beta", "beta=nan is not allowed: expected a number in (0, 1)"),
        ({"min_drop": 0.0}, "min_drop", "min_drop=0.0 is not allowed: expected a number in (0, 1)"),
        (
            {"min_drop": "0.15"},
            "min_drop",
            "min_drop='0.15' is not allowed: a number in (0, 1), not str",
        ),
        ({"alpha": True}, "alpha", "alpha=True is not allowed: a number in (0, 1), not bool"),
        (
            {"alpha": 0.6, "beta": 0.5},
            "alpha",
            "alpha=(0.6, 0.5) is not allowed: need alpha + beta < 1",
        ),
    ],
)
def test_error_targets_refuse_bad_input_naming_the_field(kwargs, field, message):
    """The message names the field, quotes the value and says what is allowed."""
    with pytest.raises(ParameterError) as err:
        ErrorTargets(**kwargs)
    assert err.value.field == field
    assert str(err.value).startswith(message)
    # the same check, word for word, refuses a gate's fields and a design question's
    for build in (SPRTGate, TwoSampleGate, DiscordantSPRTGate, DesignQuestion):
        with pytest.raises(ParameterError) as again:
            build(**kwargs)
        assert str(again.value) == str(err.value)
    with pytest.raises(ParameterError) as made:  # make_gate checks the types first
        make_gate("calibrated_sprt", **kwargs)
    assert made.value.field == field


def test_error_targets_hold_the_gate_and_the_question_values():
    t = ErrorTargets(0.1, 0.25, 0.2)
    assert (t.alpha, t.beta, t.min_drop) == (0.1, 0.25, 0.2)
    assert SPRTGate(alpha=0.1, beta=0.25, min_drop=0.2).targets == t
    assert DesignQuestion(alpha=0.1, beta=0.25, min_drop=0.2).targets == t
    assert MixtureEGate(alpha=0.1, min_drop=0.2).targets == ErrorTargets(0.1, None, 0.2)
    assert MarginGate().targets is None and MarginGate().design_drop is None
    assert SPRTGate(min_drop=0.2).design_drop == 0.2
    # the Wald-Wolfowitz bound reads the gate's targets (p0 0.8, p1 = 0.8 - 0.2)
    p0, p1 = (float(x) for x in sprt_hypotheses(0.8, 0.2))
    bound = SPRTGate(alpha=0.1, beta=0.25, min_drop=0.2).expected_runs_lower_bound(0.8)
    assert bound == wald_wolfowitz_bound(p0, p1, 0.1, 0.25)
    assert p1 == pytest.approx(0.6)


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: SPRTGate(min_runs=0), "min_runs"),
        (lambda: MarginGate(min_runs=6, max_runs=5), "max_runs"),
        (lambda: MixtureEGate(max_runs=0), "max_runs"),
        (lambda: DesignQuestion(min_runs=10, max_runs=9), "max_runs"),
    ],
)
def test_the_run_cap_is_checked_once_for_gates_and_the_question(build, field):
    with pytest.raises(ParameterError) as err:
        build()
    assert err.value.field == field


def test_no_gate_checks_the_shared_fields_itself():
    """The five shared fields are checked by name only in ``gates/targets.py``: no gate
    class (nor its family base, nor ``DesignQuestion``) calls a check on one of them."""
    shared = {"alpha", "beta", "min_drop", "min_runs", "max_runs"}
    classes = {cls.__name__ for cls in GATES.values()}
    classes |= {"Gate", "LatticeGate", "PairedGate", "TwoSampleBatch", "DesignQuestion"}
    seen, found = set(), []
    for path in GATES_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ClassDef) and node.name in classes):
                continue
            seen.add(node.name)
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and call.args:
                    first = call.args[0]
                    if isinstance(first, ast.Constant) and first.value in shared:
                        found.append(f"{path.name}:{call.lineno} {first.value}")
    assert seen == classes
    assert found == []


def test_a_gate_given_numpy_scalars_has_a_json_config():
    """``make_gate(max_runs=np.int64(50), alpha=np.float32(0.05))`` kept the numpy scalars
    in ``config()``, which ``json.dumps`` refused (probe31b); the config holds the Python
    numbers they are, and rebuilds the same gate."""
    import json

    import numpy as np

    from procmem_core.gates import make_gate

    for name in ("sprt", "two_sample", "discordant_sprt"):
        gate = make_gate(name=name, max_runs=np.int64(50), alpha=np.float32(0.05))
        config = gate.config()
        assert type(config["max_runs"]) is int and config["max_runs"] == 50
        assert type(config["alpha"]) is float and config["alpha"] == float(np.float32(0.05))
        assert json.loads(json.dumps(config)) == config
        assert make_gate(**config).config() == config
