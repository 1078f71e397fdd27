"""Whose file is this? Every store opener asks before it writes a byte (issue 31).

``identify(path)`` reads a file without writing to it (its first 100 bytes, then its
table list through a read-only connection: ``file:...?mode=ro``, with ``immutable=1``
when a WAL-mode file has no ``-wal`` beside it, so not even ``-wal``/``-shm`` files are
left behind) and answers:

- ``NEW``: no file there yet, or a zero-byte file (it holds nothing, so it may become a
  new store);
- ``EMPTY``: an SQLite database with no tables, views or triggers, no other
  application's id and no ``user_version`` (what another program keeps there makes it
  theirs);
- ``PROCMEM``: a procmem file: it holds the procedure store's tables
  (``PROCEDURE_TABLES``) or the row journals' bookkeeping table (``JOURNAL_TABLE``), or
  carries procmem's ``application_id`` (``APPLICATION_ID``, set on every file procmem
  creates);

and refuses anything else with ``StoreFileError`` naming the path: text, random bytes, a
truncated or unreadable database, another application's database (MLflow's, any other
table set, another ``application_id``), a directory, a device or FIFO, a path with a NUL
byte, a name too long, a place where no file can be created (e.g. under ``/proc``).
``classify(path, tables)`` is the same rule on a table list read under the write lock,
so the openers check again inside the transaction that creates their tables.
``open_store`` is that opening, the one every store's journal uses (``graph.sqlite``,
``memory.journal``): identify, connect, create the tables in one write transaction
(``write_transaction``) that checks the table set again, then WAL mode.

The read-only reading is shared with the MLflow store checks (``experiments.stores``,
``reports.source``): ``read_only_connection`` and ``read_only_uri`` (what reads a file
without writing a byte), ``snapshot_uri`` (the one a long read of a store uses),
``sqlite_file_problem`` (not SQLite, or shorter than its header says) and
``sqlite_url_path`` (the file a ``sqlite:///`` or ``sqlite+<driver>:///`` URL names).
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote

from procmem_core.errors import ParameterError, ProcmemError, check_number

SQLITE_HEADER = b"SQLite format 3\x00"
APPLICATION_ID = 0x706D656D  # "pmem", at byte 68 of every SQLite file procmem creates
PROCEDURE_TABLES = frozenset({"schema_version", "procedures", "runs", "gate_decisions"})
JOURNAL_TABLE = "procmem_journal_meta"
NEW, EMPTY, PROCMEM = "new", "empty", "procmem"
STORE_EXPECTED = (
    "expected a procmem store file (an SQLite file written by ProcedureStore, MemoryStore, "
    "LearningsQueue or DistillLedger), a zero-byte file or a path where no file exists yet"
)


class StoreFileError(ProcmemError):
    """The file is not a procmem store (or is damaged, or cannot be one); names the path."""

    def __init__(self, path: Path | str, problem: str, expected: str = STORE_EXPECTED) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{shown(path)}: {problem}; {expected}")


class SchemaVersionError(StoreFileError, ParameterError):
    """A procmem store of a schema version this procmem cannot read: both a
    ``StoreFileError`` naming the file and a ``ParameterError`` naming the field
    (``schema_version``, or ``<owner>.schema_version`` of a row journal)."""

    def __init__(
        self, path: Path | str, field: str, version: object, reads: str, expected: str
    ) -> None:
        self.path, self.field, self.value = path, field, version
        self.allowed = f"this procmem reads {reads}"
        self.problem = f"has {field}={version!r}; {self.allowed}"
        ProcmemError.__init__(self, f"{shown(path)}: {self.problem}; {expected}")


def shown(path: Path | str) -> str:
    """The path as a message shows it (quoted when it holds unprintable characters)."""
    text = str(path)
    return text if text.isprintable() else repr(text)


def store_path(path: object, expected: str = STORE_EXPECTED) -> Path:
    """``path`` as a ``Path`` a store may live at (a file in an existing directory)."""
    if not isinstance(path, str | os.PathLike):
        raise ParameterError("path", path, "expected a file path (str or Path)")
    text = os.fspath(path)
    if not isinstance(text, str) or not text:
        raise ParameterError("path", path, "expected a non-empty file path")
    if "\x00" in text:
        raise StoreFileError(text, "holds a NUL byte, which no file name can", expected)
    p = Path(text)
    try:
        parent_ok = p.parent.is_dir()
    except OSError as exc:
        raise StoreFileError(p, f"cannot be examined ({exc.strerror or exc})", expected) from None
    if not parent_ok:
        raise StoreFileError(p, "is in a folder that does not exist", expected)
    return p


def identify(path: Path, expected: str = STORE_EXPECTED) -> str:
    """``NEW``, ``EMPTY`` or ``PROCMEM`` (see the module doc); reads ``path``, never
    writes it; anything else raises ``StoreFileError``."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return NEW
    except OSError as exc:
        raise StoreFileError(
            path, f"cannot be examined ({exc.strerror or exc})", expected
        ) from None
    if stat.S_ISDIR(st.st_mode):
        raise StoreFileError(path, "is a directory", expected)
    if not stat.S_ISREG(st.st_mode):
        raise StoreFileError(path, "is not a regular file", expected)
    try:
        with path.open("rb") as f:
            head = f.read(100)
    except OSError as exc:
        raise StoreFileError(path, f"cannot be read ({exc.strerror or exc})", expected) from None
    if not head:
        return NEW
    if not head.startswith(SQLITE_HEADER):
        raise StoreFileError(
            path, f"is not an SQLite database (it starts with {head[:8]!r})", expected
        )
    app_id = int.from_bytes(head[68:72], "big") if len(head) >= 72 else 0
    if app_id not in (0, APPLICATION_ID):
        raise StoreFileError(
            path, f"is an SQLite database of another application (application_id {app_id:#x})",
            expected,
        )  # fmt: skip
    user_version = int.from_bytes(head[60:64], "big") if len(head) >= 64 else 0
    tables = _tables_read_only(path, head, expected)
    return classify(path, tables, app_id == APPLICATION_ID, expected, user_version)


SCHEMA_OBJECTS = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view', 'trigger')"
"""The names a file's owner put in it: its tables, and its views and triggers, which a
file with no table may hold (indexes belong to a table)."""


def classify(
    path: Path,
    tables: Iterable[str],
    marked: bool = False,
    expected: str = STORE_EXPECTED,
    user_version: int = 0,
) -> str:
    """``EMPTY`` or ``PROCMEM`` for a database holding ``tables`` (its tables, views and
    triggers: ``SCHEMA_OBJECTS``; ``marked``: it carries procmem's application id);
    another application's table set, or a ``user_version`` procmem never sets on a file
    that holds nothing, raises."""
    names = {t for t in tables if not t.startswith("sqlite_")}
    if names >= PROCEDURE_TABLES or JOURNAL_TABLE in names or (marked and names):
        return PROCMEM
    if not names and user_version and not marked:
        raise StoreFileError(
            path, f"is an SQLite database of another application (user_version {user_version})",
            expected,
        )  # fmt: skip
    if not names:
        return EMPTY
    found = ", ".join(sorted(names)[:8]) + (", ..." if len(names) > 8 else "")
    raise StoreFileError(path, f"is an SQLite database of another kind ({found})", expected)


def read_only_uri(path: Path, head: bytes | None = None) -> str:
    """An SQLite URI that reads ``path`` without creating or changing any file: ``mode=ro``,
    and ``immutable=1`` when the header (``head``, its first 100 bytes; read when None)
    says WAL mode and no ``-wal`` is beside it (the file is then whole in itself, and
    ``mode=ro`` alone would leave ``-wal`` and ``-shm`` files beside a file that may not
    be ours); with a ``-wal`` (a writer at work), ``mode=ro`` reads through it. A ``-wal``
    without its ``-shm`` (a writer that died, the index removed) is read through the
    ``unix-none`` VFS, whose WAL index lives in the reader's memory, because ``mode=ro``
    would create the ``-shm``: that URI needs ``locking_mode=EXCLUSIVE`` before the first
    read (``read_only_connection``) and fails to open without it, writing nothing."""
    if head is None:
        with path.open("rb") as f:
            head = f.read(100)
    wal = head[18:20] == b"\x02\x02"
    if wal and not Path(f"{path}-wal").exists():
        return path.resolve().as_uri() + "?mode=ro&immutable=1"
    if wal and not Path(f"{path}-shm").exists():
        return path.resolve().as_uri() + f"?mode=ro&vfs={UNLOCKED_VFS}"
    return path.resolve().as_uri() + "?mode=ro"


UNLOCKED_VFS = "unix-none"


def read_only_connection(
    path: Path, timeout: float = 5.0, head: bytes | None = None
) -> sqlite3.Connection:
    """A connection that reads ``path`` without creating or changing any file
    (``read_only_uri``), waiting up to ``timeout`` seconds for a lock; the caller closes
    it."""
    uri = read_only_uri(path, head)
    con = sqlite3.connect(uri, uri=True, timeout=timeout)
    if f"vfs={UNLOCKED_VFS}" in uri:
        try:  # the WAL index in this connection's memory, not in a -shm file
            con.execute("PRAGMA locking_mode=EXCLUSIVE")
        except BaseException:
            con.close()
            raise
    return con


def snapshot_uri(path: Path) -> str:
    """An SQLite URI for a long read of a store (a reader's snapshot): ``mode=ro``, which
    holds SQLite's read lock, so a writer at work never checkpoints over pages being read,
    and reads through its ``-wal``; ``read_only_uri``'s ``immutable=1`` (no lock, no file
    made) only where no writer can be at work on an idle WAL file: its folder cannot be
    written (a read-only mount or snapshot), where ``mode=ro`` alone cannot open it (it
    must create ``-shm``)."""
    if os.access(path.resolve().parent, os.W_OK):
        return path.resolve().as_uri() + "?mode=ro"
    return read_only_uri(path)


SQLITE_URL = re.compile(r"sqlite(\+\w+)?:///")
"""The start of a URL SQLAlchemy (so MLflow) opens as an SQLite file: ``sqlite:///`` or
with a driver, ``sqlite+pysqlite:///`` (the same file)."""


def sqlite_url_path(uri: str) -> Path | None:
    """The file a ``sqlite:///`` URL (``SQLITE_URL``: also ``sqlite+<driver>:///``) names
    as SQLAlchemy (so MLflow) reads it: the part after ``:///`` up to the first ``?`` (the
    query: ``?timeout=10``), then percent-decoded (``a%20b.db`` is ``a b.db``); None for
    any other URL. Every check of an MLflow store reads this path, so it is the file MLflow
    then opens."""
    start = SQLITE_URL.match(uri)
    if start is None:
        return None
    return Path(unquote(uri[start.end() :].split("?", 1)[0]))


def sqlite_file_problem(path: Path) -> str | None:
    """Why the file at ``path`` is not a whole SQLite database, read without writing: its
    first 100 bytes are not an SQLite header, or it is shorter than its header says (page
    size x page count, bytes 16-17 and 28-31, the count valid when bytes 24-27 equal
    92-95; sqlite.org/fileformat2.html). None for a whole one."""
    with path.open("rb") as f:
        head = f.read(100)
    if len(head) < 100 or not head.startswith(SQLITE_HEADER):
        return "is not a SQLite database"
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    size = path.stat().st_size
    pages = int.from_bytes(head[28:32], "big")
    valid = head[24:28] == head[92:96] and pages > 0
    if size % page or (valid and size < page * pages):
        expected = f"{page * pages} bytes" if valid else f"a multiple of {page} bytes"
        return f"is truncated ({size} bytes; its header says {expected})"
    return None


def _tables_read_only(path: Path, head: bytes, expected: str) -> list[str]:
    try:
        con = read_only_connection(path, head=head)
    except sqlite3.Error as exc:
        raise StoreFileError(path, f"cannot be opened to read ({exc})", expected) from None
    try:
        return [r[0] for r in con.execute(SCHEMA_OBJECTS)]
    except sqlite3.Error as exc:
        raise StoreFileError(path, f"cannot be read as a store ({exc})", expected) from None
    finally:
        con.close()


def connect(path: Path, busy_timeout: float, expected: str = STORE_EXPECTED) -> sqlite3.Connection:
    """A read-write connection to an identified store file, usable from any thread (the
    store serialises its use: ``procmem_core.locking``); names the path if it fails."""
    try:
        return sqlite3.connect(
            path, isolation_level=None, timeout=busy_timeout, check_same_thread=False
        )
    except sqlite3.Error as exc:
        raise StoreFileError(path, f"cannot be opened or created ({exc})", expected) from None


def mark_new(cur: sqlite3.Cursor, tables: Iterable[str]) -> None:
    """Stamp procmem's application id on a file that holds no table yet (one this opener
    is creating); call inside the transaction that creates the tables."""
    if not [t for t in tables if not t.startswith("sqlite_")]:
        cur.execute(f"PRAGMA application_id = {APPLICATION_ID}")


SYNCHRONOUS = ("NORMAL", "FULL")
"""SQLite's ``synchronous`` settings a store may run with (NORMAL: a committed transaction
survives the death of the process; FULL: an OS crash or power loss too, at an fsync per
write)."""


def check_durability(synchronous: object, busy_timeout: object) -> float:
    """Check a store's ``synchronous`` (``SYNCHRONOUS``) and ``busy_timeout`` (seconds a
    write waits for another process's write lock, >= 0) before any work; the timeout."""
    if synchronous not in SYNCHRONOUS:
        raise ParameterError("synchronous", synchronous, "expected 'NORMAL' or 'FULL'")
    return check_number("busy_timeout", busy_timeout, minimum=0.0)


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Cursor]:
    """One write transaction under SQLite's write lock (``BEGIN IMMEDIATE``, waiting up to
    the connection's busy timeout): all of it or none."""
    cur = conn.cursor()
    cur.execute("BEGIN IMMEDIATE")
    try:
        yield cur
    except BaseException:
        cur.execute("ROLLBACK")
        raise
    cur.execute("COMMIT")


def open_store(
    path: object,
    synchronous: str,
    busy_timeout: float,
    create: Callable[[sqlite3.Cursor, set[str]], None],
    expected: str = STORE_EXPECTED,
) -> tuple[Path, sqlite3.Connection]:
    """Open the store file ``path`` (settings checked by ``check_durability``): identify it
    read-only (a file that is not procmem's is refused untouched), connect, then in one
    write transaction check the table set again under the lock, stamp a new file
    (``mark_new``) and ``create(cursor, tables)`` the owner's tables; then WAL mode and
    ``synchronous``. A database error is a ``StoreFileError`` naming the path (a write
    lock another connection held past ``busy_timeout`` said as such, not as a file that
    cannot be read); on any failure the connection is closed. Returns the path and the
    connection."""
    p = store_path(path, expected)
    identify(p, expected)
    conn = connect(p, busy_timeout, expected)
    try:
        with write_transaction(conn) as cur:
            tables = {
                r[0] for r in cur.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            (app_id,) = cur.execute("PRAGMA application_id").fetchone()
            (user_version,) = cur.execute("PRAGMA user_version").fetchone()
            objects = {r[0] for r in cur.execute(SCHEMA_OBJECTS)}
            # again, under the lock
            classify(p, objects, app_id == APPLICATION_ID, expected, user_version)
            mark_new(cur, tables)
            create(cur, tables)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={synchronous}")
    except sqlite3.DatabaseError as exc:
        conn.close()
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY:
            problem = (
                f"is being written by another connection, whose write lock was still held "
                f"after busy_timeout={busy_timeout:g} s"
            )
            raise StoreFileError(p, problem, "try again, or a longer busy_timeout") from None
        raise StoreFileError(p, f"cannot be read as a store ({exc})", expected) from None
    except BaseException:
        conn.close()
        raise
    return p, conn
