"""The gate registry: ``GATES`` (name -> class) and ``make_gate``.

Every concrete gate (a ``Gate`` subclass with a ``name``) registers itself; the registry
finds the modules of ``procmem_core.gates`` by itself, so a new gate is one new module.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from procmem_core.errors import ParameterError, is_number
from procmem_core.gates.base import GATES, Gate
from procmem_core.gates.lattice import EXACT_LATTICE_BYTES, MAX_RUNS_LIMIT

_KINDS = {
    "float": ("a number", lambda v: is_number(v)),
    "int": ("an integer", lambda v: isinstance(v, int | np.integer) and not isinstance(v, bool)),
    "bool": ("true or false", lambda v: isinstance(v, bool | np.bool_)),
    "str": ("a string", lambda v: isinstance(v, str)),
    "None": ("None", lambda v: v is None),
}


def check_types(cls: type, params: dict[str, Any]) -> None:
    """Each value against its field's annotation (``float``, ``int | None``, ...): a
    string where a number belongs (``alpha="0.05"``) is refused naming the field, not
    converted or left to fail later. Annotations of other types are not checked here."""
    fields = {f.name: f.type for f in dataclasses.fields(cls) if f.init}
    for key, value in params.items():
        kinds = [k.strip() for k in str(fields.get(key, "")).split("|")]
        if not kinds or any(k not in _KINDS for k in kinds):
            continue
        if not any(_KINDS[k][1](value) for k in kinds):
            wanted = " or ".join(_KINDS[k][0] for k in kinds)
            shown = f"{wanted}, not {type(value).__name__}"
            raise ParameterError(key, value, f"{shown} (a field of the {cls.name} gate)")


def make_gate(name: str | None = None, **params: Any) -> Gate:
    """Build a gate by name ("sprt", "margin", "cost", ...) with its parameters.

    ``make_gate(**gate.config())`` rebuilds ``gate``. Every value must have its field's
    type (``ParameterError`` naming the field) and ``max_runs`` at most
    ``MAX_RUNS_LIMIT``, the largest whose exact analysis fits ``EXACT_LATTICE_BYTES``.
    """
    cls = GATES.get(name, "name")
    check_types(cls, {k: v for k, v in params.items() if k in _field_names(cls)})
    max_runs = params.get("max_runs")
    if is_number(max_runs) and max_runs > MAX_RUNS_LIMIT:
        raise ParameterError(
            "max_runs",
            max_runs,
            f"an integer <= {MAX_RUNS_LIMIT}: the exact analysis keeps a (max_runs + 1)^2 "
            f"lattice of 8-byte cells per prior rate, {8 * (max_runs + 1) ** 2:.3g} bytes here "
            f"(limit {EXACT_LATTICE_BYTES:.3g})",
        )
    return GATES.build(name, **params)


def _field_names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls) if f.init}


__all__ = ["EXACT_LATTICE_BYTES", "GATES", "MAX_RUNS_LIMIT", "make_gate"]
