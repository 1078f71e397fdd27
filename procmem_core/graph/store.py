"""``ProcedureStore``: the graph design's operations (seed: loom-procedures.txt).

add, match, locate, record_run, complete_run (the seed's ``run.complete``), evolve,
revise, fork, list, delete, grant, and the pack log (``log_pack``, ``rate_session``,
``pack_log``: ``graph.packlog``), over procedures stored under
``procedure_<slug of name>`` per namespace. ``ProcedureStore()`` keeps everything in
memory; ``ProcedureStore.open(path)`` keeps a cache of an SQLite file (``graph.sqlite``)
or of a PostgreSQL database (``open("postgresql://...")``, ``graph.postgres``) that
several processes may write at once: every write is one transaction under the store's
write lock that reads the current state it changes.

Keys: a procedure is ``key`` within its ``namespace``. Every method taking ``key``
accepts the bare key when exactly one namespace holds it, or ``"namespace/key"``.
Rules live in pure functions (``graph.findings``, ``graph.status``, ``graph.matching``,
``graph.access``, ``procmem_core.gates``) and state in ``graph.entry`` and
``graph.state``; this class orchestrates them (reads and match in ``graph.reading``; one
write and the run ledger's writes, ``record_run`` and ``complete_run``, in
``graph.recording``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from procmem_core.closed import close_journal
from procmem_core.errors import (
    ParameterError,
    check_bool,
    check_instance,
    check_int,
    check_text,
)
from procmem_core.gates import CostGate, Gate, SPRTGate
from procmem_core.graph.access import (
    acting_actor,
    check_principal,
    check_role,
    require_role,
)
from procmem_core.graph.entry import ProcedureEntry
from procmem_core.graph.evolve import check_streak_scope, evolve_entry
from procmem_core.graph.graph import ProcedureGraph
from procmem_core.graph.keys import (
    UnknownProcedure,
    check_key,
    check_metadata,
    check_namespace,
    check_tags,
    procedure_key,
    slugify,
)
from procmem_core.graph.packlog import PackLog
from procmem_core.graph.postgres import PostgresJournal, is_uri
from procmem_core.graph.recording import StoreRecording
from procmem_core.graph.records import EvolveReport, StoredProcedure
from procmem_core.graph.revision import RevisionError, propose_revision
from procmem_core.graph.settings import STRIKE_LIMIT_ENV, default_strike_limit
from procmem_core.graph.sqlite import SQLiteJournal
from procmem_core.limits import MAX_NAME, MAX_NOTE, MAX_SITUATION
from procmem_core.locking import thread_safe
from procmem_core.quarantine.base import QuarantinePolicy, QuarantineRelease
from procmem_core.quarantine.seed import SeedPolicy

__all__ = [
    "STRIKE_LIMIT_ENV",
    "ProcedureStore",
    "RevisionError",
    "UnknownProcedure",
    "default_strike_limit",
    "slugify",
]


@thread_safe()
class ProcedureStore(PackLog, StoreRecording):
    """Procedures, their run ledger and their revisions; in memory, on SQLite or on
    PostgreSQL.

    Thread-safe (``procmem_core.locking``): every public method holds the store's lock;
    the store calls no other store (a lesson goes to memory through
    ``procmem_core.reflections.complete_run``, after this store's write).

    ``strike_limit``: consecutive failed runs before ``evolve`` quarantines (None: from
    ``PROCMEM_PROCEDURE_STRIKE_LIMIT`` or ``LOOM_PROCEDURE_STRIKE_LIMIT``, default 3;
    0 = off; ``graph.settings``). ``quarantine``: the exit policy (``procmem_core.quarantine``;
    None: the seed's, a success lifts it), which ``record_run`` and ``ContextPacker`` both
    follow; ``releases()`` lists its releases.
    """

    def __init__(
        self,
        embedder: Any = None,
        strike_limit: int | None = None,
        quarantine: QuarantinePolicy | None = None,
    ) -> None:
        super().__init__(embedder)
        self.strike_limit = (
            default_strike_limit()
            if strike_limit is None
            else check_int("strike_limit", strike_limit)
        )
        self.quarantine = SeedPolicy() if quarantine is None else quarantine
        check_instance("quarantine", self.quarantine, QuarantinePolicy)
        self._releases: list[QuarantineRelease] = []
        self._packs = {}  # the pack log in memory (graph.packlog); on SQLite, its table

    @classmethod
    def open(
        cls,
        path: str | Path,
        embedder: Any = None,
        synchronous: str = "NORMAL",
        busy_timeout: float = 60.0,
        strike_limit: int | None = None,
        quarantine: QuarantinePolicy | None = None,
    ) -> ProcedureStore:
        """A store kept in the SQLite file ``path`` (created if there is no file or a
        zero-byte one, else loaded; a file that is not procmem's raises
        ``StoreFileError`` naming the path, and nothing is written to it), or in the
        PostgreSQL database a ``postgresql://`` URI names (``graph.postgres``; psycopg 3,
        the ``postgres`` extra). ``busy_timeout``: seconds a write waits for another
        process's write lock."""
        store = cls(embedder, strike_limit, quarantine)
        if is_uri(path):
            store._journal = PostgresJournal(path, synchronous, busy_timeout)
        else:
            store._journal = SQLiteJournal(path, synchronous, busy_timeout)
        try:
            store._refresh()
        except BaseException:
            store.close()
            raise
        return store

    def close(self) -> None:
        """Close the file or database (``procmem_core.closed``: a later call raises
        ``StoreClosed``); nothing to do in memory."""
        self._journal = close_journal("ProcedureStore", self._journal)

    def __enter__(self) -> ProcedureStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- add, fork, grant, delete -----------------------------------------------------

    def add(
        self,
        name: str,
        situation: str,
        steps: Sequence[str] | None = None,
        graph: ProcedureGraph | Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        namespace: str = "default",
        candidate: bool = False,
        actor: str | None = None,
        key: str | None = None,
        principal: str | None = None,
    ) -> StoredProcedure:
        """Register a procedure under ``procedure_<slug of name>`` (or ``key``).

        ``steps`` (2..64 texts) build a linear graph n1 -> n2 -> ... unless ``graph`` (a
        ``ProcedureGraph`` or the seed's JSON shape) is given; with both, the graph is
        the topology and the steps are kept as its reading text. ``candidate=True``
        marks a machine-mined procedure (status "candidate" until its first run).
        ``actor``: who wrote it (a label with auth off). ``principal`` (auth on): the
        caller, who needs the writer role in ``namespace`` and is the actor (another
        ``actor`` is refused). ``key``: an explicit key of the same shape (for a name
        whose slug another procedure already holds). Caps: ``procmem_core.limits``.
        """
        name = check_text("name", name, MAX_NAME)
        key = procedure_key(name) if key is None else check_key(key)
        check_text("situation", situation, MAX_SITUATION)
        namespace = check_namespace(namespace)
        tags = check_tags(tags)
        meta = check_metadata(metadata)
        check_bool("candidate", candidate)
        principal = check_principal("principal", principal)
        actor = acting_actor(principal, actor)
        self._refresh()
        require_role(principal, namespace, self._grants, "add")
        if steps is None and graph is None:
            raise ParameterError("steps", None, "give steps (2..64 texts) or a graph")
        built = ProcedureGraph.from_steps(steps) if steps is not None else None
        if graph is not None:
            built = ProcedureGraph.coerce(graph)
        step_texts = tuple(steps) if steps is not None else tuple(
            built.node(n).label() for n in built.reading_order()
        )  # fmt: skip
        entry = ProcedureEntry.registered(
            "registered", built, step_texts, key=key, namespace=namespace, name=name,
            situation=situation, tags=tags, metadata=meta, candidate=candidate, actor=actor,
        )  # fmt: skip
        return self._insert_new(entry, self._embed([situation])[0], "name", name)

    def _insert_new(
        self, entry: ProcedureEntry, vector: np.ndarray, field: str, value: Any
    ) -> StoredProcedure:
        with self._write() as w:
            if entry.ref in self._entries:
                raise ParameterError(
                    field, value, f"key {entry.key!r} already exists in {entry.namespace!r}"
                )
            w.put(entry)
        self._insert(entry, vector)
        return entry.snapshot()

    def fork(
        self, key: str, namespace: str, actor: str | None = None, principal: str | None = None
    ) -> StoredProcedure:
        """Copy a procedure's shape (graph, steps, situation, tags) into ``namespace``,
        without its evidence: no runs, revision 1, status authored (or candidate).
        ``principal`` (``actor``: its older name here) needs the viewer role in the
        source's namespace and the writer role in ``namespace``; it is the copy's actor."""
        namespace = check_namespace(namespace)
        principal = check_principal("principal", principal)
        actor = acting_actor(actor if principal is None else principal, actor)
        self._refresh()
        require_role(actor, namespace, self._grants, "fork")
        src = self._resolve(key, actor, "fork", needed="viewer")
        entry = ProcedureEntry.registered(
            f"forked from {src.ref}", src.graph, src.steps, key=src.key, namespace=namespace,
            name=src.name, situation=src.situation, tags=src.tags,
            metadata=dict(src.metadata), candidate=src.candidate, actor=actor,
        )  # fmt: skip
        vector = self._index.emb[self._index.rows[src.ref]].copy()
        if f"{namespace}/{src.key}" in self._entries:
            raise ParameterError("namespace", namespace, f"already holds {src.key!r}")
        return self._insert_new(entry, vector, "namespace", namespace)

    def grant(
        self, principal: str, namespace: str, role: str = "viewer", by: str | None = None
    ) -> None:
        """Give ``principal`` the ``role`` (viewer, writer or admin) in ``namespace``,
        replacing the role it held there. ``by``: the granting principal, who needs the
        admin role in ``namespace`` (None: the operator, auth off)."""
        principal = check_principal("principal", principal, required=True)
        namespace = check_namespace(namespace)
        role = check_role(role)
        by = check_principal("by", by)
        with self._write() as w:
            require_role(by, namespace, self._grants, "grant")
            if w.tx is not None:
                w.tx.grant(principal, namespace, role)
            self._grants.setdefault(principal, {})[namespace] = role

    def delete(self, key: str, principal: str | None = None) -> None:
        """Remove a procedure with its ledger rows, revisions and gate decisions."""
        with self._write() as w:
            entry = self._resolve(key, principal, "delete")
            if w.tx is not None:
                w.tx.delete(entry.namespace, entry.key)
        self._drop(entry.ref)
        self._seen.rows.pop(entry.ref, None)

    # -- evolve and revise -------------------------------------------------------------

    def revise(
        self,
        key: str,
        graph: ProcedureGraph | Mapping[str, Any],
        reason: str,
        force: bool = False,
        principal: str | None = None,
    ) -> StoredProcedure:
        """Propose a new topology (see ``revision.propose_revision``); later runs carry the
        new revision number and ``evolve`` asks the gates about it."""
        new = ProcedureGraph.coerce(graph)
        check_text("reason", reason, MAX_NOTE)
        check_bool("force", force)
        with self._write() as w:
            entry = w.guard(self._resolve(key, principal, "revise"))
            last = entry.runs[-1].run_id if entry.runs else 0
            propose_revision(entry, new, reason, force, last)
            w.put(entry, graph_changed=True)
        return entry.snapshot()

    def evolve(
        self,
        key: str,
        min_runs: int = 3,
        strike_limit: int | None = None,
        gate: Gate | None = None,
        cost_gate: Gate | None = None,
        streak_scope: str = "revision",
        principal: str | None = None,
    ) -> EvolveReport:
        """Fold the runs newer than the watermark and update what the ledger shows.

        See ``graph.evolve``; the gates default to ``SPRTGate()`` and ``CostGate()``,
        ``strike_limit`` to the store's (0 = no quarantine), ``streak_scope`` to
        "revision" (a graph's own trailing failures; "ledger": the literal reading).
        """
        min_runs = check_int("min_runs", min_runs, minimum=1)
        strike = self.strike_limit if strike_limit is None else strike_limit
        strike = check_int("strike_limit", strike)
        gate = SPRTGate() if gate is None else gate
        cost_gate = CostGate() if cost_gate is None else cost_gate
        check_instance("gate", gate, Gate)
        check_instance("cost_gate", cost_gate, Gate)
        check_streak_scope(streak_scope)
        with self._write() as w:
            entry = w.guard(self._resolve(key, principal, "evolve"))
            report, records = evolve_entry(
                entry, min_runs, strike, gate, cost_gate, streak_scope,
                not self.quarantine.lifts_below_limit,
            )  # fmt: skip
            w.put(entry, graph_changed=report.revision_outcome == "reverted")
            w.add_decisions(list(records))
        self._decisions.extend(records)
        return report
