"""What the store's two journals share: the schema, one write transaction's statements and
the read of what other processes committed.

``graph.sqlite`` (a file) and ``graph.postgres`` (a database) each open a connection and
give ``transaction()`` (one write transaction under the store's write lock) and
``reading()`` (one consistent snapshot); the rest is here, written once: the tables
(``SCHEMA``, formatted with the backend's ``graph.dialect.Dialect``), the statements of
a write (``Transaction``, ``?`` placeholders) and ``Journal.read_changes``, which brings a
process's cache up to date by the store's version counter (one ``SELECT`` when nothing
changed).

Schema (version ``SCHEMA_VERSION``, 3):

- ``meta(name, value)``: ``version`` (bumped by every write) and ``last_run_id``;
- ``procedures(namespace, key, state, version, created)``: one row per procedure,
  ``state`` the JSON of its ``ProcedureEntry``, ``version`` the write that last changed
  it, ``created`` the write that added it;
- ``runs(run_id, namespace, key, revision, body)``: the run ledger, one row per run;
- ``gate_decisions(seq, namespace, key, body)``: every gate decision the store made;
- ``grants(principal, namespace, role)``: who holds which role in which namespace
  (``graph.access``);
- ``pack_log``: one row per session whose pack the engine built (``graph.packlog``).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from typing import Any

from procmem_core.gates import GateRecord
from procmem_core.graph.dialect import Dialect
from procmem_core.graph.entry import ProcedureEntry
from procmem_core.graph.ledger import RunRecord
from procmem_core.graph.packlog import PACK_LOG_SQL
from procmem_core.storefile import StoreFileError

SCHEMA_VERSION = 3
SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value {int} NOT NULL);
CREATE TABLE IF NOT EXISTS procedures (
    namespace TEXT NOT NULL, key TEXT NOT NULL, state TEXT NOT NULL,
    version {int} NOT NULL DEFAULT 0, created {int} NOT NULL DEFAULT 0,{row_seq}
    PRIMARY KEY (namespace, key));
CREATE TABLE IF NOT EXISTS runs (
    run_id {int} PRIMARY KEY, namespace TEXT NOT NULL, key TEXT NOT NULL,
    revision INTEGER NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS runs_by_procedure ON runs (namespace, key, run_id);
CREATE TABLE IF NOT EXISTS gate_decisions (
    seq {serial}, namespace TEXT NOT NULL, key TEXT NOT NULL,
    body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS grants (
    principal TEXT NOT NULL, namespace TEXT NOT NULL,{role} PRIMARY KEY (principal, namespace));
"""
TABLES = ("schema_version", "meta", "procedures", "runs", "gate_decisions", "grants", "pack_log")


def schema_statements(dialect: Dialect) -> list[str]:
    """The store's tables as ``dialect``'s statements (``SCHEMA`` and the pack log's)."""
    text = (SCHEMA + PACK_LOG_SQL).format(**dialect.words())
    return [s for s in text.split(";") if s.strip()]


def init_meta(cur: Any) -> None:
    """The counters of a new store (kept as they are in an existing one); ``last_run_id``
    starts at the ledger's top run id."""
    (top,) = cur.execute("SELECT COALESCE(MAX(run_id), 0) FROM runs").fetchone()
    for name, value in (("version", 0), ("last_run_id", int(top))):
        cur.execute(
            "INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
            (name, value),
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

    def __init__(self, journal: Journal, cur: Any) -> None:
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
        self.journal.grant_columns(self.cur)
        self.cur.execute(
            "INSERT INTO grants (principal, namespace, role) VALUES (?, ?, ?) ON CONFLICT "
            "(principal, namespace) DO UPDATE SET role = excluded.role",
            (principal, namespace, role),
        )


class Journal(ABC):
    """A journal's reads, shared by both backends; a backend sets ``dialect``, ``path``
    (what its errors name), ``errors`` (its driver's database errors), ``expected`` and
    ``transaction``/``reading``/``close``."""

    dialect: Dialect
    path: Any
    errors: tuple[type[Exception], ...]
    expected: str

    @abstractmethod
    def transaction(self) -> AbstractContextManager[Transaction]:
        """One write transaction under the store's write lock (all of it or none)."""

    @abstractmethod
    def reading(self) -> AbstractContextManager[Any]:
        """One read transaction: a consistent snapshot."""

    @abstractmethod
    def close(self) -> None:
        """Close the connection."""

    def unchanged(self, version: int) -> bool:
        """Whether the store's write version is still ``version``, where one statement
        outside a transaction can tell (PostgreSQL: one round trip instead of a snapshot's
        three); False: read a snapshot (SQLite's is one ``SELECT`` already)."""
        return False

    @abstractmethod
    def grant_columns(self, cur: Any) -> None:
        """Make sure ``grants`` has its ``role`` column before a grant writes it."""

    # -- reading ----------------------------------------------------------------------

    def _damaged(self, where: str, exc: Exception) -> StoreFileError:
        return StoreFileError(self.path, f"has a damaged row in {where} ({exc})", self.expected)

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

    def runs_of(self, cur: Any, namespace: str, key: str) -> list[RunRecord]:
        rows = cur.execute(
            "SELECT body FROM runs WHERE namespace=? AND key=? ORDER BY run_id", (namespace, key)
        )
        return [self._run(b) for (b,) in rows]

    def read_changes(self, cur: Any, seen: SyncPoint) -> Changes | None:
        """What changed since ``seen`` (None when nothing did), read through ``cur``."""
        try:
            return self._read_changes(cur, seen)
        except self.errors as exc:
            raise StoreFileError(
                self.path, f"cannot be read as a store ({exc})", self.expected
            ) from None

    def _read_changes(self, cur: Any, seen: SyncPoint) -> Changes | None:
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
            "SELECT namespace, key, version, created FROM procedures "
            f"ORDER BY {self.dialect.row_order}"
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
