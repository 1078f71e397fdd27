"""``make_gate`` checks its input before building (issue 31, item 8): a value of the
wrong type is refused naming the field (not converted, not left to fail later), and
``max_runs`` is bounded by the memory of the gate's exact analysis."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.gates import GATES, make_gate
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
