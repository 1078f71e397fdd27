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

Schema: ``graph.journal`` (version ``SCHEMA_VERSION``, 3, shared with the PostgreSQL
journal, ``graph.postgres``); version 1 and 2 files are upgraded in place on open (2
gained ``version``/``created`` on procedures, 3 the ``pack_log``). On SQLite the grants'
``role`` column is added by the first grant that names a role (a row without one is a
viewer, as every grant was before roles).

Opening: ``procmem_core.storefile`` identifies the file read-only first; anything but
a procmem file (a text file, random bytes, a truncated or foreign database, a bad path)
raises ``StoreFileError`` naming the path, and its bytes are left as they were. A path
with no file, a zero-byte file or an SQLite file with nothing in it (no table, view,
trigger or ``user_version``: ``storefile.EMPTY``) becomes a new store; a file holding
procmem's other stores (``memory.journal``) gains the procedure tables.
Only then does the opener write: its tables in one transaction (checking the table set
again under the write lock), then WAL mode (``storefile.open_store``, as every store's
journal opens). The connection may be used from any thread;
``ProcedureStore`` serialises its use (``procmem_core.locking``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from procmem_core.graph.dialect import SQLITE
from procmem_core.graph.journal import (
    SCHEMA_VERSION,
    Changes,
    EntryChange,
    Journal,
    SyncPoint,
    Transaction,
    init_meta,
    schema_statements,
)
from procmem_core.storefile import (
    SchemaVersionError,
    StoreFileError,
    check_durability,
    open_store,
    write_transaction,
)

__all__ = [
    "EXPECTED",
    "SCHEMA_VERSION",
    "Changes",
    "EntryChange",
    "SQLiteJournal",
    "StoreFileError",
    "SyncPoint",
    "Transaction",
]

UPGRADES = (1, 2)
"""Older schema versions upgraded in place on open (their missing tables created)."""
EXPECTED = (
    "expected a procmem procedure store (an SQLite file written by ProcedureStore.open, "
    "with tables schema_version, procedures, runs and gate_decisions, or a file of "
    "procmem's other stores), a zero-byte file or a path where no file exists yet"
)


class SQLiteJournal(Journal):
    """The file behind a ``ProcedureStore`` (see the module doc; its reads and the
    statements of a write: ``graph.journal``)."""

    dialect = SQLITE
    errors = (sqlite3.DatabaseError,)
    expected = EXPECTED

    def __init__(
        self, path: str | Path, synchronous: str = "NORMAL", busy_timeout: float = 60.0
    ) -> None:
        self.busy_timeout = check_durability(synchronous, busy_timeout)
        self.path, self.conn = open_store(
            path,
            synchronous,
            self.busy_timeout,
            lambda cur, tables: self._create_schema(cur, tables, path),
            EXPECTED,
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

    def _create_schema(self, cur: sqlite3.Cursor, tables: set[str], path: str | Path) -> None:
        """The procedure tables (``open_store`` checked ``tables`` under the lock); a store
        of a schema version this procmem cannot read is refused naming ``path``."""
        if "procedures" in tables:
            columns = {r[1] for r in cur.execute("PRAGMA table_info(procedures)")}
            for column in ("version", "created"):
                if column not in columns:  # a version-1 file
                    cur.execute(f"ALTER TABLE procedures ADD COLUMN {column} INTEGER DEFAULT 0")
        for stmt in schema_statements(SQLITE):
            cur.execute(stmt)
        rows = cur.execute("SELECT version FROM schema_version").fetchall()
        if not rows:
            cur.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        elif rows[0][0] in UPGRADES:
            cur.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
        elif rows[0][0] != SCHEMA_VERSION:
            reads = f"versions 1 to {SCHEMA_VERSION}"
            raise SchemaVersionError(path, "schema_version", rows[0][0], reads, EXPECTED)
        init_meta(cur)

    def grant_columns(self, cur: sqlite3.Cursor) -> None:
        """A file written before roles gains the ``role`` column (a row without one is a
        viewer, as every grant was before roles)."""
        columns = {row[1] for row in cur.execute("PRAGMA table_info(grants)")}
        if "role" not in columns:
            cur.execute("ALTER TABLE grants ADD COLUMN role TEXT NOT NULL DEFAULT 'viewer'")

    def close(self) -> None:
        self.conn.close()
