"""Error types shared by the engine.

Every input check raises a subclass of ``ValueError`` whose message names the field,
the value it got and what is allowed, so a researcher can fix a config without reading
the code.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class ProcmemError(ValueError):
    """Base class of every input error procmem raises."""


class ParameterError(ProcmemError):
    """A parameter is outside its allowed range."""

    def __init__(self, field: str, value: Any, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"{field}={value!r} is not allowed: {allowed}")


def check_probability(
    field: str, value: float, *, open_low: bool = False, open_high: bool = False
) -> float:
    """Return ``value`` as a float if it lies in [0, 1] (ends open on request)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ParameterError(field, value, "expected a number in [0, 1]") from None
    lo_ok = x > 0 if open_low else x >= 0
    hi_ok = x < 1 if open_high else x <= 1
    if not (lo_ok and hi_ok):  # NaN fails both comparisons
        lo = "(" if open_low else "["
        hi = ")" if open_high else "]"
        raise ParameterError(field, value, f"expected a number in {lo}0, 1{hi}")
    return x


def check_int(field: str, value: Any, *, minimum: int = 0, maximum: int | None = None) -> int:
    """Return ``value`` if it is an integer (not a bool) within [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ParameterError(field, value, f"expected an integer >= {minimum}")
    v = int(value)
    if v < minimum or (maximum is not None and v > maximum):
        rng = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ParameterError(field, value, f"expected an integer {rng}")
    return v
