"""Typed memory records (seed: loom-procedures.txt): a record store with embeddings,
principals and roles, per-agent serving and the procedural retyping rule. docs/learnings.md.
"""

from procmem_core.memory.access import (
    NO_AGENT,
    READ_EVERY_AGENT,
    ROLES,
    AccessDenied,
    HiddenRecord,
    Principal,
    agent_tag,
    authorize,
    serves_agent,
    tagged_agent,
)
from procmem_core.memory.journal import RowJournal
from procmem_core.memory.records import (
    AGENT_USER,
    HIDDEN_FROM_RECALL,
    MEMORY_TYPES,
    RETYPED_TAG,
    Hit,
    MemoryRecord,
    Written,
)
from procmem_core.memory.retyping import procedure_body
from procmem_core.memory.store import MemoryStore, UnknownRecord

__all__ = [
    "AGENT_USER",
    "HIDDEN_FROM_RECALL",
    "MEMORY_TYPES",
    "NO_AGENT",
    "READ_EVERY_AGENT",
    "RETYPED_TAG",
    "ROLES",
    "AccessDenied",
    "HiddenRecord",
    "Hit",
    "MemoryRecord",
    "MemoryStore",
    "Principal",
    "RowJournal",
    "UnknownRecord",
    "Written",
    "agent_tag",
    "authorize",
    "procedure_body",
    "serves_agent",
    "tagged_agent",
]
