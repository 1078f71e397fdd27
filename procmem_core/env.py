"""Settings read from the environment, under procmem's names (``PROCMEM_*``) and the seed's
(``LOOM_*``): ``PROCMEM_PROCEDURE_STRIKE_LIMIT`` / ``LOOM_PROCEDURE_STRIKE_LIMIT``,
``PROCMEM_REFLECTION_DISTILL_*`` / ``LOOM_REFLECTION_DISTILL_*``,
``PROCMEM_MEMORY_EXTRACT_AGENT_LEARNINGS`` / ``LOOM_MEMORY_EXTRACT_AGENT_LEARNINGS``.

Either name sets the value (a blank value counts as not set); both set to the same value
(as parsed: ``true`` and ``1`` are the same flag) is fine; both set to different values
raises ``EnvConflict`` naming both, before anything is built. Each parser takes the
variable's name (for the error) and its raw text, and raises ``ParameterError`` naming
both when the text does not parse.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from procmem_core.errors import ParameterError, ProcmemError, quote

OWN_PREFIX = "PROCMEM_"
SEED_PREFIX = "LOOM_"
TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")


class EnvConflict(ProcmemError):
    """A ``PROCMEM_`` variable and its seed ``LOOM_`` name are set to different values."""


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


def seed_name(name: str) -> str:
    """The seed's name of a ``PROCMEM_`` variable: ``LOOM_`` + the rest."""
    if not name.startswith(OWN_PREFIX):
        raise ParameterError("name", name, f"expected a variable starting {OWN_PREFIX!r}")
    return SEED_PREFIX + name[len(OWN_PREFIX) :]


def read_env(
    environ: Mapping[str, str] | None,
    name: str,
    parse: Callable[[str, str], Any],
    blank_is_unset: bool = False,
) -> Any | None:
    """The parsed value of ``name`` (a ``PROCMEM_`` variable) or of its seed name; None
    when neither is set (``blank_is_unset``: a blank value counts as not set)."""
    env = os.environ if environ is None else environ
    values = {}
    for variable in (name, seed_name(name)):
        raw = env.get(variable)
        if raw is None or (blank_is_unset and not raw.strip()):
            continue
        values[variable] = (raw, parse(variable, raw))
    if len(values) == 2:
        (own, (own_raw, a)), (seed, (seed_raw, b)) = values.items()
        if a != b:
            raise EnvConflict(
                f"{own}={quote(own_raw)} and {seed}={quote(seed_raw)} are both set, to "
                f"different values; set one of them (or both to the same value)"
            )
    return next(iter(values.values()))[1] if values else None


def from_env(
    environ: Mapping[str, str], names: Mapping[str, tuple[str, Callable[[str, str], Any]]]
) -> dict[str, Any]:
    """``{field: parsed value}`` for every ``field -> (variable, parser)`` set in ``environ``
    under the variable's ``PROCMEM_`` name or its seed ``LOOM_`` name (``read_env``; a
    blank value counts as not set, as for the strike limit)."""
    out = {}
    for field, (variable, parse) in names.items():
        value = read_env(environ, variable, parse, blank_is_unset=True)
        if value is not None:
            out[field] = value
    return out
