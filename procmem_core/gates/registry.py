"""The gate registry: ``GATES`` (name -> class) and ``make_gate``.

Every concrete gate (a ``Gate`` subclass with a ``name``) registers itself; the registry
finds the modules of ``procmem_core.gates`` by itself, so a new gate is one new module.
"""

from __future__ import annotations

from typing import Any

from procmem_core.gates.base import GATES, Gate


def make_gate(name: str | None = None, **params: Any) -> Gate:
    """Build a gate by name ("sprt", "margin", "cost", ...) with its parameters.

    ``make_gate(**gate.config())`` rebuilds ``gate``.
    """
    return GATES.build(name, **params)


__all__ = ["GATES", "make_gate"]
