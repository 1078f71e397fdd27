"""Typed memory records: what the record store holds and hands out.

Seed (loom-procedures.txt): memory is typed. ``semantic`` rows are facts, ``episodic``
rows events, ``knowledge`` rows documents a namespace publishes (a promoted learning is
one, under ``learning://<candidate_id>``), ``reflection`` rows lessons about runs.
A reflection is embedded but left out of unfiltered recall, because it is a hypothesis
about process, not a fact (``HIDDEN_FROM_RECALL``); a search filtered to
``memory_type="reflection"`` returns it. Procedural rows are not records: a procedure
body goes to a ``ProcedureStore``; a procedural row that is not one (a non-empty
situation and at least two steps) is stored as ``semantic``, tagged ``RETYPED_TAG``.

User scope: ``user_id`` None is the namespace's shared zone, ``"-"`` the agent's own row
(``AGENT_USER``); both are read by every user. Any other ``user_id`` is that user's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MEMORY_TYPES = ("semantic", "episodic", "knowledge", "reflection")
HIDDEN_FROM_RECALL = frozenset({"reflection"})
"""Types an unfiltered search never returns."""
PROCEDURAL = "procedural"
RETYPED_TAG = "retyped_from:procedural"
AGENT_USER = "-"


@dataclass(frozen=True, kw_only=True)
class MemoryRecord:
    """One stored record. ``lineage``: the keys it came from (``learning:<id>``, runs,
    procedures); ``source``: the document URI of a knowledge row; ``seq``: write order."""

    record_id: str
    memory_type: str
    namespace: str
    text: str
    key: str | None = None
    tags: tuple[str, ...] = ()
    actor: str | None = None
    user_id: str | None = None
    source: str | None = None
    lineage: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    seq: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "record_id": self.record_id,
            "memory_type": self.memory_type,
            "namespace": self.namespace,
            "text": self.text,
            "key": self.key,
            "tags": list(self.tags),
            "actor": self.actor,
            "user_id": self.user_id,
            "source": self.source,
            "lineage": list(self.lineage),
            "metadata": self.metadata,
            "seq": self.seq,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MemoryRecord:
        return cls(**{**data, "tags": tuple(data["tags"]), "lineage": tuple(data["lineage"])})

    def visible_to(self, user_id: str | None) -> bool:
        """Shared and agent rows are read by everyone; a user's row by that user (a read
        naming no user, an admin's namespace view, sees every row)."""
        return user_id is None or self.user_id in (None, AGENT_USER, user_id)


@dataclass(frozen=True, kw_only=True)
class Hit:
    """A search result: the record and its cosine similarity to the query."""

    record: MemoryRecord
    score: float


@dataclass(frozen=True, kw_only=True)
class Written:
    """What ``set_procedural`` wrote: a procedure (``procedure``) or, for a row that is not
    a procedure body, a retyped semantic record (``record``)."""

    kind: str  # "procedure" or "memory"
    procedure: Any = None  # a graph.StoredProcedure
    record: MemoryRecord | None = None
