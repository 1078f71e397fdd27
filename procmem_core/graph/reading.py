"""The read side of ``ProcedureStore``: its cache, keys, match, locate and the readers.

``StoreReads`` holds the cache (entries by ``namespace/key``, the match index, the gate
decisions, the grants) and keeps it in step with an SQLite file or a PostgreSQL database
other processes may write (``_refresh``: one ``SELECT`` when nothing changed; ``_sync``:
apply the changes ``Journal.read_changes`` found, ``graph.journal``). ``ProcedureStore``
(``graph.store``) adds the writes.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from procmem_core.errors import ParameterError, check_number, quote
from procmem_core.gates import GateRecord
from procmem_core.graph.access import (
    MAX_NAMESPACE_FAN_OUT,
    check_principal,
    check_scope,
    readable_namespaces,
    require_role,
    resolve_scope,
    scope_namespaces,
)
from procmem_core.graph.entry import ProcedureEntry
from procmem_core.graph.journal import Journal, SyncPoint
from procmem_core.graph.keys import KeyNotText, UnknownProcedure, check_tags
from procmem_core.graph.ledger import RunRecord
from procmem_core.graph.locate import LocateResult, locate_in
from procmem_core.graph.match_request import MatchRequest, check_match_request
from procmem_core.graph.matching import Embedder, HashingEmbedder, MatchIndex
from procmem_core.graph.records import Match, RevisionEntry, StoredProcedure


class StoreReads:
    """The cache and every read of a procedure store (see the module doc)."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder: Embedder = embedder if embedder is not None else HashingEmbedder()
        default = type(self.embedder) is HashingEmbedder  # no runtime Protocol check
        if not default and not isinstance(self.embedder, Embedder):
            raise ParameterError("embedder", embedder, "expected an Embedder (dim, embed(texts))")
        self._entries: dict[str, ProcedureEntry] = {}  # by ref "namespace/key"
        self._by_key: dict[str, list[str]] = {}
        self._index = MatchIndex(self.embedder.dim)
        self._decisions: list[GateRecord] = []
        self._grants: dict[str, dict[str, str]] = {}  # principal -> namespace -> role
        self._last_run_id = 0
        self._journal: Journal | None = None
        self._seen = SyncPoint()

    def __len__(self) -> int:
        self._refresh()
        return len(self._entries)

    # -- the cache ----------------------------------------------------------------

    def _refresh(self) -> None:
        """Bring the cache up to date with the file (nothing to do in memory)."""
        if self._journal is not None and not self._journal.unchanged(self._seen.version):
            with self._journal.reading() as cur:
                self._sync(cur)

    def _sync(self, cur: Any) -> None:
        changes = self._journal.read_changes(cur, self._seen)
        if changes is None:
            return
        for ref in changes.removed:
            self._drop(ref)
            self._seen.rows.pop(ref, None)
        new_runs: dict[str, list[RunRecord]] = {}
        for r in changes.runs:
            new_runs.setdefault(f"{r.namespace}/{r.key}", []).append(r)
        fresh = []
        for ch in changes.entries:
            old = self._entries.get(ch.ref)
            if ch.runs is None and old is not None:
                entry = self._journal.build_entry(ch, old.runs + new_runs.get(ch.ref, []))
                self._entries[ch.ref] = entry
                self._index.set_stats(ch.ref, entry.agg.runs, entry.agg.successes,
                                      entry.status_code)  # fmt: skip
                self._index.set_tools(ch.ref, entry.graph.tools())
            else:
                if old is not None:
                    self._drop(ch.ref)
                fresh.append(self._journal.build_entry(ch, ch.runs or []))
            self._seen.rows[ch.ref] = (ch.version, ch.created)
        if fresh:
            for entry, vector in zip(fresh, self._embed([e.situation for e in fresh]), strict=True):
                self._insert(entry, vector)
        self._decisions.extend(d for _, d in changes.decisions)
        if changes.decisions:
            self._seen.last_decision = changes.decisions[-1][0]
        if changes.runs:
            self._seen.last_run_id = changes.runs[-1].run_id
        self._last_run_id = max(self._last_run_id, self._seen.last_run_id)
        self._grants = {}
        for principal, namespace, role in changes.grants:
            self._grants.setdefault(principal, {})[namespace] = role
        self._seen.version = changes.version

    def _embed(self, situations: builtins.list[str]) -> np.ndarray:
        vectors = np.asarray(self.embedder.embed(situations), dtype=np.float32)
        if vectors.shape != (len(situations), self.embedder.dim):
            raise ParameterError(
                "embedder", self.embedder,
                f"embed() returned shape {vectors.shape}, expected ({len(situations)}, dim)",
            )  # fmt: skip
        return vectors

    def _insert(self, entry: ProcedureEntry, vector: np.ndarray) -> None:
        self._entries[entry.ref] = entry
        self._by_key.setdefault(entry.key, []).append(entry.namespace)
        self._index.add(entry.ref, vector, entry.namespace, entry.graph.tools(), entry.actor)
        self._index.set_stats(entry.ref, entry.agg.runs, entry.agg.successes, entry.status_code)

    def _drop(self, ref: str) -> None:
        entry = self._entries.pop(ref, None)
        if entry is None:
            return
        self._by_key[entry.key].remove(entry.namespace)
        if not self._by_key[entry.key]:
            del self._by_key[entry.key]
        self._index.remove(ref)
        where = (entry.namespace, entry.key)
        self._decisions = [d for d in self._decisions if (d.namespace, d.key) != where]

    def _get(self, key: str) -> ProcedureEntry:
        if not isinstance(key, str):
            raise KeyNotText(key)
        if "/" in key:
            entry = self._entries.get(key)
            if entry is None:
                raise UnknownProcedure(f"no procedure {quote(key)}")
            return entry
        spaces = self._by_key.get(key, [])
        if len(spaces) != 1:
            where = f"held by namespaces {spaces}; use 'namespace/{key}'" if spaces else "unknown"
            raise UnknownProcedure(f"procedure {quote(key)}: {where}")
        return self._entries[f"{spaces[0]}/{key}"]

    def _resolve(
        self, key: str, principal: str | None, operation: str, needed: str | None = None
    ) -> ProcedureEntry:
        """``_get(key)`` as ``principal`` sees the store (None: auth off): a namespace it
        cannot read (or where it lacks the operation's role) raises ``AccessDenied``
        before the key is looked up; a bare key resolves among its readable namespaces."""
        principal = check_principal("principal", principal)
        if principal is None:
            return self._get(key)
        if isinstance(key, str) and "/" in key:
            require_role(principal, key.split("/", 1)[0], self._grants, operation, needed)
            return self._get(key)
        if not isinstance(key, str):
            return self._get(key)  # raises UnknownProcedure naming the bad key
        readable = set(readable_namespaces(principal, self._grants))
        spaces = [ns for ns in self._by_key.get(key, []) if ns in readable]
        if len(spaces) != 1:
            where = f"held by namespaces {spaces}" if spaces else "not in a namespace"
            raise UnknownProcedure(
                f"procedure {quote(key)}: {where} principal {principal!r} can read"
                + ("; use 'namespace/key'" if spaces else "")
            )
        require_role(principal, spaces[0], self._grants, operation, needed)
        return self._entries[f"{spaces[0]}/{key}"]

    # -- readers (``principal``: see ``graph.access``) --------------------------------

    def get(self, key: str, principal: str | None = None) -> StoredProcedure:
        """The procedure's current snapshot."""
        self._refresh()
        return self._resolve(key, principal, "get").snapshot()

    def status(self, key: str, principal: str | None = None) -> str:
        """The procedure's trust status now (``get(key).status``, without the snapshot)."""
        self._refresh()
        return self._resolve(key, principal, "status").status

    def live_revisions(self, key: str, principal: str | None = None) -> tuple[int, int | None]:
        """The graph revisions a run can be recorded against now: the current one and,
        while a revision is pending, its prior's (else None). ``get(key).revision`` and
        ``get(key).pending_revision.prior_revision``, without the snapshot."""
        self._refresh()
        entry = self._resolve(key, principal, "live_revisions")
        return entry.revision, None if entry.held is None else entry.held.revision

    def list(
        self,
        prefix: str | None = None,
        tags: Sequence[str] = (),
        principal: str | None = None,
        namespace: str | None = None,
    ) -> builtins.list[StoredProcedure]:
        """Inventory: procedures whose key starts with ``prefix`` and carry every tag in
        ``tags`` (in ``namespace``, or every namespace the principal can read), sorted by
        (namespace, key)."""
        if prefix is not None and not isinstance(prefix, str):
            raise ParameterError("prefix", prefix, "expected a string or None")
        want = set(check_tags(tags))
        principal = check_principal("principal", principal)
        self._refresh()
        spaces = scope_namespaces("given", namespace, principal, self._grants, 1)
        hits = [
            e.snapshot()
            for e in self._entries.values()
            if (prefix is None or e.key.startswith(prefix))
            and want <= set(e.tags)
            and (spaces is None or e.namespace in spaces)
        ]
        return sorted(hits, key=lambda p: (p.namespace, p.key))

    def runs(self, key: str, principal: str | None = None) -> tuple[RunRecord, ...]:
        """Every ledger row of the procedure, oldest first (every revision's)."""
        self._refresh()
        return tuple(self._resolve(key, principal, "runs").runs)

    def traces(self, key: str, principal: str | None = None) -> tuple[RunRecord, ...]:
        """The last 50 runs on the current graph (its trace window)."""
        self._refresh()
        return tuple(self._resolve(key, principal, "traces").traces)

    def revisions(self, key: str, principal: str | None = None) -> tuple[RevisionEntry, ...]:
        """The procedure's graph history, oldest first."""
        self._refresh()
        return tuple(self._resolve(key, principal, "revisions").history)

    def gate_decisions(
        self, key: str | None = None, principal: str | None = None
    ) -> tuple[GateRecord, ...]:
        """Every gate decision the store made (for one procedure, or all in the namespaces
        the principal can read), in order."""
        principal = check_principal("principal", principal)
        self._refresh()
        if key is None:
            if principal is None:
                return tuple(self._decisions)
            readable = set(readable_namespaces(principal, self._grants))
            return tuple(d for d in self._decisions if d.namespace in readable)
        entry = self._resolve(key, principal, "gate_decisions")
        return tuple(
            d for d in self._decisions if (d.namespace, d.key) == (entry.namespace, entry.key)
        )

    def namespaces_of(self, principal: str) -> tuple[str, ...]:
        """The namespaces ``principal`` may read: those it holds a role in (writing a
        procedure somewhere grants nothing)."""
        principal = check_principal("principal", principal, required=True)
        self._refresh()
        return readable_namespaces(principal, self._grants)

    def roles_of(self, principal: str) -> dict[str, str]:
        """``{namespace: role}`` for every namespace ``principal`` holds a role in."""
        principal = check_principal("principal", principal, required=True)
        self._refresh()
        return dict(sorted(self._grants.get(principal, {}).items()))

    # -- match and locate -----------------------------------------------------------

    def match(
        self,
        situation: str,
        goal: str | None = None,
        recent_tools: Sequence[str] = (),
        top_k: int = 5,
        tool_boost: float = 0.2,
        utility_weight: float = 0.0,
        templates_only: bool = False,
        include_candidates: bool = True,
        include_quarantined: bool = False,
        namespace: str | Sequence[str] | None = None,
        for_agent: str | None = None,
        namespace_scope: str = "given",
        principal: str | None = None,
        fan_out: int = MAX_NAMESPACE_FAN_OUT,
        written_by: str | None = None,
        min_similarity: float | None = None,
    ) -> builtins.list[Match]:
        """Top procedures for a situation (see ``matching.match_scores`` for the score).

        Vectorized over every stored procedure; candidates rank after every other match;
        quarantined ones are dropped unless ``include_quarantined``. Where to search:
        ``namespace_scope="given"`` searches ``namespace`` (a name or a list; None: all),
        ``"all_mine"`` the namespaces ``principal`` can read, at most ``fan_out`` of them
        (``graph.access``). With a ``principal`` only namespaces it can read are searched
        and naming another raises ``AccessDenied``. ``written_by``: only procedures that
        actor wrote. ``min_similarity``: only procedures whose ``similarity`` (the
        situation and goal relevance) reaches it (None: no floor). The same as
        ``match_request(prepare_match(...))`` (``graph.match_request``).
        """
        return self.match_request(
            self.prepare_match(
                situation, goal, recent_tools, top_k, tool_boost, utility_weight,
                templates_only, include_candidates, include_quarantined, namespace,
                for_agent, namespace_scope, principal, fan_out, written_by, min_similarity,
            )
        )  # fmt: skip

    def prepare_match(
        self,
        situation: str,
        goal: str | None = None,
        recent_tools: Sequence[str] = (),
        top_k: int = 5,
        tool_boost: float = 0.2,
        utility_weight: float = 0.0,
        templates_only: bool = False,
        include_candidates: bool = True,
        include_quarantined: bool = False,
        namespace: str | Sequence[str] | None = None,
        for_agent: str | None = None,
        namespace_scope: str = "given",
        principal: str | None = None,
        fan_out: int = MAX_NAMESPACE_FAN_OUT,
        written_by: str | None = None,
        min_similarity: float | None = None,
    ) -> MatchRequest:
        """``match``'s arguments checked, with the situation (and goal) embedded: a
        ``MatchRequest`` that ``match_request`` answers as ``match`` would, each time
        against the store as it is then."""
        top_k = check_match_request(
            situation, goal, recent_tools, top_k, tool_boost, utility_weight, for_agent
        )
        check_principal("written_by", written_by)
        principal = check_principal("principal", principal)
        if min_similarity is not None:
            check_number("min_similarity", min_similarity, minimum=-1.0, maximum=1.0)
        fan_out = check_scope(namespace_scope, namespace, principal, fan_out)  # grants: at match
        q = self.embedder.embed([situation] if goal is None else [situation, goal])
        q.flags.writeable = False  # the request's vectors are read at every match
        return MatchRequest(
            situation, goal, tuple(recent_tools), q[0], None if goal is None else q[1], top_k,
            tool_boost, utility_weight, templates_only, include_candidates,
            include_quarantined, namespace, for_agent, namespace_scope, principal, fan_out,
            written_by, min_similarity,
        )  # fmt: skip

    def match_request(self, request: MatchRequest) -> builtins.list[Match]:
        """The top procedures for a prepared ``request`` (``prepare_match``), ranked in the
        store as it is now: ``match``'s answer for the same arguments."""
        r = request
        self._refresh()
        spaces = resolve_scope(r.namespace_scope, r.namespace, r.principal, self._grants, r.fan_out)
        ranked = self._index.rank(
            r.query, r.goal_query, r.recent_tools, r.top_k, r.tool_boost, r.utility_weight,
            r.templates_only, r.include_candidates, r.include_quarantined, spaces,
            r.written_by, r.min_similarity, r.memo,
        )  # fmt: skip
        entries, keys, for_agent = self._entries, self._index.keys, r.for_agent
        return [
            entries[keys[row]].as_match(score, relevance, rate, for_agent)
            for row, score, relevance, rate in ranked
        ]

    def locate(
        self,
        key: str,
        at: str | None = None,
        recent_path: Sequence[str] | None = None,
        hops: int = 2,
        principal: str | None = None,
        revision: int | None = None,
    ) -> LocateResult:
        """The active node and the transitions up to ``hops`` (1..4) ahead, with the last
        evolve's fail-prone steps and transitions as pitfalls (see ``locate.py``), in the
        current graph or (``revision=``) the pending revision's prior a pack served
        (``Pack.procedure_revisions``, concurrent control), with that graph's evidence."""
        self._refresh()
        entry = self._resolve(key, principal, "locate")
        c = entry.served_state(revision)
        return locate_in(
            entry.key, c.graph, c.agg, entry.traces_of(c), at, recent_path, hops,
            fail_prone=c.fail_prone_steps + c.fail_prone_transitions,
        )  # fmt: skip
