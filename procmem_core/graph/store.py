"""``ProcedureStore``: the graph design's operations (seed: loom-procedures.txt).

add, match, locate, record_run, complete_run (the seed's ``run.complete``), evolve,
revise, fork, list, delete, grant, over procedures stored under
``procedure_<slug of name>`` per namespace. ``ProcedureStore()`` keeps everything in
memory; ``ProcedureStore.open(path)`` keeps a cache of an SQLite file that several
processes may write at once (``graph.sqlite``): every write is one transaction under the
file's write lock that reads the current state it changes.

Keys: a procedure is ``key`` within its ``namespace``. Every method taking ``key``
accepts the bare key when exactly one namespace holds it, or ``"namespace/key"``.
Rules live in pure functions (``graph.findings``, ``graph.status``, ``graph.matching``,
``graph.access``, ``procmem_core.gates``) and state in ``graph.entry`` and
``graph.state``; this class orchestrates them (reads and match in ``graph.reading``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from procmem_core.errors import (
    ParameterError,
    check_bool,
    check_instance,
    check_int,
    check_text,
)
from procmem_core.gates import CostGate, Gate, SPRTGate
from procmem_core.graph.access import check_can_read, check_principal
from procmem_core.graph.entry import ProcedureEntry
from procmem_core.graph.evolve import check_streak_scope, evolve_entry
from procmem_core.graph.graph import ProcedureGraph
from procmem_core.graph.keys import (
    KEY_PREFIX,
    UnknownProcedure,
    check_key,
    check_metadata,
    check_namespace,
    check_tags,
    procedure_key,
    slugify,
)
from procmem_core.graph.ledger import RunRecord, check_run_fields
from procmem_core.graph.reading import StoreReads
from procmem_core.graph.records import EvolveReport, StoredProcedure
from procmem_core.graph.revision import RevisionError, propose_revision
from procmem_core.graph.sqlite import SQLiteJournal
from procmem_core.graph.writes import InMemoryWrite, Write
from procmem_core.locking import thread_safe

__all__ = ["ProcedureStore", "RevisionError", "UnknownProcedure", "slugify"]

STRIKE_LIMIT_ENV = "PROCMEM_PROCEDURE_STRIKE_LIMIT"
DEFAULT_STRIKE_LIMIT = 3


def default_strike_limit() -> int:
    """``PROCMEM_PROCEDURE_STRIKE_LIMIT`` (an integer >= 0; 0 = quarantine off), else 3
    (the seed's ``LOOM_PROCEDURE_STRIKE_LIMIT``)."""
    raw = os.environ.get(STRIKE_LIMIT_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_STRIKE_LIMIT
    try:
        value = int(raw.strip())
    except ValueError:
        raise ParameterError(STRIKE_LIMIT_ENV, raw, "expected an integer >= 0") from None
    return check_int(STRIKE_LIMIT_ENV, value)


@thread_safe()
class ProcedureStore(StoreReads):
    """Procedures, their run ledger and their revisions; in memory or on SQLite.

    Thread-safe (``procmem_core.locking``): every public method holds the store's lock;
    the store calls no other store (a lesson goes to memory through
    ``procmem_core.reflections.complete_run``, after this store's write).

    ``strike_limit``: consecutive failed runs before ``evolve`` quarantines (None: from
    ``PROCMEM_PROCEDURE_STRIKE_LIMIT``, default 3; 0 = off).
    """

    def __init__(self, embedder: Any = None, strike_limit: int | None = None) -> None:
        super().__init__(embedder)
        self.strike_limit = (
            default_strike_limit()
            if strike_limit is None
            else check_int("strike_limit", strike_limit)
        )

    @classmethod
    def open(
        cls,
        path: str | Path,
        embedder: Any = None,
        synchronous: str = "NORMAL",
        busy_timeout: float = 60.0,
        strike_limit: int | None = None,
    ) -> ProcedureStore:
        """A store kept in the SQLite file ``path`` (created if there is no file or a
        zero-byte one, else loaded; a file that is not procmem's raises
        ``StoreFileError`` naming the path, and nothing is written to it).
        ``busy_timeout``: seconds a write waits for another process's write lock."""
        store = cls(embedder, strike_limit)
        store._journal = SQLiteJournal(path, synchronous, busy_timeout)
        try:
            store._refresh()
        except BaseException:
            store.close()
            raise
        return store

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    def __enter__(self) -> ProcedureStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self) -> AbstractContextManager[Write]:
        """One write, under the store's thread lock: in memory, or one SQLite transaction
        under the file's write lock with the cache synced first (see ``graph.writes``)."""
        if self._journal is None:
            return InMemoryWrite(Write(None, self._index), self._seen, self._lock)
        return self._file_write()

    @contextmanager
    def _file_write(self) -> Iterator[Write]:
        w = None
        with self._lock:
            try:
                with self._journal.transaction() as tx:
                    self._sync(tx.cur)
                    w = Write(tx, self._index)
                    yield w
            except BaseException:
                if w is not None:
                    w.restore(self._entries)
                raise
            w.committed(self._seen)
            self._last_run_id = max(self._last_run_id, w.last_run_id)

    def _next_run_id(self, w: Write) -> int:
        run_id = w.tx.next_run_id() if w.tx is not None else self._last_run_id + 1
        self._last_run_id = max(self._last_run_id, run_id)
        return run_id

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
    ) -> StoredProcedure:
        """Register a procedure under ``procedure_<slug of name>`` (or ``key``).

        ``steps`` (2..64 texts) build a linear graph n1 -> n2 -> ... unless ``graph`` (a
        ``ProcedureGraph`` or the seed's JSON shape) is given; with both, the graph is
        the topology and the steps are kept as its reading text. ``candidate=True``
        marks a machine-mined procedure (status "candidate" until its first run).
        ``actor``: the principal writing it. ``key``: an explicit key of the same shape
        (for a name whose slug another procedure already holds).
        """
        key = procedure_key(check_text("name", name)) if key is None else check_key(key)
        check_text("situation", situation)
        namespace = check_namespace(namespace)
        tags = check_tags(tags)
        meta = check_metadata(metadata)
        check_bool("candidate", candidate)
        actor = check_principal("actor", actor)
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

    def fork(self, key: str, namespace: str, actor: str | None = None) -> StoredProcedure:
        """Copy a procedure's shape (graph, steps, situation, tags) into ``namespace``,
        without its evidence: no runs, revision 1, status authored (or candidate).
        ``actor``: the principal forking; it must be able to read the source's namespace
        (``AccessDenied`` otherwise), and it is the copy's actor."""
        self._refresh()
        src = self._get(key)
        namespace = check_namespace(namespace)
        actor = check_principal("actor", actor)
        if actor is not None:
            check_can_read(actor, src.namespace, self.namespaces_of(actor))
        entry = ProcedureEntry.registered(
            f"forked from {src.ref}", src.graph, src.steps, key=src.key, namespace=namespace,
            name=src.name, situation=src.situation, tags=src.tags,
            metadata=dict(src.metadata), candidate=src.candidate, actor=actor,
        )  # fmt: skip
        vector = self._index.emb[self._index.rows[src.ref]].copy()
        if f"{namespace}/{src.key}" in self._entries:
            raise ParameterError("namespace", namespace, f"already holds {src.key!r}")
        return self._insert_new(entry, vector, "namespace", namespace)

    def grant(self, principal: str, namespace: str) -> None:
        """Let ``principal`` read ``namespace`` (``namespace_scope="all_mine"``, ``fork``)."""
        principal = check_principal("principal", principal, required=True)
        namespace = check_namespace(namespace)
        with self._write() as w:
            if w.tx is not None:
                w.tx.grant(principal, namespace)
            self._grants.setdefault(principal, set()).add(namespace)

    def delete(self, key: str) -> None:
        """Remove a procedure with its ledger rows, revisions and gate decisions."""
        with self._write() as w:
            entry = self._get(key)
            if w.tx is not None:
                w.tx.delete(entry.namespace, entry.key)
        self._drop(entry.ref)
        self._seen.rows.pop(entry.ref, None)

    # -- the ledger ---------------------------------------------------------------

    def record_run(
        self,
        key: str,
        path: Sequence[str],
        ok: bool,
        note: str | None = None,
        cost: float | None = None,
        duration_ms: int | None = None,
        tokens: int | None = None,
        agent: str | None = None,
        revision: int | None = None,
    ) -> RunRecord:
        """Append one run to the ledger (one transaction) and return it as stored.

        The run carries the graph revision it was made on: the current one, or
        (``revision=``) the prior graph a pack served while a revision is pending (the
        concurrent-control design). Every node id in ``path`` must be a node of that
        graph; an empty path (``run.complete``) is evidence about no node. A success
        lifts that graph's quarantine at once.
        """
        fields = check_run_fields(path, ok, note, cost, duration_ms, tokens, agent)
        with self._write() as w:
            entry = self._get(key)
            state = self._run_state(entry, revision, fields["path"])
            run = RunRecord(
                run_id=self._next_run_id(w), key=entry.key, namespace=entry.namespace,
                revision=state.revision, **fields,
            )  # fmt: skip
            self._append(w, entry, state, [run])
        return run

    def complete_run(
        self,
        memories_used: Sequence[str],
        ok: bool,
        reflection: str | None = None,
        note: str | None = None,
        cost: float | None = None,
        duration_ms: int | None = None,
        tokens: int | None = None,
        agent: str | None = None,
    ) -> tuple[RunRecord, ...]:
        """The seed's ``run.complete``: one run with an empty path for every procedure key
        in ``memories_used`` (other memory keys are skipped; a procedure listed twice
        gets one run), all in one transaction, each carrying ``reflection`` (the agent's
        lesson, kept on the run record). To also store the lesson as a reflection memory,
        call ``procmem_core.reflections.complete_run(store, ..., memory=)``. An agent that
        calls ``record_run`` for a procedure itself leaves that key out, or the session
        counts twice."""
        if isinstance(memories_used, str) or not isinstance(memories_used, Sequence):
            raise ParameterError("memories_used", memories_used, "expected a list of keys")
        for i, k in enumerate(memories_used):
            check_text(f"memories_used[{i}]", k)
        if reflection is not None:
            check_text("reflection", reflection)
        fields = check_run_fields((), ok, note, cost, duration_ms, tokens, agent)
        wanted = [k for k in memories_used if k.rsplit("/", 1)[-1].startswith(KEY_PREFIX)]
        with self._write() as w:
            entries = {e.ref: e for e in (self._get(k) for k in wanted)}
            runs = []
            for entry in entries.values():
                run = RunRecord(
                    run_id=self._next_run_id(w), key=entry.key, namespace=entry.namespace,
                    revision=entry.revision, reflection=reflection, **fields,
                )  # fmt: skip
                self._append(w, entry, entry.current, [run])
                runs.append(run)
        return tuple(runs)

    def _run_state(self, entry: ProcedureEntry, revision: int | None, path: tuple[str, ...]):
        state = entry.current if revision is None else entry.state_of(revision)
        if state is None:
            held = f" or {entry.held.revision} (the pending prior)" if entry.held else ""
            raise ParameterError(
                "revision", revision, f"expected None, {entry.revision} (current){held}"
            )
        for i, node in enumerate(path):
            if not state.graph.has_node(node):
                raise ParameterError(
                    f"path[{i}]", node, f"expected a node id of {state.graph.node_ids}"
                )
        return state

    @staticmethod
    def _append(w: Write, entry: ProcedureEntry, state: Any, runs: list[RunRecord]) -> None:
        w.guard(entry)
        for run in runs:
            state.fold(run)
            entry.revision_tally(run.revision).add(run)
            entry.runs.append(run)
        w.put(entry)
        w.add_runs(runs)

    # -- evolve and revise -------------------------------------------------------------

    def revise(
        self, key: str, graph: ProcedureGraph | Mapping[str, Any], reason: str, force: bool = False
    ) -> StoredProcedure:
        """Propose a new topology (see ``revision.propose_revision``); later runs carry the
        new revision number and ``evolve`` asks the gates about it."""
        new = ProcedureGraph.coerce(graph)
        check_text("reason", reason)
        check_bool("force", force)
        with self._write() as w:
            entry = w.guard(self._get(key))
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
            entry = w.guard(self._get(key))
            report, records = evolve_entry(entry, min_runs, strike, gate, cost_gate, streak_scope)
            w.put(entry, graph_changed=report.revision_outcome == "reverted")
            w.add_decisions(list(records))
        self._decisions.extend(records)
        return report
