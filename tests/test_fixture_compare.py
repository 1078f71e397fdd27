"""The fixture tolerance (tools/fixture_compare.py) takes last-bit differences and
nothing more: a count is exact, a float within 1e-12 relative, NaN equal to NaN."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
_spec = importlib.util.spec_from_file_location(
    "fixture_compare", ROOT / "tools" / "fixture_compare.py"
)
compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)


@pytest.mark.parametrize(
    ("got", "want", "ok"),
    [
        (0.003257648381867229, 0.0032576483818672303, True),  # seen across CPUs
        (26.244175696382413, 26.244175696382406, True),
        (0.5, 0.5 * (1 + 2e-12), False),  # past the tolerance
        (0.5, 0.5001, False),
        (4000.0, 4000.0, True),
        (4000.0 * (1 + 1e-15), 4000.0, False),  # a whole number is a count: exact
        (1.0, 1.0 - 2**-53, True),  # a non-integral stored value near 1 takes the tolerance
        (0.0, 0.0, True),
        (1e-310, 0.0, False),  # stored 0 is a count of nothing: exact
        (math.nan, None, True),
        (None, math.nan, True),
        (0.1, None, False),
        (None, 0.1, False),
        ("accept", "accept", True),
        ("accept", "revert", False),
        (True, True, True),
        (math.inf, math.inf, True),
        (1e308, math.inf, False),
    ],
)
def test_close(got, want, ok):
    assert compare.close(got, want) is ok


def test_mismatches_name_the_key_and_a_missing_key():
    want = {"a": 0.25, "b": 3.0, "c": 0.1}
    got = {"a": 0.25 * (1 + 1e-15), "b": 4.0}
    assert compare.mismatches(got, want) == {"b": (4.0, 3.0), "c": (None, 0.1)}


def test_column_mismatches_give_rows_and_lengths():
    assert compare.column_mismatches([1.0, 0.2, None], [1.0, 0.2 + 1e-17, None]) == []
    assert compare.column_mismatches([1.0, 0.3], [1.0, 0.2]) == [(1, 0.3, 0.2)]
    assert compare.column_mismatches([1.0], [1.0, 2.0]) == [(-1, 1, 2)]
