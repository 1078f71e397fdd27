"""PostgreSQL journal behind ``ProcedureStore.open("postgresql://user@host:port/db")``.

The same tables, statements and cache refresh as the SQLite journal (``graph.journal``,
with ``graph.dialect.POSTGRES``'s words), so several processes may write one database as
they may one file: every write is one transaction that first takes the store's write lock
(``pg_advisory_xact_lock``, a lock of this database, waiting up to ``busy_timeout``
seconds as PostgreSQL's ``lock_timeout``, released at commit or rollback), then brings
the cache up to date with what other processes committed and reads what it changes from
that current state. Writes run at READ COMMITTED, so every statement after the lock sees
every write committed before it; a read asks the version counter in one autocommit
statement (``unchanged``) and only when it moved reads the changes in a REPEATABLE READ
READ ONLY transaction (one consistent snapshot; readers never wait for a writer). A
committed write is durable as PostgreSQL's ``synchronous_commit`` (on by default) makes
it; ``synchronous`` is checked as for SQLite and otherwise left to the server.

Opening: under the lock, a database holding none of the store's tables gains them all
(schema version ``SCHEMA_VERSION``); one holding the procedure tables at that version is
opened; a database holding some of them only, another version, or a table of the same
name that is not the store's (MLflow's ``runs``, say) is refused with ``StoreFileError``
naming the URI (its password hidden) before anything is written. Other applications'
tables may share the database.

psycopg 3 (the ``postgres`` extra) is imported when a store is opened, so
``import procmem_core`` needs no driver; without it ``MissingDriver`` says which extra.
URIs (``SCHEMES``, recognised in one place, ``is_uri``, by every store opener and reader):
``postgresql://``, ``postgres://`` and SQLAlchemy's forms naming a driver,
``postgresql+psycopg://``, ``postgresql+psycopg2://`` (the driver part is dropped: the
connection is psycopg 3's either way). Any other ``scheme://`` is refused naming the
value and these schemes, rather than read as a file path.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import lru_cache
from typing import Any

from procmem_core.errors import ParameterError
from procmem_core.graph.dialect import POSTGRES
from procmem_core.graph.journal import (
    SCHEMA_VERSION,
    TABLES,
    Journal,
    Transaction,
    init_meta,
    schema_statements,
)
from procmem_core.storefile import StoreFileError, check_durability

__all__ = ["SCHEMES", "Cursor", "MissingDriver", "PostgresJournal", "connect", "is_uri"]

SCHEMES = ("postgresql://", "postgres://", "postgresql+psycopg://", "postgresql+psycopg2://")
"""The URI schemes of a PostgreSQL store (a driver named SQLAlchemy's way is dropped)."""
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
LOCK_KEY = 0x706D656D_70726F63  # "pmemproc": the store's write lock in its database
EXPECTED = (
    "expected a PostgreSQL database holding a procmem procedure store (written by "
    "ProcedureStore.open) or none of its tables (schema_version, meta, procedures, runs, "
    "gate_decisions, grants, pack_log)"
)
COLUMNS_SQL = (
    "SELECT table_name, column_name FROM information_schema.columns "
    "WHERE table_schema = current_schema()"
)


class MissingDriver(ImportError):
    """psycopg 3 is not installed (the ``postgres`` extra)."""

    def __init__(self) -> None:
        super().__init__(
            "a PostgreSQL ProcedureStore needs psycopg 3, the `postgres` extra: "
            "pip install 'procmem[postgres]'"
        )


def is_uri(path: object) -> bool:
    """Whether ``path`` names a PostgreSQL database (``SCHEMES``, the scheme's case
    ignored) rather than a file; a string with another ``scheme://`` raises
    ``ParameterError`` naming it (its password hidden) and the schemes allowed."""
    if not isinstance(path, str):
        return False
    found = _SCHEME.match(path)
    if found is None:
        return False
    if f"{found.group(1).lower()}://" in SCHEMES:
        return True
    raise ParameterError(
        "store URI", shown_uri(path),
        f"a PostgreSQL URI ({', '.join(SCHEMES)}...) or an SQLite file path (no scheme); "
        f"scheme {found.group(1)!r} is not known",
    )  # fmt: skip


def conninfo(uri: str) -> str:
    """``uri`` as libpq takes it: the scheme ``postgresql://`` (a driver part and the
    scheme's case dropped)."""
    return _SCHEME.sub("postgresql://", uri, count=1)


def shown_uri(uri: str) -> str:
    """The URI as messages show it: its password, if any, as ``***``."""
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:/@]*):[^@/]*@", r"\1:***@", uri)


@lru_cache(maxsize=256)
def _pg(sql: str) -> str:
    """A statement with ``?`` placeholders in psycopg's form (``%s``; a literal ``%``
    doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


def _clock(value: Any) -> Any:
    from psycopg.types.json import Jsonb

    return None if value is None else Jsonb(value)


class Cursor:
    """A psycopg cursor that takes the journal's statements (``?`` placeholders) and
    returns itself from ``execute`` as sqlite3's does; ``clock`` adapts a pack-log clock
    to its JSONB column (``graph.packlog.clock_of``)."""

    clock = staticmethod(_clock)

    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Cursor:
        self.cur.execute(sql if params is None else _pg(sql), params)
        return self

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.cur.executemany(_pg(sql), rows)

    def fetchone(self) -> Any:
        return self.cur.fetchone()

    def fetchall(self) -> list[Any]:
        return self.cur.fetchall()

    def __iter__(self) -> Iterator[Any]:
        return iter(self.cur)


CONNECT_SECONDS = 10
"""How long a connection may take to be made (libpq's ``connect_timeout``) unless the URI
sets its own (``?connect_timeout=N``): without one, a server that accepts the connection
and never answers holds the opener forever."""


def connect(uri: str, expected: str = EXPECTED) -> Any:
    """An autocommit psycopg connection to ``uri`` (transactions are begun explicitly),
    made within ``CONNECT_SECONDS`` unless the URI sets ``connect_timeout``; an
    unreachable or silent server or a refused login is a ``StoreFileError`` naming the
    URI."""
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        raise MissingDriver() from None
    if not is_uri(uri):
        raise ParameterError("path", uri, f"a PostgreSQL URI ({', '.join(SCHEMES)}...)")
    try:
        info = conninfo(uri)
        bound = (
            {}
            if "connect_timeout" in conninfo_to_dict(info)
            else {"connect_timeout": CONNECT_SECONDS}
        )
        return psycopg.connect(info, autocommit=True, **bound)
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StoreFileError(shown_uri(uri), f"cannot be reached ({first})", expected) from None


class PostgresJournal(Journal):
    """The database behind a ``ProcedureStore`` (see the module doc)."""

    dialect = POSTGRES
    expected = EXPECTED

    def __init__(self, uri: str, synchronous: str = "NORMAL", busy_timeout: float = 60.0) -> None:
        self.busy_timeout = check_durability(synchronous, busy_timeout)
        self.conn = connect(uri)
        import psycopg

        self.errors = (psycopg.DatabaseError,)
        self.path = shown_uri(uri)
        try:
            # lock_timeout 0 would wait forever; a timeout of 0 s fails at once instead
            ms = max(1, round(self.busy_timeout * 1000))
            self.conn.execute(f"SET lock_timeout = {ms}")
            with self.transaction() as tx:
                self._create_schema(tx.cur)
        except BaseException:
            self.conn.close()
            raise

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """One write transaction under the store's write lock (all of it or none)."""
        cur = Cursor(self.conn.cursor())
        cur.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        try:
            cur.execute("SELECT pg_advisory_xact_lock(?)", (LOCK_KEY,))
            yield Transaction(self, cur)
        except BaseException:
            with suppress(Exception):  # a broken connection: the server rolled back
                self.conn.execute("ROLLBACK")
            raise
        cur.execute("COMMIT")

    @contextmanager
    def reading(self) -> Iterator[Cursor]:
        """A read transaction: one consistent snapshot of the database."""
        cur = Cursor(self.conn.cursor())
        cur.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            yield cur
        finally:
            with suppress(Exception):  # ends the snapshot (a rollback after an error)
                self.conn.execute("COMMIT")

    def _create_schema(self, cur: Cursor) -> None:
        """The store's tables in a database holding none of them (module doc)."""
        columns: dict[str, set[str]] = {}
        for table, column in cur.execute(COLUMNS_SQL).fetchall():
            columns.setdefault(table, set()).add(column)
        mine = [t for t in TABLES if t in columns]
        if mine and "schema_version" not in columns:
            problem = f"has a table {mine[0]} but no schema_version: not a procmem store"
            raise StoreFileError(self.path, problem, EXPECTED)
        if mine:
            self._check_tables(cur, columns)
            return
        for stmt in schema_statements(POSTGRES):
            cur.execute(stmt)
        cur.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        init_meta(cur)

    def _check_tables(self, cur: Cursor, columns: dict[str, set[str]]) -> None:
        rows = cur.execute("SELECT version FROM schema_version").fetchall()
        if [r[0] for r in rows] != [SCHEMA_VERSION]:
            raise StoreFileError(
                self.path, f"has schema_version {[r[0] for r in rows]}",
                f"a PostgreSQL store of schema version {SCHEMA_VERSION}",
            )  # fmt: skip
        wanted = {
            "meta": {"name", "value"},
            "procedures": {"namespace", "key", "state", "version", "created", "seq"},
            "runs": {"run_id", "namespace", "key", "revision", "body"},
            "gate_decisions": {"seq", "namespace", "key", "body"},
            "grants": {"principal", "namespace", "role"},
            "pack_log": {"seq", "session_id", "time", "top_key", "withheld", "outcome"},
        }
        for table, need in wanted.items():
            missing = sorted(need - columns.get(table, set()))
            if missing:
                where = f"table {table} lacks column {missing[0]}"
                if table not in columns:
                    where = f"has no table {table}"
                raise StoreFileError(self.path, f"is not a procmem store ({where})", EXPECTED)

    def unchanged(self, version: int) -> bool:
        """One autocommit ``SELECT`` of the version counter (it only grows: equal means
        nothing was committed since the cache read it)."""
        row = self.conn.execute("SELECT value FROM meta WHERE name = 'version'").fetchone()
        return int(row[0]) == version

    def grant_columns(self, cur: Cursor) -> None:
        """Nothing to add: a PostgreSQL store has the ``role`` column from the start."""

    def close(self) -> None:
        self.conn.close()
