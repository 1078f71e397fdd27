"""``MemoryStore``: typed records with embeddings, in memory or on SQLite.

The record store the seed's memory needs beside procedures (loom-procedures.txt,
"Reflections" and "Learnings review queue"): ``set`` writes a typed record (text,
embedding, tags, actor, namespace, user scope, lineage), ``search`` ranks records by
cosine similarity to a query (``Embedder``: the graph package's, ``HashingEmbedder`` by
default), ``knowledge_search`` reads knowledge rows without the agent filter,
``delete_source`` is ``knowledge.delete`` of a document, ``lineage`` traces a record back
(a promotion carries its candidate id), ``erase_user`` deletes a user's rows and
``set_procedural`` applies the retyping rule (a procedure body goes to the
``ProcedureStore``; any other procedural row is stored as ``semantic``, tagged
``retyped_from:procedural``).

``MemoryStore()`` keeps everything in memory; ``MemoryStore.open(path)`` writes every
change through to the SQLite table ``memory_records`` (``memory.journal``), which may
live in the same file as a ``ProcedureStore``.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from procmem_core.closed import close_journal
from procmem_core.errors import (
    ParameterError,
    check_choice,
    check_int,
    check_text,
    quote,
)
from procmem_core.graph import HashingEmbedder, ProcedureStore
from procmem_core.graph.keys import check_metadata, check_namespace, check_tags
from procmem_core.graph.matching import Embedder
from procmem_core.limits import MAX_RECORD_TEXT, MAX_SITUATION, check_identifier
from procmem_core.locking import thread_safe
from procmem_core.memory.access import (
    READ_EVERY_AGENT,
    HiddenRecord,
    Principal,
    UnknownRecord,
    acting_actor,
    allowed_namespaces,
    authorize,
    authorize_row,
    can_read_record,
    in_namespaces,
    serves_agent,
)
from procmem_core.memory.fields import check_record_fields
from procmem_core.memory.index import VectorIndex
from procmem_core.memory.journal import RowJournal
from procmem_core.memory.records import (
    HIDDEN_FROM_RECALL,
    MEMORY_TYPES,
    PROCEDURAL,
    Hit,
    MemoryRecord,
    Written,
)
from procmem_core.memory.retyping import (
    procedural_text,
    procedure_body,
    retyped_fields,
)

TABLE = "memory_records"


@thread_safe(unlocked=("set_procedural",))
class MemoryStore:
    """Typed records with embeddings; see the module docstring. Thread-safe: every public
    method but ``set_procedural`` (which delegates) runs under the store's lock."""

    def __init__(
        self, embedder: Embedder | None = None, procedures: ProcedureStore | None = None
    ) -> None:
        self.embedder: Embedder = embedder if embedder is not None else HashingEmbedder()
        if not isinstance(self.embedder, Embedder):
            raise ParameterError("embedder", embedder, "expected an Embedder (dim, embed(texts))")
        if procedures is not None and not isinstance(procedures, ProcedureStore):
            raise ParameterError("procedures", procedures, "expected a ProcedureStore or None")
        self.procedures = procedures
        self._records: dict[str, MemoryRecord] = {}
        self._index = VectorIndex(self.embedder)
        self._next = 1
        self._journal: RowJournal | None = None

    @classmethod
    def open(
        cls,
        path: str | Path,
        embedder: Embedder | None = None,
        procedures: ProcedureStore | None = None,
        synchronous: str = "NORMAL",
    ) -> MemoryStore:
        """A store kept in the SQLite file ``path`` (created if there is no file or a
        zero-byte one, else loaded; a file that is not procmem's raises
        ``StoreFileError`` naming the path, and nothing is written to it)."""
        store = cls(embedder, procedures)
        journal = RowJournal(path, "memory", (TABLE,), synchronous=synchronous)
        try:
            records = journal.load(TABLE, MemoryRecord.from_json)
            if records:
                vectors = store._index.embed([r.text for r in records])
                for record, vector in zip(records, vectors, strict=True):
                    store._records[record.record_id] = record
                    store._index.put(record.record_id, vector)
            store._next = int(journal.meta("next_id", 1))
        except BaseException:
            journal.close()
            raise
        store._journal = journal
        return store

    def close(self) -> None:
        """Close the file (later writes raise ``procmem_core.closed.StoreClosed``)."""
        self._journal = close_journal("MemoryStore", self._journal)

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self._records)

    # -- writing ----------------------------------------------------------------------

    def _write(self, upserts: Sequence[MemoryRecord], deleted: Sequence[str] = ()) -> None:
        if self._journal is not None:
            self._journal.commit(
                {TABLE: [(r.record_id, r.seq, r.to_json()) for r in upserts]},
                {TABLE: list(deleted)},
                {"next_id": self._next},
            )

    def set(
        self,
        text: str,
        memory_type: str = "semantic",
        *,
        key: str | None = None,
        namespace: str = "default",
        tags: Sequence[str] = (),
        actor: str | None = None,
        user_id: str | None = None,
        source: str | None = None,
        lineage: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        principal: Principal | None = None,
    ) -> MemoryRecord:
        """Write one record (``memory.set``); a ``key`` already held in the namespace for
        the same user is replaced in place. With a ``principal`` (auth on) it needs the
        writer role in ``namespace`` and is the actor (another ``actor`` is refused).
        ``memory_type="procedural"``: the text is not a procedure body, so it is stored as
        ``semantic``, tagged ``retyped_from:procedural`` (the seed's rule; a procedure body
        goes through ``set_procedural``)."""
        authorize_row(principal, "memory.set", check_namespace(namespace), user_id)
        if memory_type == PROCEDURAL:
            check_text("text", text, MAX_RECORD_TEXT)
            tags, metadata = retyped_fields(text, tags, metadata)
            memory_type = "semantic"
        check_choice("memory_type", memory_type, MEMORY_TYPES)
        fields = check_record_fields(text, key, namespace, tags, actor, user_id, source, lineage)
        meta = check_metadata(metadata)
        fields["actor"] = acting_actor(principal, actor)
        held = self._keyed(fields["namespace"], key, user_id) if key is not None else None
        record_id = held.record_id if held else f"mem_{self._next}"
        seq = held.seq if held else self._next
        record = MemoryRecord(
            record_id=record_id, memory_type=memory_type, metadata=meta, seq=seq, **fields
        )
        vector = self._index.embed([record.text])[0]
        next_before = self._next
        if held is None:
            self._next += 1
        try:
            self._write([record])
        except BaseException:
            self._next = next_before
            raise
        self._records[record_id] = record
        self._index.put(record_id, vector)
        return record

    def _keyed(self, namespace: str, key: str, user_id: str | None) -> MemoryRecord | None:
        for r in self._records.values():
            if (r.namespace, r.key, r.user_id) == (namespace, key, user_id):
                return r
        return None

    def set_procedural(
        self,
        value: Any,
        *,
        name: str | None = None,
        namespace: str = "default",
        tags: Sequence[str] = (),
        actor: str | None = None,
        user_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        principal: Principal | None = None,
    ) -> Written:
        """A procedural row: a procedure body (``{"name", "situation", "steps": [2+]}``)
        is added to the ``ProcedureStore``; anything else is stored as ``semantic``,
        tagged ``retyped_from:procedural`` (seed: "A procedural row written with
        memory.set that is not a procedure body ... is stored as semantic")."""
        authorize_row(principal, "memory.set", check_namespace(namespace), user_id)
        body = procedure_body(value)
        actor = acting_actor(principal, actor)
        if body is None:
            text = procedural_text(value)
            if not text.strip():
                raise ParameterError("value", value, "expected a procedure body or some text")
            retagged, meta = retyped_fields(value, tags, metadata)
            record = self.set(
                text,
                "semantic",
                namespace=namespace,
                tags=retagged,
                actor=actor,
                user_id=user_id,
                metadata=meta,
                principal=principal,
            )
            return Written(kind="memory", record=record)
        if self.procedures is None:
            raise ParameterError(
                "procedures",
                None,
                "a ProcedureStore to hold procedure bodies (MemoryStore(procedures=...))",
            )
        title = value.get("name", name)
        situation, steps = body
        stored = self.procedures.add(
            check_text("name", title),
            situation,
            list(steps),
            tags=[*tags, *value.get("tags", ())],
            metadata=check_metadata(metadata),
            actor=actor,
            namespace=namespace,
        )
        return Written(kind="procedure", procedure=stored)

    def delete(self, record_id: str, principal: Principal | None = None) -> MemoryRecord:
        """Remove one record; returns it. A ``principal`` needs the writer role in the
        record's namespace."""
        authorize(principal, "writer", "memory.delete")
        record = self.get(record_id, principal)
        authorize(principal, "writer", "memory.delete", record.namespace)
        self._write([], [record_id])
        del self._records[record_id]
        self._index.remove(record_id)
        return record

    def delete_source(self, source: str, principal: Principal | None = None) -> int:
        """``knowledge.delete``: remove every record of the document ``source`` (e.g.
        ``learning://<candidate_id>``); returns how many were removed. A principal
        removes only rows in namespaces where it holds the writer role (a pinned token:
        rows its user reads)."""
        spaces = allowed_namespaces(principal, "writer", "knowledge.delete")
        check_identifier("source", source)
        pin = principal.read_user_id if principal is not None else None
        return self._delete_where(
            lambda r: r.source == source and in_namespaces(r, spaces) and r.visible_to(pin)
        )

    def erase_user(self, user_id: str, principal: Principal | None = None) -> int:
        """A user erasure: delete every record under ``user_id`` (a principal: in the
        namespaces where it is admin; a pinned token: only its own user); returns how many."""
        spaces = allowed_namespaces(principal, "admin", "memory.erase_user")
        check_identifier("user_id", user_id)
        if principal is not None and principal.pinned:  # it speaks for its own user only
            principal.acting_user(user_id, "memory.erase_user")
        return self._delete_where(lambda r: r.user_id == user_id and in_namespaces(r, spaces))

    def _delete_where(self, doomed) -> int:
        ids = [i for i, r in self._records.items() if doomed(r)]
        if ids:
            self._write([], ids)
        for i in ids:
            del self._records[i]
            self._index.remove(i)
        return len(ids)

    # -- reading ----------------------------------------------------------------------

    def get(self, record_id: str, principal: Principal | None = None) -> MemoryRecord:
        """One record; a ``principal`` needs a role in its namespace and, pinned, a row its
        user reads, else ``HiddenRecord`` (the same for a missing id: no existence leak)."""
        authorize(principal, "viewer", "memory.get")
        record = self._records.get(record_id) if isinstance(record_id, str) else None
        if principal is not None and not can_read_record(record, principal):
            raise HiddenRecord(record_id, principal)
        if record is None:
            raise UnknownRecord(f"no memory record {quote(record_id)}")
        return record

    def records(
        self,
        memory_type: str | None = None,
        namespace: str | None = None,
        principal: Principal | None = None,
    ) -> builtins.list[MemoryRecord]:
        """Every record (of a type, in a namespace or every namespace the principal can
        read; a pinned token: the rows its user reads), in write order."""
        if memory_type is not None:
            check_choice("memory_type", memory_type, MEMORY_TYPES)
        spaces = allowed_namespaces(principal, "viewer", "memory.records", namespace)
        pin = principal.read_user_id if principal is not None else None
        return sorted(
            (
                r
                for r in self._records.values()
                if (memory_type is None or r.memory_type == memory_type)
                and in_namespaces(r, spaces)
                and r.visible_to(pin)
            ),
            key=lambda r: r.seq,
        )

    def lineage(self, record_id: str, principal: Principal | None = None) -> tuple[str, ...]:
        """``memory.lineage``: the keys the record came from (``learning:<candidate_id>``
        for a promoted learning; runs and procedures for a reflection)."""
        return self.get(record_id, principal).lineage

    def search(
        self,
        query: str,
        memory_type: str | None = None,
        *,
        namespace: str | Sequence[str] | None = None,
        top_k: int = 5,
        agent: str | None = READ_EVERY_AGENT,
        user_id: str | None = None,
        tags: Sequence[str] = (),
        principal: Principal | None = None,
    ) -> builtins.list[Hit]:
        """Records most similar to ``query``, best first (ties: oldest first).

        ``memory_type`` None searches every type except reflections (unfiltered recall
        never returns them); a type searches that type only. ``agent`` is the reading
        agent (``access.serves_agent``); a principal reads as ``acting_agent(agent)`` and,
        when pinned, as its pinned user. ``user_id`` limits user rows to that user's. A
        principal reads only namespaces where it holds a role (a named other one raises).
        """
        return self._search(
            query, memory_type, namespace, top_k, agent, user_id, tags, principal, True
        )

    def _search(
        self, query, memory_type, namespace, top_k, agent, user_id, tags, principal, by_agent
    ) -> builtins.list[Hit]:
        operation = "memory.search" if by_agent else "knowledge.search"
        spaces = allowed_namespaces(principal, "viewer", operation, namespace)
        check_text("query", query, MAX_SITUATION)
        top_k = check_int("top_k", top_k, minimum=1)
        if memory_type is not None:
            check_choice("memory_type", memory_type, MEMORY_TYPES)
        if principal is not None:
            agent = principal.acting_agent(agent) if by_agent else READ_EVERY_AGENT
            user_id = principal.read_user_id if principal.pinned else user_id
        want = set(check_tags(tags))
        sims = self._index.similarities(self._index.embed([query])[0])
        hits = []
        for row, record_id in enumerate(self._index.ids):
            r = self._records[record_id]
            if memory_type is None and r.memory_type in HIDDEN_FROM_RECALL:
                continue
            if memory_type is not None and r.memory_type != memory_type:
                continue
            if spaces is not None and r.namespace not in spaces:
                continue
            if not (want <= set(r.tags) and serves_agent(r.tags, agent) and r.visible_to(user_id)):
                continue
            hits.append(Hit(record=r, score=float(sims[row])))
        hits.sort(key=lambda h: (-h.score, h.record.seq))
        return hits[:top_k]

    def knowledge_search(
        self,
        query: str,
        *,
        namespace: str | Sequence[str] | None = None,
        top_k: int = 5,
        principal: Principal | None = None,
    ) -> builtins.list[Hit]:
        """``knowledge.search``: knowledge rows, not filtered by agent (any agent that can
        read the namespace finds a bot's rule there), but bounded like ``search`` by the
        principal's namespaces and, for a pinned token, its pinned user."""
        return self._search(
            query, "knowledge", namespace, top_k, READ_EVERY_AGENT, None, (), principal, False
        )
