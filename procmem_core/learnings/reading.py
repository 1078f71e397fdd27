"""The read side of ``LearningsQueue``: its candidates in memory and the viewer's reads.

``QueueReads`` holds the candidates (by id and by fingerprint), their counter and the
journal a queue opened on a file writes through; ``get``, ``supporter_rows``, ``list``
and ``quality`` (viewer) read them. ``LearningsQueue`` (``learnings.queue``) adds the
writes, the review and the erasure.
"""

from __future__ import annotations

import builtins

from procmem_core.errors import ParameterError, check_choice, quote
from procmem_core.learnings.candidate import CandidateState, quality
from procmem_core.learnings.records import (
    SOURCE_KINDS,
    STATUSES,
    HiddenLearning,
    Learning,
    Quality,
    Supporter,
    UnknownLearning,
)
from procmem_core.learnings.settings import LearningsSettings
from procmem_core.memory import MemoryStore, Principal
from procmem_core.memory.access import allowed_namespaces
from procmem_core.memory.journal import RowJournal


class QueueReads:
    """The candidates and every read of a learnings queue (see the module doc)."""

    def __init__(
        self, memory: MemoryStore | None = None, settings: LearningsSettings | None = None
    ) -> None:
        if memory is not None and not isinstance(memory, MemoryStore):
            raise ParameterError("memory", memory, "expected a MemoryStore or None")
        self.memory = memory
        # None: the defaults with the environment's setting, as the procedure store
        # reads its strike limit (``PROCMEM_`` or the seed's ``LOOM_`` name)
        self.settings = settings if settings is not None else LearningsSettings.from_env()
        if not isinstance(self.settings, LearningsSettings):
            raise ParameterError("settings", settings, "expected LearningsSettings")
        self._candidates: dict[str, CandidateState] = {}
        self._by_print: dict[str, str] = {}
        self._seq = 0
        self._journal: RowJournal | None = None

    def __len__(self) -> int:
        return len(self._candidates)

    def _live(self, candidate_id: str, principal: Principal | None = None) -> CandidateState:
        """The live candidate; with a ``principal``, ``HiddenLearning`` unless it holds a
        role in the candidate's namespace (the same for a missing id: no existence leak)."""
        c = self._candidates.get(candidate_id) if isinstance(candidate_id, str) else None
        if c is not None and c.hidden:
            c = None
        if principal is not None and (c is None or principal.role_in(c.namespace) is None):
            raise HiddenLearning(candidate_id, principal)
        if c is None:
            raise UnknownLearning(f"no learning {quote(candidate_id)}")
        return c

    def get(self, candidate_id: str, *, principal: Principal) -> Learning:
        principal_of(principal).require("viewer", "learnings.get")
        c = self._live(candidate_id, principal)
        principal.require("viewer", "learnings.get", c.namespace)
        return c.snapshot()

    def supporter_rows(self, candidate_id: str, *, principal: Principal) -> tuple[Supporter, ...]:
        """The candidate's remaining supporter rows, oldest first."""
        principal_of(principal).require("viewer", "learnings.supporters")
        c = self._live(candidate_id, principal)
        principal.require("viewer", "learnings.supporters", c.namespace)
        return tuple(c.rows)

    def list(
        self,
        *,
        principal: Principal,
        status: str = "pending",
        source_kind: str | None = None,
        namespace: str | None = None,
        agent: str | None = None,
    ) -> builtins.list[Learning]:
        """``learnings.list``: candidates by status (pending by default), source kind,
        namespace (or every namespace the principal can read) and agent, oldest first."""
        spaces = allowed_namespaces(principal_of(principal), "viewer", "learnings.list", namespace)
        check_choice("status", status, STATUSES)
        if source_kind is not None:
            check_choice("source_kind", source_kind, SOURCE_KINDS)
        return [
            c.snapshot()
            for c in sorted(self._candidates.values(), key=lambda c: c.seq)
            if not c.hidden
            and c.status == status
            and (source_kind is None or c.source_kind == source_kind)
            and (spaces is None or c.namespace in spaces)
            and (agent is None or c.agent == agent)
        ]

    def quality(
        self,
        *,
        principal: Principal,
        namespace: str | None = None,
        source_kind: str = "conversation",
    ) -> tuple[Quality, ...]:
        """``learnings.quality``: per namespace, counts of every status row of the kind
        (blanked ones included: their decision was made) and the approve ratio."""
        allowed = allowed_namespaces(
            principal_of(principal), "viewer", "learnings.quality", namespace
        )
        check_choice("source_kind", source_kind, SOURCE_KINDS)
        spaces = sorted(
            ns
            for ns in {c.namespace for c in self._candidates.values()}
            | ({namespace} if namespace is not None else set())
            if allowed is None or ns in allowed
        )
        return quality(
            self._candidates.values(), spaces if namespace is None else [namespace], source_kind
        )


def principal_of(principal: Principal) -> Principal:
    """``principal`` when it is a ``Principal``; else a ``ParameterError`` naming it."""
    if not isinstance(principal, Principal):
        raise ParameterError("principal", principal, "expected a Principal (name and role)")
    return principal
