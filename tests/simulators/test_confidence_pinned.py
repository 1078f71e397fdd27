"""The fused session pass changes no number: every pinned configuration's metrics and
tables equal what the scenario gave before it (``confidence_pins``).

Floats compare at a relative tolerance of 1e-12 and whole numbers (counts, states)
exactly (``tools/fixture_compare.close``): numpy picks its summation kernels by CPU, so
a double can differ in its last bits on another machine (4e-16 relative seen); on one
machine the numbers are identical run to run."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "confidence_pins", Path(__file__).with_name("confidence_pins.py")
)
pins = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pins)
_cspec = importlib.util.spec_from_file_location(
    "fixture_compare", pins.ROOT / "tools" / "fixture_compare.py"
)
compare = importlib.util.module_from_spec(_cspec)
_cspec.loader.exec_module(compare)
DATA = pins.load()
CASES = pins.cases()


def test_fixture_covers_every_case():
    assert sorted(DATA) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_pinned_configuration_equals_the_fixture(name):
    scenario, seed = CASES[name]
    got = pins.record(scenario, seed)
    want = DATA[name]
    assert sorted(got["metrics"]) == sorted(want["metrics"])
    assert not compare.mismatches(got["metrics"], want["metrics"])
    assert sorted(got["tables"]) == sorted(want["tables"])
    for table, columns in want["tables"].items():
        assert sorted(got["tables"][table]) == sorted(columns), table
        for col, values in columns.items():
            assert not compare.column_mismatches(got["tables"][table][col], values), (table, col)
