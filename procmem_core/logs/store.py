"""A ``ProcedureStore`` read as a session log (docs/logs.md, "Reading from a store"): an
SQLite file or a PostgreSQL database (``postgresql://``, ``graph.postgres``).

- sessions: the store's pack log (``graph.packlog``, table ``pack_log``, in the order
  logged), one row per session whose pack ``ContextPacker.pack(session_id=...)`` built,
  with its outcome once ``rate_session`` attached it;
- runs: the run ledger (table ``runs``): key the procedure's ref ``namespace/key`` (as
  the pack log names it), revision, ok, cost, agent and path from the run's record, time
  its run id (the ledger's clock);
- revisions: each procedure's graph history (``procedures.state``, ``$.history``): the
  first revision as accepted with no prior; every later one with its prior (the last
  revision before it that was the original or accepted: a revert restores it),
  ``proposed_at`` and ``decided_at`` in run ids and the store's verdict. A store written
  before revisions kept ``proposed_at`` gives, for a decided revision, the run id before
  its first run (its pending one: the store's ``pending_since``).

Every column is read by SQL into numpy arrays, never a Python loop per row: one query per
table has the database concatenate each column into one string (SQLite's
``group_concat``: integers as SQLite prints them, other reals with 17 significant digits,
``%!.17g``; PostgreSQL's ``string_agg``: doubles in their shortest exact form; both
read back to the bit (SQLite's ``%!.17g`` is an ulp off for some doubles above about
1e180, far from any log value); strings joined by the unit separator U+001F; the queries of each
backend in ``logs.store_sql``), split in C by pyarrow (``split_pattern``; numbers parsed
by its correctly rounded ``cast``) and put in ``seq`` order by numpy (a string holding
U+001F makes its column fall back to ``fetchall``). Strings are dictionary-coded by
pyarrow's ``dictionary_encode``, in order of first appearance, as a file's are, so sums
over codes add in the same order whichever reader read the log. ``check_log`` then
checks the values as for a log directory. The file is opened read-only, the database
read in a READ ONLY transaction; neither is written.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from procmem_core.logs.schema import Log, LogError, Table, Text, check_log
from procmem_core.logs.store_sql import POSTGRES, SQLITE, StoreSql

NEEDS = (
    "a procmem ProcedureStore (an SQLite file or a PostgreSQL database, schema 3 or later) "
    "whose packs were logged"
)
SEP = "\x1f"

RUNS = {
    "key": ("k", "text"),
    "revision": ("revision", "text"),
    "ok": ("ok", "number"),
    "time": ("seq", "number"),
    "path": ("path", "text"),
    "cost": ("cost", "number"),
    "agent": ("agent", "text"),
}
REVISIONS = {
    "key": ("key", "text"),
    "revision": ("revision", "text"),
    "prior_revision": ("prior_revision", "text"),
    "proposed_at": ("proposed_at", "number"),
    "decided_at": ("decided_at", "number"),
    "verdict": ("verdict", "text"),
}


def _split(text: str, sep: str) -> pa.Array:
    """One concatenated column split in C (pyarrow), as strings: no Python object per row."""
    return pc.split_pattern(pa.array([text], pa.large_string()), sep).flatten()


def read_columns(
    cur: Any, source: str, cols: dict[str, tuple[str, str]], sql: StoreSql = SQLITE
) -> tuple[int, dict[str, Any]]:
    """Every column of ``source`` (a table or query with an integer ``seq``) in ``seq``
    order, by one query in ``sql``'s dialect (module doc): ``"number"`` columns as float
    arrays (NULL: NaN; parsed by pyarrow's correctly rounded parser, as exact as
    numpy's), ``"text"`` columns as pyarrow string arrays (NULL: "")."""
    parts = ["COUNT(*)", sql.seq()]
    parts += [sql.concat(expr, kind) for expr, kind in cols.values()]
    row = cur.execute(f"SELECT {', '.join(parts)} FROM ({source}) AS src").fetchone()
    n = int(row[0])
    if n == 0:
        return 0, {c: np.zeros(0) if k == "number" else pa.array([], pa.large_string())
                   for c, (_, k) in cols.items()}  # fmt: skip
    seq = pc.cast(_split(row[1], " "), pa.int64()).to_numpy()
    order = None if (np.diff(seq) > 0).all() else np.argsort(seq, kind="stable")
    out: dict[str, Any] = {}
    for (name, (expr, kind)), text in zip(cols.items(), row[2:], strict=True):
        if kind == "number":
            a = pc.cast(_split(text, " "), pa.float64()).to_numpy()
            out[name] = a if order is None else a[order]
            continue
        items = _split(text, SEP)
        if len(items) == n:
            out[name] = items if order is None else items.take(pa.array(order))
        else:  # a string holds the separator itself: this column row by row, in seq order
            rows = cur.execute(f"SELECT COALESCE({expr}, '') FROM ({source}) AS src ORDER BY seq")
            out[name] = pa.array([r[0] for r in rows.fetchall()], pa.large_string())
    return n, out


def _text(values: pa.Array, unique: bool = False) -> Text:
    """Strings ("" empty) as dictionary codes in order of first appearance (pyarrow's
    ``dictionary_encode``, as a file's are coded); ``unique``: the column is known to hold
    no value twice (a UNIQUE column), coded as it stands."""
    if unique:
        strings = values.to_numpy(zero_copy_only=False)
        return Text.from_codes(np.arange(strings.size), strings)
    enc = pc.dictionary_encode(values)
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    empty = pc.index(enc.dictionary, "").as_py()
    return Text.from_codes(codes, enc.dictionary.to_numpy(zero_copy_only=False), empty)


def _mixed(cur: Any, file: str, name: str, sql: StoreSql) -> LogError:
    """The first row whose clock (a number or a string) differs from the first row's."""
    kind = sql.is_number.format(name=name)
    row, value = cur.execute(
        "SELECT (SELECT COUNT(*) FROM pack_log WHERE seq <= x.s), "
        f"(SELECT {name} FROM pack_log WHERE seq = x.s) "
        f"FROM (SELECT MIN(seq) AS s FROM pack_log WHERE {name} IS NOT NULL AND {kind} != "
        f"(SELECT {kind} FROM pack_log WHERE {name} IS NOT NULL ORDER BY seq LIMIT 1)"
        ") AS x"
    ).fetchone()
    allowed = "one clock in a column: all integers or all ISO 8601 timestamps"
    return LogError(file, int(row), name, value, allowed)


def _sessions(cur: Any, file: str, sql: StoreSql) -> Table:
    n, int_time, rated, int_rated, users, agents = cur.execute(sql.kinds).fetchone()
    if n == 0:
        allowed = "a pack log with a session (ContextPacker.pack(..., session_id=...))"
        raise LogError(file, None, None, "no sessions", allowed)
    if 0 < int_time < n:
        raise _mixed(cur, file, "time", sql)
    if 0 < int_rated < rated:
        raise _mixed(cur, file, "rated_at", sql)

    def clock_column(name: str, numbers: bool) -> tuple[str, str]:
        return (name, "number") if numbers else (sql.text_clock.format(name=name), "text")

    clock = {"time": clock_column("time", int_time == n)}
    if rated:
        clock["rated_at"] = clock_column("rated_at", int_rated == rated)
    cols = {"session_id": ("session_id", "text"), "top_key": ("top_key", "text"),
            "withheld": ("withheld", "number"), "explore_rate": ("explore_rate", "number"),
            "outcome": ("outcome", "number"), "shown_keys": ("shown_keys", "text"),
            **clock}  # fmt: skip
    cols |= {c: (c, "text") for c, count in (("user_id", users), ("agent", agents)) if count}
    _, raw = read_columns(cur, "SELECT * FROM pack_log", cols, sql)
    out: dict[str, Any] = {}
    for name, (_, kind) in cols.items():
        a = raw[name]
        if name in ("time", "rated_at") and kind == "text":
            a = a.to_numpy(zero_copy_only=False)
            out[name] = np.where(a == "", None, a)  # NULL: no rating yet
        elif kind == "text":
            out[name] = _text(a, unique=name == "session_id")  # UNIQUE in the table
        else:
            out[name] = a
    return Table("sessions", file, n, out)


def _table(cur: Any, name: str, file: str, source: str, cols: dict, sql: StoreSql) -> Table | None:
    n, raw = read_columns(cur, source, cols, sql)
    if n == 0:
        return None
    out = {c: _text(raw[c]) if kind == "text" else raw[c] for c, (_, kind) in cols.items()}
    return Table(name, file, n, out)


def _missing(name: str, tables: set[str]) -> LogError | None:
    missing = sorted({"pack_log", "runs", "procedures"} - tables)
    if not missing:
        return None
    have = ", ".join(sorted(tables)) or "none"
    return LogError(name, None, None, f"no table {missing[0]} (has: {have})", NEEDS)


def _open_sqlite(path: Path) -> Any:
    """The file opened read-only (a file that is not procmem's refused untouched)."""
    from procmem_core.storefile import StoreFileError, identify, snapshot_uri

    try:
        if not path.is_file():
            raise LogError(str(path), None, None, "no such file", NEEDS)
        identify(path, NEEDS)
    except StoreFileError as exc:
        raise LogError(str(path), None, None, exc.problem, NEEDS) from None
    try:
        con = sqlite3.connect(snapshot_uri(path), uri=True)
    except sqlite3.Error as exc:
        raise LogError(str(path), None, None, f"cannot be read ({exc})", NEEDS) from None
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if (error := _missing(str(path), tables)) is not None:
        con.close()
        raise error
    con.execute("BEGIN")
    return con


def _open_postgres(uri: str, name: str) -> Any:
    """A connection in a read-only snapshot of the database (``graph.postgres``)."""
    from procmem_core.graph.postgres import connect
    from procmem_core.storefile import StoreFileError

    try:
        con = connect(uri, NEEDS)
    except StoreFileError as exc:
        raise LogError(name, None, None, exc.problem, NEEDS) from None
    con.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    rows = con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
    ).fetchall()
    if (error := _missing(name, {r[0] for r in rows})) is not None:
        con.close()
        raise error
    return con


def store_tables(path: str | Path) -> dict[str, Table]:
    """The store's pack log, ledger and revision history as raw ``Table``s, from an SQLite
    file or a PostgreSQL URI (one read transaction: a consistent snapshot)."""
    from procmem_core.graph.postgres import MissingDriver, is_uri, shown_uri

    if is_uri(path):
        name = shown_uri(str(path))
        try:
            import psycopg
        except ImportError:
            problem, needs = "psycopg 3 is not installed", str(MissingDriver())
            raise LogError(name, None, None, problem, needs) from None
        sql, errors = POSTGRES, (psycopg.Error,)
        opening = lambda: _open_postgres(str(path), name)  # noqa: E731
    else:
        name, sql, errors = str(Path(path)), SQLITE, (sqlite3.DatabaseError,)
        opening = lambda: _open_sqlite(Path(path))  # noqa: E731
    try:
        con = opening()
    except errors as exc:
        raise LogError(name, None, None, f"cannot be read ({exc})", NEEDS) from None
    try:
        cur = con.cursor()
        out = {"sessions": _sessions(cur, f"{name} (pack_log)", sql)}
        runs = _table(cur, "runs", f"{name} (runs)", sql.runs_source, RUNS, sql)
        revisions = _table(cur, "revisions", f"{name} (revisions)", sql.revisions_source,
                           REVISIONS, sql)  # fmt: skip
    except errors as exc:  # damaged rows, JSON the store did not write
        raise LogError(name, None, None, f"cannot be read ({exc})", NEEDS) from None
    finally:
        con.close()
    if runs is not None and revisions is not None:
        out |= {"runs": runs, "revisions": revisions}
    return out


def read_store(path: str | Path) -> Log:
    """A ``ProcedureStore`` (an SQLite file or a PostgreSQL URI) read and checked as a
    session log (``LogError`` on the
    first bad value, naming the file and table, row, column and value)."""
    t = store_tables(path)
    return check_log(t["sessions"], t.get("runs"), t.get("revisions"))
