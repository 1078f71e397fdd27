"""A probability or a number is a real number: a string, an array, a bool or a complex
number is refused naming the field, the value and what is allowed (they were converted
with ``float()``, so ``"0.1"`` passed as an explore rate)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from procmem_core import ContextPacker, ProcedureStore
from procmem_core.errors import ParameterError, check_number, check_probability, is_number


@pytest.mark.parametrize(
    "value", ["0.5", b"0.5", np.array([0.5]), np.array(0.5), None, True, np.True_,
              np.complex128(0.5), 0.5 + 0j, [0.5]],
)  # fmt: skip
def test_what_is_not_a_real_number_is_refused(value):
    assert not is_number(value)
    with pytest.raises(ParameterError) as err:
        check_probability("explore_rate", value)
    assert "explore_rate" in str(err.value) and "expected a number in [0, 1]" in str(err.value)
    with pytest.raises(ParameterError, match="drop"):
        check_number("drop", value)


@pytest.mark.parametrize(
    "value, expected", [(0.25, 0.25), (np.float32(0.5), 0.5), (np.float64(0.1), 0.1),
                        (1, 1.0), (np.int64(0), 0.0), (Fraction(1, 4), 0.25)],
)  # fmt: skip
def test_real_numbers_are_taken_as_floats(value, expected):
    got = check_probability("p", value)
    assert type(got) is float and got == expected
    assert check_number("x", value) == expected


def test_a_string_explore_rate_is_refused_before_any_pack():
    store = ProcedureStore()
    with pytest.raises(ParameterError, match="explore_rate"):
        ContextPacker(store, explore_rate="0.1", rng=np.random.default_rng(0))
