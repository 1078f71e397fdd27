"""Settings read from the environment (the seed's ``LOOM_*`` settings as ``PROCMEM_*``).

Each parser takes the variable's name (for the error) and its raw text, and raises
``ParameterError`` naming both when the text does not parse.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from procmem_core.errors import ParameterError

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")


def env_flag(name: str, raw: str) -> bool:
    low = raw.strip().lower()
    if low not in TRUE + FALSE:
        raise ParameterError(name, raw, "expected true/false, 1/0, yes/no or on/off")
    return low in TRUE


def env_int(name: str, raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ParameterError(name, raw, "expected an integer") from None


def env_float(name: str, raw: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise ParameterError(name, raw, "expected a number") from None


def env_text(name: str, raw: str) -> str:
    return raw


def from_env(
    environ: Mapping[str, str], names: Mapping[str, tuple[str, Callable[[str, str], Any]]]
) -> dict[str, Any]:
    """``{field: parsed value}`` for every ``field -> (variable, parser)`` set in ``environ``."""
    out = {}
    for field, (variable, parse) in names.items():
        raw = environ.get(variable)
        if raw is not None:
            out[field] = parse(variable, raw)
    return out
