"""Error types and the input checks shared by the engine.

Every input check raises a subclass of ``ValueError`` whose message names the field,
the value it got and what is allowed, so a researcher can fix a config without reading
the code. Each kind of check exists once, here.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np


class ProcmemError(ValueError):
    """Base class of every input error procmem raises."""


QUOTE_LIMIT = 80
"""An error quotes at most this many characters of a bad value's ``repr``."""


def quote(value: Any, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)``, cut to its first ``limit`` characters (with the full length said)
    so an error never echoes a huge or hostile input back."""
    text = repr(value)
    if len(text) <= limit:
        return text
    size = f"{len(value)} characters" if isinstance(value, str | bytes) else "long"
    return f"{text[:limit]}... ({size})"


class ParameterError(ProcmemError):
    """A parameter is outside its allowed range (the message quotes a short prefix)."""

    def __init__(self, field: str, value: Any, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"{field}={quote(value)} is not allowed: {allowed}")


class AccessDenied(ProcmemError):
    """A principal asked for a namespace it cannot read, or an operation its role in that
    namespace does not allow; nothing was read or changed."""


def is_number(value: Any) -> bool:
    """A real number (``numbers.Real``: int, float, Fraction, a real numpy scalar), not a
    bool; not a string, an array or a complex number."""
    if type(value) is float or type(value) is int:  # the common case, without the unions
        return True
    return not isinstance(value, bool | np.bool_) and isinstance(value, numbers.Real)


def check_number(
    field: str,
    value: Any,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    open_low: bool = False,
    finite: bool = True,
) -> float:
    """Return ``value`` as a float if it is a number (finite unless ``finite=False``, never
    NaN) within ``[minimum, maximum]`` (``(minimum, ...`` with ``open_low``)."""
    lo = "" if minimum is None else (f"> {minimum:g}" if open_low else f">= {minimum:g}")
    hi = "" if maximum is None else f"<= {maximum:g}"
    bounds = " and ".join(b for b in (lo, hi) if b)
    allowed = ("a finite number" if finite else "a number") + (f" {bounds}" if bounds else "")
    if not is_number(value):
        raise ParameterError(field, value, f"expected {allowed}")
    x = float(value)
    if math.isnan(x):
        raise ParameterError(field, value, f"expected {allowed}, not NaN")
    if finite and math.isinf(x):
        raise ParameterError(field, value, f"expected {allowed}")
    too_low = minimum is not None and (x <= minimum if open_low else x < minimum)
    if too_low or (maximum is not None and x > maximum):
        raise ParameterError(field, value, f"expected {allowed}")
    return x


def check_probability(
    field: str, value: float, *, open_low: bool = False, open_high: bool = False
) -> float:
    """Return ``value`` as a float if it lies in [0, 1] (ends open on request)."""
    if type(value) is float:  # the common case, without the unions
        x = value
    elif is_number(value):
        x = float(value)
    else:  # a bool, a string ("0.5"), an array, None: not a number
        raise ParameterError(field, value, _probability_range(open_low, open_high))
    lo_ok = x > 0 if open_low else x >= 0
    hi_ok = x < 1 if open_high else x <= 1
    if not (lo_ok and hi_ok):  # NaN fails both comparisons
        raise ParameterError(field, value, _probability_range(open_low, open_high))
    return x


def _probability_range(open_low: bool, open_high: bool) -> str:
    lo = "(" if open_low else "["
    hi = ")" if open_high else "]"
    return f"expected a number in {lo}0, 1{hi}"


def check_int(field: str, value: Any, *, minimum: int = 0, maximum: int | None = None) -> int:
    """Return ``value`` if it is an integer (not a bool) within [minimum, maximum]."""
    if type(value) is int:  # the common case, without the unions (a bool is not an int here)
        v = value
    elif isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise ParameterError(field, value, f"expected an integer >= {minimum}")
    else:
        v = int(value)
    if v < minimum or (maximum is not None and v > maximum):
        rng = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ParameterError(field, value, f"expected an integer {rng}")
    return v


def check_text(field: str, value: Any, limit: int | None = None) -> str:
    """Return ``value`` if it is a string with something other than whitespace (and at
    most ``limit`` characters when a limit is given)."""
    if not isinstance(value, str) or not value.strip():
        raise ParameterError(field, value, "expected a non-empty string")
    if limit is not None and len(value) > limit:
        raise ParameterError(field, value, f"expected at most {limit} characters")
    return value


def check_bool(field: str, value: Any) -> bool:
    """Return ``value`` if it is True or False (numpy bools included)."""
    if not isinstance(value, bool | np.bool_):
        raise ParameterError(field, value, "expected True or False")
    return bool(value)


def check_choice(field: str, value: Any, choices: tuple[str, ...] | list[str]) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if value not in tuple(choices):
        raise ParameterError(field, value, f"one of {tuple(choices)}")
    return value


def check_instance(field: str, value: Any, cls: type | tuple[type, ...]) -> Any:
    """Return ``value`` if it is an instance of ``cls`` (a class or a tuple of them)."""
    if not isinstance(value, cls):
        classes = cls if isinstance(cls, tuple) else (cls,)
        names = " or ".join(f"{c.__module__}.{c.__name__}" for c in classes)
        raise ParameterError(field, value, f"expected a {names}")
    return value
