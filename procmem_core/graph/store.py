"""``ProcedureStore``: the graph design's operations (seed: loom-procedures.txt).

add, match, locate, record_run, evolve, revise, fork, list, delete, over procedures
stored under ``procedure_<slug of name>`` per namespace. ``ProcedureStore()`` keeps
everything in memory; ``ProcedureStore.open(path)`` writes every operation through to
SQLite in one transaction (``graph.sqlite``), so a reopened store shows every
procedure, revision, run and gate decision.

Keys: a procedure is ``key`` within its ``namespace``. Every method taking ``key``
accepts the bare key when exactly one namespace holds it, or ``"namespace/key"``.
Rules live in pure functions (``graph.findings``, ``graph.status``, ``graph.matching``,
``procmem_core.gates``) and state in ``graph.entry``; this class orchestrates them.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
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
from procmem_core.gates import CostGate, Gate, GateRecord, SPRTGate
from procmem_core.graph.entry import ProcedureEntry
from procmem_core.graph.evolve import evolve_entry
from procmem_core.graph.graph import ProcedureGraph
from procmem_core.graph.keys import (
    UnknownProcedure,
    check_metadata,
    check_namespace,
    check_tags,
    slugify,
)
from procmem_core.graph.ledger import RunRecord, check_run_fields
from procmem_core.graph.locate import LocateResult, locate_in
from procmem_core.graph.matching import (
    Embedder,
    HashingEmbedder,
    MatchIndex,
    check_match_request,
)
from procmem_core.graph.records import EvolveReport, Match, RevisionEntry, StoredProcedure
from procmem_core.graph.revision import RevisionError, propose_revision
from procmem_core.graph.sqlite import SQLiteJournal

__all__ = ["ProcedureStore", "RevisionError", "UnknownProcedure", "slugify"]


class ProcedureStore:
    """Procedures, their run ledger and their revisions; in memory or on SQLite."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder: Embedder = embedder if embedder is not None else HashingEmbedder()
        if not isinstance(self.embedder, Embedder):
            raise ParameterError("embedder", embedder, "expected an Embedder (dim, embed(texts))")
        self._entries: dict[str, ProcedureEntry] = {}  # by ref "namespace/key"
        self._by_key: dict[str, list[str]] = {}
        self._index = MatchIndex(self.embedder.dim)
        self._decisions: list[GateRecord] = []
        self._last_run_id = 0
        self._journal: SQLiteJournal | None = None

    @classmethod
    def open(
        cls, path: str | Path, embedder: Embedder | None = None, synchronous: str = "NORMAL"
    ) -> ProcedureStore:
        """A store kept in the SQLite file ``path`` (created if missing, else loaded)."""
        store = cls(embedder)
        journal = SQLiteJournal(path, synchronous)
        entries, store._decisions, store._last_run_id = journal.load()
        vectors = store._embed([e.situation for e in entries]) if entries else []
        for entry, vector in zip(entries, vectors, strict=True):
            store._insert(entry, vector)
        store._journal = journal
        return store

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    def __enter__(self) -> ProcedureStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self._entries)

    # -- bookkeeping --------------------------------------------------------------

    def _commit(self, entries: Sequence[ProcedureEntry] = (), **changes: Any) -> None:
        if self._journal is not None:
            self._journal.commit(entries, **changes)
        for e in entries:
            if e.ref in self._index.rows:  # not yet for a procedure being added
                self._index.set_stats(e.ref, e.agg.runs, e.agg.successes, e.status_code)

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
        self._index.add(entry.ref, vector, entry.namespace, entry.graph.tools())
        self._index.set_stats(entry.ref, entry.agg.runs, entry.agg.successes, entry.status_code)

    def _get(self, key: str) -> ProcedureEntry:
        if not isinstance(key, str):
            raise UnknownProcedure(f"key={key!r}: expected a procedure key string")
        if "/" in key:
            entry = self._entries.get(key)
            if entry is None:
                raise UnknownProcedure(f"no procedure {key!r}")
            return entry
        spaces = self._by_key.get(key, [])
        if len(spaces) != 1:
            where = f"held by namespaces {spaces}; use 'namespace/{key}'" if spaces else "unknown"
            raise UnknownProcedure(f"procedure {key!r}: {where}")
        return self._entries[f"{spaces[0]}/{key}"]

    def get(self, key: str) -> StoredProcedure:
        """The procedure's current snapshot."""
        return self._get(key).snapshot()

    # -- add, fork, list, delete ------------------------------------------------------

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
    ) -> StoredProcedure:
        """Register a procedure under ``procedure_<slug of name>``.

        ``steps`` (2..64 texts) build a linear graph n1 -> n2 -> ... unless ``graph`` (a
        ``ProcedureGraph`` or the seed's JSON shape) is given; with both, the graph is
        the topology and the steps are kept as its reading text. ``candidate=True``
        marks a machine-mined procedure (status "candidate" until its first run).
        """
        key = "procedure_" + slugify(check_text("name", name))
        check_text("situation", situation)
        namespace = check_namespace(namespace)
        tags = check_tags(tags)
        meta = check_metadata(metadata)
        check_bool("candidate", candidate)
        if steps is None and graph is None:
            raise ParameterError("steps", None, "give steps (2..64 texts) or a graph")
        built = ProcedureGraph.from_steps(steps) if steps is not None else None
        if graph is not None:
            built = ProcedureGraph.coerce(graph)
        step_texts = tuple(steps) if steps is not None else tuple(
            built.node(n).label() for n in built.reading_order()
        )  # fmt: skip
        if f"{namespace}/{key}" in self._entries:
            raise ParameterError("name", name, f"key {key!r} already exists in {namespace!r}")
        entry = ProcedureEntry.registered(
            "registered",
            key=key,
            namespace=namespace,
            name=name,
            situation=situation,
            steps=step_texts,
            tags=tags,
            metadata=meta,
            candidate=candidate,
            graph=built,
        )
        vector = self._embed([situation])[0]
        self._commit([entry])
        self._insert(entry, vector)
        return entry.snapshot()

    def fork(self, key: str, namespace: str) -> StoredProcedure:
        """Copy a procedure's shape (graph, steps, situation, tags) into ``namespace``,
        without its evidence: no runs, revision 1, status authored (or candidate)."""
        src = self._get(key)
        namespace = check_namespace(namespace)
        if f"{namespace}/{src.key}" in self._entries:
            raise ParameterError("namespace", namespace, f"already holds {src.key!r}")
        entry = ProcedureEntry.registered(
            f"forked from {src.ref}",
            key=src.key,
            namespace=namespace,
            name=src.name,
            situation=src.situation,
            steps=src.steps,
            tags=src.tags,
            metadata=dict(src.metadata),
            candidate=src.candidate,
            graph=src.graph,
        )
        self._commit([entry])
        self._insert(entry, self._index.emb[self._index.rows[src.ref]].copy())
        return entry.snapshot()

    def list(
        self, prefix: str | None = None, tags: Sequence[str] = ()
    ) -> builtins.list[StoredProcedure]:
        """Inventory: procedures whose key starts with ``prefix`` and carry every tag in
        ``tags``, sorted by (namespace, key)."""
        if prefix is not None and not isinstance(prefix, str):
            raise ParameterError("prefix", prefix, "expected a string or None")
        want = set(check_tags(tags))
        hits = [
            e.snapshot()
            for e in self._entries.values()
            if (prefix is None or e.key.startswith(prefix)) and want <= set(e.tags)
        ]
        return sorted(hits, key=lambda p: (p.namespace, p.key))

    def delete(self, key: str) -> None:
        """Remove a procedure with its ledger rows, revisions and gate decisions."""
        entry = self._get(key)
        if self._journal is not None:
            self._journal.commit(deleted=[(entry.namespace, entry.key)])
        del self._entries[entry.ref]
        self._by_key[entry.key].remove(entry.namespace)
        if not self._by_key[entry.key]:
            del self._by_key[entry.key]
        self._index.remove(entry.ref)
        self._decisions = [
            d for d in self._decisions if (d.namespace, d.key) != (entry.namespace, entry.key)
        ]

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
    ) -> RunRecord:
        """Append one run to the ledger (one transaction) and return it as stored.

        The run carries the current graph revision; every node id in ``path`` must be a
        node of that graph. A success lifts a quarantine at once.
        """
        entry = self._get(key)
        fields = check_run_fields(path, ok, note, cost, duration_ms, tokens, agent)
        for i, node in enumerate(fields["path"]):
            if not entry.graph.has_node(node):
                raise ParameterError(
                    f"path[{i}]", node, f"expected a node id of {entry.graph.node_ids}"
                )
        run = RunRecord(
            run_id=self._last_run_id + 1,
            key=entry.key,
            namespace=entry.namespace,
            revision=entry.revision,
            **fields,
        )
        with self._writing(entry):
            entry.agg.fold(run, entry.graph.edge_pairs())
            entry.revision_tally(entry.revision).add(run)
            if run.ok:
                entry.quarantined = False
            entry.runs.append(run)
            self._commit([entry], runs=[run])
        self._last_run_id = run.run_id
        return run

    @contextmanager
    def _writing(self, entry: ProcedureEntry) -> Iterator[None]:
        """Restore ``entry`` as it was if the block (its mutation and write) fails, so a
        failed SQLite transaction leaves memory and disk alike."""
        before = entry.to_json() if self._journal is not None else None
        n_runs = len(entry.runs)
        try:
            yield
        except BaseException:
            if before is not None:
                self._entries[entry.ref] = ProcedureEntry.from_json(before, entry.runs[:n_runs])
            raise

    def runs(self, key: str) -> tuple[RunRecord, ...]:
        """Every ledger row of the procedure, oldest first."""
        return tuple(self._get(key).runs)

    def traces(self, key: str) -> tuple[RunRecord, ...]:
        """The last 50 runs the graph keeps as traces."""
        return tuple(self._get(key).traces)

    def revisions(self, key: str) -> tuple[RevisionEntry, ...]:
        """The procedure's graph history, oldest first."""
        return tuple(self._get(key).history)

    def gate_decisions(self, key: str | None = None) -> tuple[GateRecord, ...]:
        """Every gate decision the store made (for one procedure, or all), in order."""
        if key is None:
            return tuple(self._decisions)
        entry = self._get(key)
        return tuple(
            d for d in self._decisions if (d.namespace, d.key) == (entry.namespace, entry.key)
        )

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
    ) -> builtins.list[Match]:
        """Top procedures for a situation (see ``matching.match_scores`` for the score).

        Vectorized over every stored procedure; candidates rank after every other match;
        quarantined ones are dropped unless ``include_quarantined``; ``namespace`` (a
        name or a list) restricts the search, None searches all.
        """
        top_k = check_match_request(
            situation, goal, recent_tools, top_k, tool_boost, utility_weight, for_agent
        )
        spaces = None
        if namespace is not None:
            spaces = [namespace] if isinstance(namespace, str) else builtins.list(namespace)
        texts = [situation] if goal is None else [situation, goal]
        q = self.embedder.embed(texts)
        ranked = self._index.rank(
            q[0], None if goal is None else q[1], recent_tools, top_k, tool_boost,
            utility_weight, templates_only, include_candidates, include_quarantined, spaces,
        )  # fmt: skip
        return [
            self._entries[self._index.keys[r]].as_match(score, relevance, rate, for_agent)
            for r, score, relevance, rate in ranked
        ]

    def locate(
        self,
        key: str,
        at: str | None = None,
        recent_path: Sequence[str] | None = None,
        hops: int = 2,
    ) -> LocateResult:
        """The active node and the transitions up to ``hops`` (1..4) ahead (see ``locate.py``)."""
        entry = self._get(key)
        return locate_in(entry.key, entry.graph, entry.agg, entry.traces, at, recent_path, hops)

    # -- evolve and revise -------------------------------------------------------------

    def revise(
        self, key: str, graph: ProcedureGraph | Mapping[str, Any], reason: str, force: bool = False
    ) -> StoredProcedure:
        """Propose a new topology (see ``revision.propose_revision``); later runs carry the
        new revision number and ``evolve`` asks the gates about it."""
        entry = self._get(key)
        new = ProcedureGraph.coerce(graph)
        check_text("reason", reason)
        check_bool("force", force)
        with self._writing(entry):
            propose_revision(entry, new, reason, force)
            self._commit([entry])
        self._index.set_tools(entry.ref, entry.graph.tools())
        return entry.snapshot()

    def evolve(
        self,
        key: str,
        min_runs: int = 3,
        strike_limit: int = 3,
        gate: Gate | None = None,
        cost_gate: Gate | None = None,
    ) -> EvolveReport:
        """Fold the runs newer than the watermark and update what the ledger shows.

        See ``graph.evolve``; the gates default to ``SPRTGate()`` and ``CostGate()``.
        """
        entry = self._get(key)
        min_runs = check_int("min_runs", min_runs, minimum=1)
        strike_limit = check_int("strike_limit", strike_limit)
        gate = SPRTGate() if gate is None else gate
        cost_gate = CostGate() if cost_gate is None else cost_gate
        check_instance("gate", gate, Gate)
        check_instance("cost_gate", cost_gate, Gate)
        with self._writing(entry):
            report, records = evolve_entry(entry, min_runs, strike_limit, gate, cost_gate)
            self._commit([entry], decisions=records)
        self._decisions.extend(records)
        self._index.set_tools(entry.ref, entry.graph.tools())
        return report
