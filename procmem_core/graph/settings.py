"""The procedure store's setting from the environment: the strike limit (seed: "Settings",
``LOOM_PROCEDURE_STRIKE_LIMIT``, default 3; 0 = off), read under procmem's name
``PROCMEM_PROCEDURE_STRIKE_LIMIT`` or the seed's (``procmem_core.env``: both set to
different values is refused naming both)."""

from __future__ import annotations

from procmem_core.env import read_env, seed_name
from procmem_core.errors import ParameterError, check_int

STRIKE_LIMIT_ENV = "PROCMEM_PROCEDURE_STRIKE_LIMIT"
SEED_STRIKE_LIMIT_ENV = seed_name(STRIKE_LIMIT_ENV)
DEFAULT_STRIKE_LIMIT = 3


def _strike_limit(name: str, raw: str) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise ParameterError(name, raw, "expected an integer >= 0") from None
    return check_int(name, value)


def default_strike_limit() -> int:
    """``PROCMEM_PROCEDURE_STRIKE_LIMIT`` or ``LOOM_PROCEDURE_STRIKE_LIMIT`` (an integer
    >= 0; 0 = quarantine off; blank = not set), else 3 (the seed's default)."""
    value = read_env(None, STRIKE_LIMIT_ENV, _strike_limit, blank_is_unset=True)
    return DEFAULT_STRIKE_LIMIT if value is None else value
