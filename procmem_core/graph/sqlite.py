"""SQLite journal behind ``ProcedureStore.open(path)``.

The store keeps its working state in memory and writes every mutation through this
journal in one SQLite transaction (``commit``), so a process killed at any point loses
no write that returned. WAL mode with ``synchronous=NORMAL``: a committed transaction
survives the death of the process; only an operating-system crash or power loss can
drop the last few (use ``synchronous="FULL"`` to close that gap at an fsync per write).

Schema (version ``SCHEMA_VERSION``, recorded in ``schema_version``):

- ``procedures(namespace, key, state)``: one row per procedure (rowid = registration
  order, kept by updates), ``state`` the JSON of its
  ``ProcedureEntry`` (graph, revision history, pending and rejected revisions,
  aggregates, trust flags, the last evolve's findings);
- ``runs(run_id, namespace, key, revision, body)``: the run ledger, one row per run;
- ``gate_decisions(seq, namespace, key, body)``: every gate decision the store made.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from procmem_core.errors import ParameterError
from procmem_core.gates import GateRecord
from procmem_core.graph.entry import ProcedureEntry
from procmem_core.graph.ledger import RunRecord

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS procedures (
    namespace TEXT NOT NULL, key TEXT NOT NULL, state TEXT NOT NULL,
    PRIMARY KEY (namespace, key));
CREATE TABLE IF NOT EXISTS runs (
    run_id INTEGER PRIMARY KEY, namespace TEXT NOT NULL, key TEXT NOT NULL,
    revision INTEGER NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS runs_by_procedure ON runs (namespace, key, run_id);
CREATE TABLE IF NOT EXISTS gate_decisions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, namespace TEXT NOT NULL, key TEXT NOT NULL,
    body TEXT NOT NULL);
"""


class SQLiteJournal:
    """Write-through persistence of a ``ProcedureStore`` (one transaction per ``commit``)."""

    def __init__(self, path: str | Path, synchronous: str = "NORMAL") -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ParameterError("synchronous", synchronous, "expected 'NORMAL' or 'FULL'")
        self.path = Path(path)
        if not self.path.parent.is_dir():
            raise ParameterError("path", str(path), "expected a file in an existing directory")
        self.conn = sqlite3.connect(self.path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(f"PRAGMA synchronous={synchronous}")
        self._run(self._create_schema)

    def _run(self, work: Any, *args: Any) -> None:
        cur = self.conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            work(cur, *args)
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        cur.execute("COMMIT")

    @staticmethod
    def _create_schema(cur: sqlite3.Cursor) -> None:
        for stmt in filter(str.strip, _SCHEMA.split(";")):
            cur.execute(stmt)
        rows = cur.execute("SELECT version FROM schema_version").fetchall()
        if not rows:
            cur.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        elif rows[0][0] != SCHEMA_VERSION:
            raise ParameterError(
                "schema_version", rows[0][0], f"this procmem reads version {SCHEMA_VERSION}"
            )

    def commit(
        self,
        entries: Iterable[ProcedureEntry] = (),
        runs: Iterable[RunRecord] = (),
        decisions: Iterable[GateRecord] = (),
        deleted: Iterable[tuple[str, str]] = (),
    ) -> None:
        """Write the given changes in one transaction (all of them or none)."""
        self._run(self._write, list(entries), list(runs), list(decisions), list(deleted))

    @staticmethod
    def _write(
        cur: sqlite3.Cursor,
        entries: list[ProcedureEntry],
        runs: list[RunRecord],
        decisions: list[GateRecord],
        deleted: list[tuple[str, str]],
    ) -> None:
        for ns, key in deleted:
            for table in ("procedures", "runs", "gate_decisions"):
                cur.execute(f"DELETE FROM {table} WHERE namespace = ? AND key = ?", (ns, key))
        cur.executemany(
            "INSERT INTO procedures (namespace, key, state) VALUES (?, ?, ?) "
            "ON CONFLICT (namespace, key) DO UPDATE SET state = excluded.state",
            [(e.namespace, e.key, json.dumps(e.to_json())) for e in entries],
        )
        cur.executemany(
            "INSERT INTO runs (run_id, namespace, key, revision, body) VALUES (?, ?, ?, ?, ?)",
            [(r.run_id, r.namespace, r.key, r.revision, json.dumps(r.to_json())) for r in runs],
        )
        cur.executemany(
            "INSERT INTO gate_decisions (namespace, key, body) VALUES (?, ?, ?)",
            [(d.namespace, d.key, json.dumps(asdict(d))) for d in decisions],
        )

    def load(self) -> tuple[list[ProcedureEntry], list[GateRecord], int]:
        """Every procedure with its runs, every gate decision in order, and the last run id."""
        runs: dict[tuple[str, str], list[RunRecord]] = {}
        last_run = 0
        for (body,) in self.conn.execute("SELECT body FROM runs ORDER BY run_id"):
            r = RunRecord.from_json(json.loads(body))
            runs.setdefault((r.namespace, r.key), []).append(r)
            last_run = r.run_id
        entries = [
            ProcedureEntry.from_json(json.loads(state), runs.get((ns, key), []))
            for ns, key, state in self.conn.execute(
                "SELECT namespace, key, state FROM procedures ORDER BY rowid"
            )
        ]
        decisions = [
            GateRecord(**json.loads(body))
            for (body,) in self.conn.execute("SELECT body FROM gate_decisions ORDER BY seq")
        ]
        return entries, decisions, last_run

    def close(self) -> None:
        self.conn.close()
