"""A write-through SQLite journal of JSON rows, for the stores that are not procedures.

The memory store, the learnings queue and the distill ledger keep their working state
in memory and write every mutation through one of these journals in one transaction
(``commit``), as ``graph.sqlite`` does for procedures: a process killed at any point loses
no write that returned. Each owner names its own tables (``memory_records``,
``learnings_queue``, ...), so one SQLite file may hold a ``ProcedureStore`` and all of
them side by side; the journal's own bookkeeping lives in ``procmem_journal_meta``
(``(owner, key) -> value``: the schema version of each owner and its counters).

Every table is ``(id TEXT PRIMARY KEY, seq INTEGER, body TEXT)``: ``body`` the JSON of one
row, ``seq`` the order it was first written (kept by updates), so ``load`` returns the rows
in the order the in-memory store holds them.

Opening identifies the file read-only first (``procmem_core.storefile``): a file that is
not procmem's (text, another application's database such as MLflow's, a bad path) raises
``StoreFileError`` naming the path and is left byte for byte as it was; no file, a
zero-byte file or an SQLite file with nothing in it (no table, view, trigger or
user_version) becomes a new store. Only then are the
tables created (one transaction that checks the table set again under the write lock)
and WAL mode set (``storefile.open_store``, as ``graph.sqlite`` opens). The connection
may be used from any thread; its owner serialises the calls (``procmem_core.locking``).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from procmem_core.errors import ParameterError
from procmem_core.storefile import (
    SchemaVersionError,
    StoreFileError,
    check_durability,
    open_store,
    write_transaction,
)

_TABLE = re.compile(r"[a-z][a-z0-9_]{0,62}")
_META = "procmem_journal_meta"
WRITES = "writes"
"""The meta key counting an owner's committed writes: a writer that finds another count
than the one it last saw was overtaken by another opener (``RowJournal.commit``)."""


class RowJournal:
    """JSON rows in the named ``tables`` of the SQLite file ``path`` (see the module)."""

    def __init__(
        self,
        path: str | Path,
        owner: str,
        tables: Iterable[str],
        version: int = 1,
        synchronous: str = "NORMAL",
        busy_timeout: float = 60.0,
    ) -> None:
        busy_timeout = check_durability(synchronous, busy_timeout)
        self.owner = owner
        self.tables = tuple(tables)
        for t in self.tables:
            if not _TABLE.fullmatch(t):
                raise ParameterError("table", t, f"expected a name matching {_TABLE.pattern}")
        self.path, self.conn = open_store(
            path, synchronous, busy_timeout, lambda cur, _: self._create(cur, version, path)
        )
        self._writes = int(self.meta(WRITES, 0))

    def _create(self, cur: sqlite3.Cursor, version: int, path: str | Path) -> None:
        """The journal's tables and this owner's schema version (``open_store`` checked the
        file's table set under the lock); another version is refused naming ``path``."""
        cur.execute(
            f"CREATE TABLE IF NOT EXISTS {_META} (owner TEXT NOT NULL, key TEXT NOT NULL, "
            "value TEXT NOT NULL, PRIMARY KEY (owner, key))"
        )
        for t in self.tables:
            cur.execute(
                f"CREATE TABLE IF NOT EXISTS {t} "
                "(id TEXT PRIMARY KEY, seq INTEGER NOT NULL, body TEXT NOT NULL)"
            )
        row = cur.execute(
            f"SELECT value FROM {_META} WHERE owner = ? AND key = 'schema_version'", (self.owner,)
        ).fetchone()
        if row is None:
            cur.execute(
                f"INSERT INTO {_META} (owner, key, value) VALUES (?, 'schema_version', ?)",
                (self.owner, json.dumps(version)),
            )
        elif json.loads(row[0]) != version:
            raise SchemaVersionError(
                path,
                f"{self.owner}.schema_version",
                json.loads(row[0]),
                str(version),
                f"a {self.owner} store of schema version {version}",
            )

    def commit(
        self,
        upserts: Mapping[str, Iterable[tuple[str, int, Any]]] | None = None,
        deletes: Mapping[str, Iterable[str]] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        """Write ``upserts`` (table -> ``(id, seq, body)``), ``deletes`` (table -> ids) and
        ``meta`` (key -> JSON value) in one transaction: all of them or none.

        The owner's state lives in memory (its ids and counters), so another process that
        wrote this owner's rows since this journal last read or wrote them would have its
        rows overwritten by ids it also handed out: that write is refused instead
        (``StoreFileError``), nothing written; reopen the store to see the other writes.
        A commit that would change nothing (no row, and every meta value as stored) touches
        nothing, not even the write count: a refused or empty call leaves the file as it
        was."""
        upserts = {t: list(rows) for t, rows in (upserts or {}).items()}
        deletes = {t: list(ids) for t, ids in (deletes or {}).items()}
        for table in (*upserts, *deletes):
            self._check_table(table)
        missing = object()
        rows = any(upserts.values()) or any(deletes.values())
        if not rows and all(self.meta(k, missing) == v for k, v in (meta or {}).items()):
            return
        with write_transaction(self.conn) as cur:
            row = cur.execute(
                f"SELECT value FROM {_META} WHERE owner = ? AND key = ?", (self.owner, WRITES)
            ).fetchone()
            found = 0 if row is None else int(json.loads(row[0]))
            if found != self._writes:
                raise StoreFileError(
                    self.path,
                    f"its {self.owner} rows were written by another opener since this one "
                    f"read them ({found - self._writes} writes); nothing was written",
                    f"one writer at a time per {self.owner} store: close it and reopen it",
                )
            self._write(cur, upserts, deletes, {**(meta or {}), WRITES: found + 1})
        self._writes = found + 1

    def _write(
        self, cur: sqlite3.Cursor, upserts: Mapping, deletes: Mapping, meta: Mapping
    ) -> None:
        for table, ids in deletes.items():
            self._check_table(table)
            cur.executemany(f"DELETE FROM {table} WHERE id = ?", [(i,) for i in ids])
        for table, rows in upserts.items():
            self._check_table(table)
            cur.executemany(
                f"INSERT INTO {table} (id, seq, body) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET body = excluded.body",
                [(i, seq, json.dumps(body)) for i, seq, body in rows],
            )
        cur.executemany(
            f"INSERT INTO {_META} (owner, key, value) VALUES (?, ?, ?) "
            "ON CONFLICT (owner, key) DO UPDATE SET value = excluded.value",
            [(self.owner, k, json.dumps(v)) for k, v in meta.items()],
        )

    def _check_table(self, table: str) -> None:
        if table not in self.tables:
            raise ParameterError("table", table, f"one of this journal's tables {self.tables}")

    def load(self, table: str, build: Callable[[Any], Any] | None = None) -> list[Any]:
        """Every row body of ``table`` (each passed to ``build`` when given), in the order
        the rows were first written; a row that cannot be read raises ``StoreFileError``."""
        self._check_table(table)
        rows = [self._body(table, b) for b in self._read(f"SELECT body FROM {table} ORDER BY seq")]
        if build is None:
            return rows
        try:
            return [build(row) for row in rows]
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            problem = f"has a damaged row in {table} ({type(exc).__name__}: {exc})"
            raise StoreFileError(self.path, problem) from None

    def meta(self, key: str, default: Any = None) -> Any:
        rows = self._read(
            f"SELECT value FROM {_META} WHERE owner = ? AND key = ?", (self.owner, key)
        )
        return default if not rows else self._body(_META, rows[0])

    def _read(self, sql: str, args: tuple = ()) -> list[str]:
        try:
            return [r[0] for r in self.conn.execute(sql, args)]
        except sqlite3.DatabaseError as exc:
            raise StoreFileError(self.path, f"cannot be read as a store ({exc})") from None

    def _body(self, table: str, text: str) -> Any:
        try:
            return json.loads(text)
        except (ValueError, TypeError) as exc:
            problem = f"has a damaged row in {table} ({str(text)[:60]!r}: {exc})"
            raise StoreFileError(self.path, problem) from None

    def close(self) -> None:
        self.conn.close()
