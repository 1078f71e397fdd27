"""Reflections (seed: loom-procedures.txt, "Reflections"): lessons about runs stored as
reflection memories, and the distill worker that writes them from contrasting sessions
through the same model client as ``learn``. docs/learnings.md.

The worker's names (``DistillWorker``, ``distill_pair``, ...) are imported on first use:
they load the ``openai`` client, so ``import procmem_core.reflections`` does not.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from procmem_core.reflections.completion import complete_run
from procmem_core.reflections.ledger import DistillAttempt, DistillLedger
from procmem_core.reflections.pairing import Pairing, SessionOutcome, SessionPair, pair_sessions
from procmem_core.reflections.records import (
    REFLECTION_SOURCES,
    Reflection,
    read_reflection,
    record_reflection,
    reflections_citing,
    run_key,
    session_key,
    write_reflection,
)
from procmem_core.reflections.settings import ENV_PREFIX, MATCH_ON, DistillSettings

_LAZY = {
    name: "procmem_core.reflections.distill"
    for name in (
        "DISTILL_PROMPT",
        "DistillReport",
        "DistillWorker",
        "distill_pair",
        "distill_request",
        "validate_distill",
    )
}


def __getattr__(name: str) -> Any:
    """The worker's names, imported on first use (they load the ``openai`` client)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'procmem_core.reflections' has no attribute {name!r}")
    return getattr(import_module(module), name)


__all__ = [
    "ENV_PREFIX",
    "MATCH_ON",
    "REFLECTION_SOURCES",
    "DistillAttempt",
    "DistillLedger",
    "DistillSettings",
    "Pairing",
    "Reflection",
    "SessionOutcome",
    "SessionPair",
    "complete_run",
    "pair_sessions",
    "read_reflection",
    "record_reflection",
    "reflections_citing",
    "run_key",
    "session_key",
    "write_reflection",
    *_LAZY,
]
