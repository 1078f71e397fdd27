"""The write side of ``ProcedureStore`` that every write shares, and the run ledger.

``StoreRecording`` adds to ``StoreReads`` (``graph.reading``) one write under the store's
thread lock (``_write``: in memory, or one SQLite transaction under the file's write lock
with the cache synced first; see ``graph.writes``) and the ledger's writes:
``record_run``, ``complete_run`` (the seed's ``run.complete``) and the quarantine releases
they log (``releases``). ``ProcedureStore`` (``graph.store``) adds the other operations.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np

from procmem_core.errors import ParameterError, check_text
from procmem_core.graph.access import check_principal, readable_namespaces
from procmem_core.graph.entry import ProcedureEntry
from procmem_core.graph.keys import KEY_PREFIX
from procmem_core.graph.ledger import RunRecord, check_run_fields
from procmem_core.graph.reading import StoreReads
from procmem_core.graph.writes import InMemoryWrite, Write
from procmem_core.limits import MAX_NOTE
from procmem_core.quarantine.base import (
    QuarantinePolicy,
    QuarantineRelease,
    log_release,
    policy_sees_run,
)


def procedure_keys_used(memories_used: Any) -> list[str]:
    """The procedure keys among ``memories_used`` (the seed's ``run.complete``: a key whose
    last part starts ``procedure_``; other memory keys are skipped), in order, checked to
    be a list of non-empty strings."""
    if isinstance(memories_used, str) or not isinstance(memories_used, Sequence):
        raise ParameterError("memories_used", memories_used, "expected a list of keys")
    for i, k in enumerate(memories_used):
        check_text(f"memories_used[{i}]", k)
    return [k for k in memories_used if k.rsplit("/", 1)[-1].startswith(KEY_PREFIX)]


def _check_revisions(revisions: Any) -> dict[str, int]:
    """``complete_run``'s ``revisions`` as a dict to consume (None: empty), checked to map
    keys to revision numbers."""
    if revisions is None:
        return {}
    if not isinstance(revisions, Mapping):
        raise ParameterError("revisions", revisions, "expected a mapping of keys to revisions")
    for k, v in revisions.items():
        check_text("revisions key", k)
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise ParameterError(f"revisions[{k!r}]", v, "expected a graph revision number")
    return {k: int(v) for k, v in revisions.items()}


class StoreRecording(StoreReads):
    """One write, and the run ledger's writes (see the module doc); ``ProcedureStore``
    sets ``quarantine`` (the exit policy ``record_run`` follows) and ``_releases``."""

    quarantine: QuarantinePolicy
    _releases: list[QuarantineRelease]

    def _write(self) -> AbstractContextManager[Write | InMemoryWrite]:
        """One write, under the store's thread lock: in memory (``InMemoryWrite``), or one
        SQLite transaction under the file's write lock with the cache synced first (see
        ``graph.writes``)."""
        if self._journal is None:
            return InMemoryWrite(self._index, self._lock)
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
        principal: str | None = None,
    ) -> RunRecord:
        """Append one run to the ledger (one transaction) and return it as stored.

        The run carries the graph revision it was made on: the current one, or
        (``revision=``) the prior graph a pack served while a revision is pending (the
        concurrent-control design). Every node id in ``path`` must be a node of that
        graph; an empty path (``run.complete``) is evidence about no node. A run on a
        quarantined graph goes to the quarantine policy first (the seed's: a success
        lifts it at once), and a release is logged (``releases``).
        """
        fields = check_run_fields(path, ok, note, cost, duration_ms, tokens, agent)
        with self._write() as w:
            entry = self._resolve(key, principal, "record_run")
            state = self._run_state(entry, revision, fields["path"])
            f = fields  # by position (``quick_init``'s ``from_values``): no keyword matching
            run = RunRecord.from_values(
                self._next_run_id(w), entry.key, entry.namespace, state.revision, f["path"],
                f["ok"], f["note"], f["cost"], f["duration_ms"], f["tokens"], f["agent"], None,
            )  # fmt: skip
            released = self._append(w, entry, state, run)
        if released:
            self._log_releases(released)
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
        principal: str | None = None,
        session_id: str | None = None,
        revisions: Mapping[str, int] | None = None,
    ) -> tuple[RunRecord, ...]:
        """The seed's ``run.complete``: one run with an empty path for every procedure key
        in ``memories_used`` (other memory keys are skipped; a procedure listed twice
        gets one run), all in one transaction, each carrying ``reflection`` (the agent's
        lesson, kept on the run record). To also store the lesson as a reflection memory,
        call ``procmem_core.reflections.complete_run(store, ..., memory=)``. An agent that
        calls ``record_run`` for a procedure itself leaves that key out, or the session
        counts twice. ``principal`` (auth on) needs the writer role in every listed
        procedure's namespace. ``session_id``: a session of the pack log, rated ``ok`` in
        the same transaction (``rate_session``). ``revisions``: the graph revision a
        procedure was served at, keyed as listed or by its ``namespace/key`` ref (a
        pack's ``dict(zip(pack.procedure_keys, pack.procedure_revisions))``), for a pack
        that served a pending revision's prior (concurrent control); a procedure not in
        it runs on its current graph, as in ``record_run``."""
        wanted = procedure_keys_used(memories_used)
        served = _check_revisions(revisions)
        if reflection is not None:
            check_text("reflection", reflection, MAX_NOTE)
        fields = check_run_fields((), ok, note, cost, duration_ms, tokens, agent)
        with self._write() as w:
            rating = None if session_id is None else self._rated_in(w, session_id, ok, principal)
            entries: dict[str, tuple[ProcedureEntry, int | None]] = {}
            for k in wanted:
                entry = self._resolve(k, principal, "complete_run")
                revision = served.pop(k, None)
                revision = served.pop(entry.ref, revision)
                if revision is None and entry.ref in entries:  # listed twice: one run
                    revision = entries[entry.ref][1]
                entries[entry.ref] = (entry, revision)
            if served:
                name = next(iter(served))
                raise ParameterError(
                    f"revisions[{name!r}]", served[name], "a procedure listed in memories_used"
                )
            runs, released = [], []
            for entry, revision in entries.values():
                state = self._run_state(entry, revision, ())
                run = RunRecord(
                    run_id=self._next_run_id(w), key=entry.key, namespace=entry.namespace,
                    revision=state.revision, reflection=reflection, **fields,
                )  # fmt: skip
                released += self._append(w, entry, state, run)
                runs.append(run)
            if rating is not None:
                self._keep_rating(w, rating)
        self._log_releases(released)
        return tuple(runs)

    def _run_state(self, entry: ProcedureEntry, revision: int | None, path: tuple[str, ...]):
        state = entry.served_state(revision)
        i = state.graph.first_unknown(path)
        if i is not None:
            raise ParameterError(
                f"path[{i}]", path[i], f"expected a node id of {state.graph.node_ids}"
            )
        return state

    def _append(
        self, w: Write | InMemoryWrite, entry: ProcedureEntry, state: Any, run: RunRecord
    ) -> list[QuarantineRelease]:
        """Fold ``run`` into ``state``; a run on a quarantined graph goes to the quarantine
        policy first. Returns the releases, logged once the write has committed."""
        w.guard(entry)
        released = policy_sees_run(self.quarantine, state, run) if state.quarantined else []
        state.fold(run)
        entry.revision_tally(run.revision).add(run)
        entry.runs.append(run)
        w.put(entry)
        w.add_runs([run])
        return released

    def _log_releases(self, released: list[QuarantineRelease]) -> None:
        for r in released:
            log_release(r)
        self._releases.extend(released)

    def releases(
        self, key: str | None = None, principal: str | None = None
    ) -> tuple[QuarantineRelease, ...]:
        """The quarantine releases this store object made (one procedure's, or all in the
        namespaces the principal can read), in order, each with its policy's reason (also
        logged to ``procmem.quarantine``)."""
        principal = check_principal("principal", principal)
        if key is None:
            if principal is None:
                return tuple(self._releases)
            readable = set(readable_namespaces(principal, self._grants))
            return tuple(r for r in self._releases if r.namespace in readable)
        entry = self._resolve(key, principal, "releases")
        return tuple(
            r for r in self._releases if (r.namespace, r.key) == (entry.namespace, entry.key)
        )
