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
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from procmem_core.errors import ParameterError

_TABLE = re.compile(r"[a-z][a-z0-9_]{0,62}")
_META = "procmem_journal_meta"


class RowJournal:
    """JSON rows in the named ``tables`` of the SQLite file ``path`` (see the module)."""

    def __init__(
        self,
        path: str | Path,
        owner: str,
        tables: Iterable[str],
        version: int = 1,
        synchronous: str = "NORMAL",
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ParameterError("synchronous", synchronous, "expected 'NORMAL' or 'FULL'")
        self.path = Path(path)
        if not self.path.parent.is_dir():
            raise ParameterError("path", str(path), "expected a file in an existing directory")
        self.owner = owner
        self.tables = tuple(tables)
        for t in self.tables:
            if not _TABLE.fullmatch(t):
                raise ParameterError("table", t, f"expected a name matching {_TABLE.pattern}")
        self.conn = sqlite3.connect(self.path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(f"PRAGMA synchronous={synchronous}")
        self._transaction(self._create, version)

    def _transaction(self, work: Any, *args: Any) -> None:
        cur = self.conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            work(cur, *args)
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        cur.execute("COMMIT")

    def _create(self, cur: sqlite3.Cursor, version: int) -> None:
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
            raise ParameterError(
                f"{self.owner}.schema_version", json.loads(row[0]), f"this procmem reads {version}"
            )

    def commit(
        self,
        upserts: Mapping[str, Iterable[tuple[str, int, Any]]] | None = None,
        deletes: Mapping[str, Iterable[str]] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        """Write ``upserts`` (table -> ``(id, seq, body)``), ``deletes`` (table -> ids) and
        ``meta`` (key -> JSON value) in one transaction: all of them or none."""
        self._transaction(self._write, upserts or {}, deletes or {}, meta or {})

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

    def load(self, table: str) -> list[Any]:
        """Every row body of ``table``, in the order the rows were first written."""
        self._check_table(table)
        return [
            json.loads(b) for (b,) in self.conn.execute(f"SELECT body FROM {table} ORDER BY seq")
        ]

    def meta(self, key: str, default: Any = None) -> Any:
        row = self.conn.execute(
            f"SELECT value FROM {_META} WHERE owner = ? AND key = ?", (self.owner, key)
        ).fetchone()
        return default if row is None else json.loads(row[0])

    def close(self) -> None:
        self.conn.close()
