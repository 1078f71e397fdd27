"""Reflections (seed: loom-procedures.txt, "Reflections"): lessons about runs stored as
reflection memories, and the distill worker that writes them from contrasting sessions
through the same model client as ``learn``. docs/learnings.md.

Importing this package loads the ``openai`` client (through ``procmem_core.learn``).
"""

from procmem_core.reflections.distill import (
    DISTILL_PROMPT,
    ENV_PREFIX,
    DistillReport,
    DistillSettings,
    DistillWorker,
    Pairing,
    SessionOutcome,
    SessionPair,
    distill_pair,
    distill_request,
    pair_sessions,
    validate_distill,
)
from procmem_core.reflections.ledger import DistillAttempt, DistillLedger
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

__all__ = [
    "DISTILL_PROMPT",
    "ENV_PREFIX",
    "REFLECTION_SOURCES",
    "DistillAttempt",
    "DistillLedger",
    "DistillReport",
    "DistillSettings",
    "DistillWorker",
    "Pairing",
    "Reflection",
    "SessionOutcome",
    "SessionPair",
    "distill_pair",
    "distill_request",
    "pair_sessions",
    "read_reflection",
    "record_reflection",
    "reflections_citing",
    "run_key",
    "session_key",
    "validate_distill",
    "write_reflection",
]
