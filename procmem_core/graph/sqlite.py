"""SQLite journal behind ``ProcedureStore.open(path)``: persistence for many processes.

The store keeps a cache of the file in memory; every write is one SQLite transaction
taken with the write lock (``BEGIN IMMEDIATE``, waiting up to ``busy_timeout`` seconds
for another writer) that first brings the cache up to date with what other processes
committed (``Transaction.changes``), then reads what it changes from that current state
(run ids from the file's counter, aggregates from the stored procedure), and writes it
back. So several processes may write one file: every acknowledged run is stored once,
and a process whose cache is stale refreshes before it writes. Reads refresh too (one
``SELECT`` when nothing changed). WAL mode: readers never wait for a writer.
``synchronous=NORMAL``: a committed transaction survives the death of the process; only
an OS crash or power loss can drop the last few (``"FULL"`` closes that at an fsync per
write).

Schema (version ``SCHEMA_VERSION``, 3; version 1 and 2 files are upgraded in place on
open):

- ``meta(name, value)``: ``version`` (bumped by every write) and ``last_run_id``;
- ``procedures(namespace, key, state, version, created)``: one row per procedure,
  ``state`` the JSON of its ``ProcedureEntry``, ``version`` the write that last changed
  it, ``created`` the write that added it;
- ``runs(run_id, namespace, key, revision, body)``: the run ledger, one row per run;
- ``gate_decisions(seq, namespace, key, body)``: every gate decision the store made;
- ``grants(principal, namespace[, role])``: who holds which role in which namespace
  (``graph.access``); the ``role`` column is added by the first grant that names a role
  (a row without one is a viewer, as every grant was before roles);
- ``pack_log``: one row per session whose pack the engine built (``graph.packlog``; added
  by version 3).

Opening: ``procmem_core.storefile`` identifies the file read-only first; anything but
a procmem file (a text file, random bytes, a truncated or foreign database, a bad path)
raises ``StoreFileError`` naming the path, and its bytes are left as they were. A path
with no file, a zero-byte file or an SQLite file with no tables becomes a new store;
a file holding procmem's other stores (``memory.journal``) gains the procedure tables.
Only then does the opener write: its tables in one transaction (checking the table set
again under the write lock), then WAL mode (``storefile.open_store``, as every store's
journal opens). The connection may be used from any thread;
``ProcedureStore`` serialises its use (``procmem_core.locking``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from procmem_core.errors import ParameterError
from procmem_core.gates import GateRecord
from procmem_core.graph.entry import ProcedureEntry
from procmem_core.graph.ledger import RunRecord
from procmem_core.graph.packlog import PACK_LOG_SQL
from procmem_core.storefile import (
    StoreFileError,
    check_durability,
    open_store,
    write_transaction,
)

__all__ = ["EXPECTED", "SCHEMA_VERSION", "SQLiteJournal", "StoreFileError", "Transaction"]

SCHEMA_VERSION = 3
UPGRADES = (1, 2)
"""Older schema versions upgraded in place on open (their missing tables created)."""
EXPECTED = (
    "expected a procmem procedure store (an SQLite file written by ProcedureStore.open, "
    "with tables schema_version, procedures, runs and gate_decisions, or a file of "
    "procmem's other stores), a zero-byte file or a path where no file exists yet"
)

_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS procedures (
    namespace TEXT NOT NULL, key TEXT NOT NULL, state TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 0, created INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (namespace, key));
CREATE TABLE IF NOT EXISTS runs (
    run_id INTEGER PRIMARY KEY, namespace TEXT NOT NULL, key TEXT NOT NULL,
    revision INTEGER NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS runs_by_procedure ON runs (namespace, key, run_id);
CREATE TABLE IF NOT EXISTS gate_decisions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, namespace TEXT NOT NULL, key TEXT NOT NULL,
    body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS grants (
    principal TEXT NOT NULL, namespace TEXT NOT NULL, PRIMARY KEY (principal, namespace));
"""
    + PACK_LOG_SQL
)


@dataclass
class SyncPoint:
    """How far a process's cache has read the file."""

    version: int = -1
    last_run_id: int = 0
    last_decision: int = 0
    rows: dict[str, tuple[int, int]] = field(default_factory=dict)  # ref -> (version, created)


@dataclass(frozen=True)
class EntryChange:
    """A procedure row that changed: its state JSON, and its runs when they must be read
    whole (a new row, or one deleted and added again); None: the cached runs plus the new
    ones in ``Changes.runs``."""

    ref: str
    version: int
    created: int
    state: str
    runs: list[RunRecord] | None


@dataclass
class Changes:
    """What other processes committed since a ``SyncPoint``."""

    version: int
    entries: list[EntryChange]
    removed: list[str]
    runs: list[RunRecord]
    decisions: list[tuple[int, GateRecord]]
    grants: list[tuple[str, str, str]]  # (principal, namespace, role)


class Transaction:
    """The reads and writes of one transaction on the journal's connection."""

    def __init__(self, journal: SQLiteJournal, cur: sqlite3.Cursor) -> None:
        self.journal = journal
        self.cur = cur
        self.version: int | None = None  # this transaction's write version, once it writes

    def changes(self, seen: SyncPoint) -> Changes | None:
        return self.journal.read_changes(self.cur, seen)

    def _write_version(self) -> int:
        if self.version is None:
            current = self.cur.execute("SELECT value FROM meta WHERE name='version'").fetchone()
            self.version = int(current[0]) + 1
            self.cur.execute("UPDATE meta SET value=? WHERE name='version'", (self.version,))
        return self.version

    def next_run_id(self) -> int:
        """The next run id, from the file's counter (never reused, whoever wrote last)."""
        (last,) = self.cur.execute("SELECT value FROM meta WHERE name='last_run_id'").fetchone()
        (top,) = self.cur.execute("SELECT COALESCE(MAX(run_id), 0) FROM runs").fetchone()
        run_id = max(int(last), int(top)) + 1
        self.cur.execute("UPDATE meta SET value=? WHERE name='last_run_id'", (run_id,))
        return run_id

    def put(self, entry: ProcedureEntry) -> tuple[int, int]:
        """Insert or update one procedure; return its (version, created)."""
        v = self._write_version()
        state = json.dumps(entry.to_json())
        self.cur.execute(
            "INSERT INTO procedures (namespace, key, state, version, created) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (namespace, key) DO UPDATE SET "
            "state = excluded.state, version = excluded.version",
            (entry.namespace, entry.key, state, v, v),
        )
        (created,) = self.cur.execute(
            "SELECT created FROM procedures WHERE namespace=? AND key=?",
            (entry.namespace, entry.key),
        ).fetchone()
        return v, int(created)

    def add_runs(self, runs: list[RunRecord]) -> None:
        self.cur.executemany(
            "INSERT INTO runs (run_id, namespace, key, revision, body) VALUES (?, ?, ?, ?, ?)",
            [(r.run_id, r.namespace, r.key, r.revision, json.dumps(r.to_json())) for r in runs],
        )

    def add_decisions(self, decisions: list[GateRecord]) -> int:
        """Append gate decisions; return the last sequence number written."""
        self._write_version()
        for d in decisions:
            self.cur.execute(
                "INSERT INTO gate_decisions (namespace, key, body) VALUES (?, ?, ?)",
                (d.namespace, d.key, json.dumps(asdict(d))),
            )
        (last,) = self.cur.execute("SELECT COALESCE(MAX(seq), 0) FROM gate_decisions").fetchone()
        return int(last)

    def delete(self, namespace: str, key: str) -> None:
        self._write_version()
        for table in ("procedures", "runs", "gate_decisions"):
            self.cur.execute(
                f"DELETE FROM {table} WHERE namespace = ? AND key = ?", (namespace, key)
            )

    def grant(self, principal: str, namespace: str, role: str = "viewer") -> None:
        """Give ``principal`` the ``role`` in ``namespace`` (replacing the role it held)."""
        self._write_version()
        columns = {row[1] for row in self.cur.execute("PRAGMA table_info(grants)")}
        if "role" not in columns:
            self.cur.execute("ALTER TABLE grants ADD COLUMN role TEXT NOT NULL DEFAULT 'viewer'")
        self.cur.execute(
            "INSERT OR REPLACE INTO grants (principal, namespace, role) VALUES (?, ?, ?)",
            (principal, namespace, role),
        )


class SQLiteJournal:
    """The file behind a ``ProcedureStore`` (see the module doc)."""

    def __init__(
        self, path: str | Path, synchronous: str = "NORMAL", busy_timeout: float = 60.0
    ) -> None:
        self.busy_timeout = check_durability(synchronous, busy_timeout)
        self.path, self.conn = open_store(
            path, synchronous, self.busy_timeout, self._create_schema, EXPECTED
        )

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """One write transaction under SQLite's write lock (all of it or none)."""
        with write_transaction(self.conn) as cur:
            yield Transaction(self, cur)

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Cursor]:
        """A read transaction: one consistent snapshot of the file."""
        cur = self.conn.cursor()
        cur.execute("BEGIN")
        try:
            yield cur
        finally:
            cur.execute("COMMIT")

    def _create_schema(self, cur: sqlite3.Cursor, tables: set[str]) -> None:
        """The procedure tables (``open_store`` checked ``tables`` under the lock)."""
        if "procedures" in tables:
            columns = {r[1] for r in cur.execute("PRAGMA table_info(procedures)")}
            for column in ("version", "created"):
                if column not in columns:  # a version-1 file
                    cur.execute(f"ALTER TABLE procedures ADD COLUMN {column} INTEGER DEFAULT 0")
        for stmt in filter(str.strip, _SCHEMA.split(";")):
            cur.execute(stmt)
        rows = cur.execute("SELECT version FROM schema_version").fetchall()
        if not rows:
            cur.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        elif rows[0][0] in UPGRADES:
            cur.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
        elif rows[0][0] != SCHEMA_VERSION:
            raise ParameterError(
                "schema_version", rows[0][0], f"this procmem reads versions 1 to {SCHEMA_VERSION}"
            )
        (top,) = cur.execute("SELECT COALESCE(MAX(run_id), 0) FROM runs").fetchone()
        cur.execute("INSERT OR IGNORE INTO meta (name, value) VALUES ('version', 0)")
        cur.execute("INSERT OR IGNORE INTO meta (name, value) VALUES ('last_run_id', ?)", (top,))

    # -- reading ----------------------------------------------------------------------

    def _damaged(self, where: str, exc: Exception) -> StoreFileError:
        return StoreFileError(self.path, f"has a damaged row in {where} ({exc})", EXPECTED)

    def _run(self, body: str) -> RunRecord:
        try:
            return RunRecord.from_json(json.loads(body))
        except (ValueError, TypeError, KeyError) as exc:
            raise self._damaged(f"runs ({body[:60]!r})", exc) from None

    def _entry(self, ns: str, key: str, state: str, runs: list[RunRecord]) -> ProcedureEntry:
        try:
            return ProcedureEntry.from_json(json.loads(state), runs)
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            raise self._damaged(f"procedures ({ns}/{key})", exc) from None

    def _decision(self, body: str) -> GateRecord:
        try:
            return GateRecord(**json.loads(body))
        except (ValueError, TypeError, KeyError) as exc:
            raise self._damaged(f"gate_decisions ({body[:60]!r})", exc) from None

    def runs_of(self, cur: sqlite3.Cursor, namespace: str, key: str) -> list[RunRecord]:
        rows = cur.execute(
            "SELECT body FROM runs WHERE namespace=? AND key=? ORDER BY run_id", (namespace, key)
        )
        return [self._run(b) for (b,) in rows]

    def read_changes(self, cur: sqlite3.Cursor, seen: SyncPoint) -> Changes | None:
        """What changed since ``seen`` (None when nothing did), read through ``cur``."""
        try:
            return self._read_changes(cur, seen)
        except sqlite3.DatabaseError as exc:
            raise StoreFileError(
                self.path, f"cannot be read as a store ({exc})", EXPECTED
            ) from None

    def _read_changes(self, cur: sqlite3.Cursor, seen: SyncPoint) -> Changes | None:
        (version,) = cur.execute("SELECT value FROM meta WHERE name='version'").fetchone()
        if int(version) == seen.version:
            return None
        runs = [
            self._run(b)
            for (b,) in cur.execute(
                "SELECT body FROM runs WHERE run_id > ? ORDER BY run_id", (seen.last_run_id,)
            )
        ]
        rows = cur.execute(
            "SELECT namespace, key, version, created FROM procedures ORDER BY rowid"
        ).fetchall()
        entries, present = [], set()
        for ns, key, v, created in rows:
            ref = f"{ns}/{key}"
            present.add(ref)
            if seen.rows.get(ref) == (v, created):
                continue
            (state,) = cur.execute(
                "SELECT state FROM procedures WHERE namespace=? AND key=?", (ns, key)
            ).fetchone()
            same = ref in seen.rows and seen.rows[ref][1] == created
            whole = None if same else self.runs_of(cur, ns, key)
            entries.append(EntryChange(ref, int(v), int(created), state, whole))
        decisions = [
            (int(seq), self._decision(b))
            for seq, b in cur.execute(
                "SELECT seq, body FROM gate_decisions WHERE seq > ? ORDER BY seq",
                (seen.last_decision,),
            )
        ]
        return Changes(
            version=int(version),
            entries=entries,
            removed=[ref for ref in seen.rows if ref not in present],
            runs=runs,
            decisions=decisions,
            grants=[
                (row[0], row[1], row[2] if len(row) > 2 else "viewer")
                for row in cur.execute("SELECT * FROM grants")
            ],
        )

    def build_entry(self, change: EntryChange, runs: list[RunRecord]) -> ProcedureEntry:
        ns, key = change.ref.split("/", 1)
        return self._entry(ns, key, change.state, runs)

    def close(self) -> None:
        self.conn.close()
