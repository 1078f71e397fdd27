"""``make_gate`` checks its input before building (issue 31, item 8): a value of the
wrong type is refused naming the field (not converted, not left to fail later), and
``max_runs`` is bounded by the memory of the gate's exact analysis."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.gates import GATES, RevisionStats, make_gate
from procmem_core.gates.lattice import verdict_table
from procmem_core.gates.registry import EXACT_LATTICE_BYTES, MAX_RUNS_LIMIT


@pytest.mark.parametrize(
    ("params", "field", "allowed"),
    [
        ({"name": "sprt", "alpha": "0.05"}, "alpha", "a number, not str (a field of the sprt"),
        ({"name": "margin", "margin": "0.05"}, "margin", "a number, not str"),
        ({"name": "sprt", "min_runs": 3.0}, "min_runs", "an integer, not float"),
        ({"name": "sprt", "max_runs": True}, "max_runs", "an integer, not bool"),
        ({"name": "calibrated_sprt", "revert_level": "1"}, "revert_level", "a number or None"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_the_field(params, field, allowed):
    with pytest.raises(ParameterError) as err:
        make_gate(**params)
    assert err.value.field == field and allowed in err.value.allowed


@pytest.mark.parametrize("name", ["calibrated_sprt", "two_sample"])
@pytest.mark.parametrize(
    "levels",
    [{"accept_level": 5.0}, {"revert_level": -5.0}, {"accept_level": 1.0, "revert_level": 1.0}],
)
def test_crossing_boundaries_are_refused_by_both_calibrated_gates(name, levels):
    """No calibration exists for an accept boundary at or above the revert boundary: the
    calibrated SPRT failed with an IndexError deep in ``calibrate`` (or took it)."""
    with pytest.raises(ParameterError) as err:
        make_gate(name=name, ledger=20, max_runs=60, **levels)
    assert err.value.field == "accept_level"
    assert "below revert_level=" in err.value.allowed and "must not cross" in err.value.allowed


def test_max_runs_is_bounded_by_the_memory_of_the_exact_analysis():
    with pytest.raises(ParameterError) as err:
        make_gate(name="sprt", max_runs=10**9)
    assert err.value.field == "max_runs" and f"<= {MAX_RUNS_LIMIT}" in err.value.allowed
    assert 8 * (MAX_RUNS_LIMIT + 1) ** 2 <= EXACT_LATTICE_BYTES < 8 * (MAX_RUNS_LIMIT + 2) ** 2
    gate = make_gate(name="sprt", max_runs=MAX_RUNS_LIMIT)  # the largest allowed is built
    assert gate.max_runs == MAX_RUNS_LIMIT
    # the lattice the bound counts: (max_runs + 1)^2 cells per prior rate
    table = verdict_table(make_gate(name="sprt", max_runs=40).rule, np.array([0.8]), 40)
    assert table.shape == (1, 41, 41)


def test_every_gate_rebuilds_from_its_config():
    for name, cls in GATES.classes().items():
        gate = make_gate(**cls().config())
        assert gate.config() == cls().config(), name


def test_the_ledger_mixture_is_bounded_by_the_same_memory():
    """The exact mixture over a ledger's counts holds ``ledger + 1`` lattices: a prior of
    100,000 runs at max_runs 50 asked for 2.1e9 bytes (and as much again in temporaries;
    a calibrated SPRT's ``decide`` with such a prior, or one built with ``ledger=10**9``,
    was killed for memory). Now a ``ParameterError`` names the field and the largest size."""
    from procmem_core.gates import CalibratedSPRTGate, SPRTGate
    from procmem_core.gates.lattice import check_ledger_size
    from procmem_core.gates.question import DesignQuestion

    cells = 51**2
    largest = EXACT_LATTICE_BYTES // (8 * cells) - 1
    assert largest == 51601 and 8 * (largest + 1) * cells <= EXACT_LATTICE_BYTES
    assert check_ledger_size("ledger", largest, 50) == largest
    for build, field in [
        (lambda: SPRTGate().operating_point(0.7, 0.8, 51602), "prior_runs"),
        (lambda: CalibratedSPRTGate(ledger=10**9), "ledger"),
        (
            lambda: CalibratedSPRTGate().decide(RevisionStats(60000, 48000), RevisionStats(5, 3)),
            "ledger",
        ),
        (lambda: DesignQuestion(ledger=100_000, max_runs=50), "ledger"),
        (lambda: DesignQuestion(ledger_sizes=(20, 10**6), max_runs=50), "ledger_sizes"),
    ]:
        with pytest.raises(ParameterError) as err:
            build()
        assert err.value.field == field
        assert "an integer <= 51601 at max_runs 50" in err.value.allowed
    # the design question's cap has the gates' limit (it named prior_runs=20, "<= -1")
    with pytest.raises(ParameterError) as err:
        DesignQuestion(max_runs=20_000)
    assert err.value.field == "max_runs" and f"<= {MAX_RUNS_LIMIT}" in err.value.allowed
    # below the limit nothing changes: the mixture at 2,000 prior runs, as before
    point = SPRTGate().operating_point(0.7, 0.8, 2000)
    assert point.p_revert == pytest.approx(0.5787053064398691, abs=1e-12)


@pytest.mark.parametrize(
    ("params", "field", "allowed"),
    [
        ({"max_runs": 600}, "max_runs", "an integer <= 490 with a 20-run ledger"),
        ({"ledger": 900, "max_runs": 60}, "ledger", "at most 880 runs at max_runs 60"),
    ],
)
def test_the_design_question_refuses_what_the_two_sample_recursion_cannot_take(
    params, field, allowed
):
    """``design_gate`` answers both two-sample designs at the question's ledger, whose
    exact recursion takes ledger + 2 max_runs <= 1000 outcomes: a question past it ran the
    other families for 2-5 s and then failed naming ``max_runs`` (also for a ledger of 900
    at max_runs 60). Now the question is refused at once, naming the field to change."""
    from procmem_core.gates.question import DesignQuestion

    with pytest.raises(ParameterError) as err:
        DesignQuestion(concurrent=0.5, **params)
    assert err.value.field == field and err.value.allowed.startswith(allowed)
    assert "at most 1000" in err.value.allowed
    assert DesignQuestion(ledger=600, max_runs=200).ledger == 600  # 1000 exactly: allowed


@pytest.mark.parametrize(
    ("params", "field", "allowed"),
    [
        ({"ledger": 10**5}, "ledger", "at most 900 runs at max_runs 50"),
        ({"ledger": 990, "max_runs": 20, "design": "fixed"}, "ledger", "at most 980 runs at"),
        ({"ledger": 0, "max_runs": 600}, "max_runs", "an integer <= 500 with a 0-run ledger"),
        ({"ledger": 30, "max_runs": 1200, "design": "fixed"}, "max_runs", "<= 970 with a 30-"),
        ({"ledger": 2000, "max_runs": 600}, "max_runs", "<= 500, with a ledger of at most 998"),
    ],
)
def test_a_two_sample_gate_too_large_for_its_recursion_names_the_field_at_fault(
    params, field, allowed
):
    """ledger + runs of both arms at most 1,000: a ledger of 100,000 runs was refused as
    'max_runs=50 is not allowed', a value no max_runs could fix. The field named is the
    one at fault, with the largest value allowed beside the other (as the design
    question's check says it: the same rule)."""
    from procmem_core.gates.question import DesignQuestion

    with pytest.raises(ParameterError) as err:
        make_gate(name="two_sample", **params)
    assert err.value.field == field and allowed in err.value.allowed, err.value
    assert "ledger + runs of both arms at most 1000" in err.value.allowed
    with pytest.raises(ParameterError) as asked:
        DesignQuestion(ledger=700)  # both designs: ledger + 2 x max_runs (200)
    assert asked.value.field == "ledger" and "at most 600 runs at max_runs 200" in str(asked.value)
