"""The fused session pass changes no number: every pinned configuration's metrics and
tables equal, exactly, what the scenario gave before it (``confidence_pins``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "confidence_pins", Path(__file__).with_name("confidence_pins.py")
)
pins = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pins)
DATA = pins.load()
CASES = pins.cases()


def test_fixture_covers_every_case():
    assert sorted(DATA) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_pinned_configuration_equals_the_fixture(name):
    scenario, seed = CASES[name]
    got = pins.record(scenario, seed)
    want = DATA[name]
    assert got["metrics"] == want["metrics"]
    assert sorted(got["tables"]) == sorted(want["tables"])
    for table, columns in want["tables"].items():
        assert got["tables"][table] == columns, table
