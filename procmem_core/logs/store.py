"""A ``ProcedureStore`` file read as a session log (docs/logs.md, "Reading from a store").

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
table has SQLite concatenate each column into one string (``group_concat``; integers as
SQLite prints them, other reals with 17 significant digits, ``%!.17g``, which round-trip
exactly; strings joined by the unit separator U+001F), split in C and put in ``seq``
order by numpy (a string holding U+001F makes its column fall back to ``fetchall``).
Strings are dictionary-coded in order of first appearance, as pyarrow's
``dictionary_encode`` codes a file's, so sums over codes add in the same order whichever
reader read the log. ``check_log`` then checks the values as for a log directory.
The file is opened read-only and never written.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from procmem_core.logs.schema import Log, LogError, Table, Text, check_log

NEEDS = "a procmem ProcedureStore file (SQLite, schema 3 or later) whose packs were logged"
SEP = "\x1f"

RUNS_SOURCE = """
SELECT run_id AS seq, namespace || '/' || key AS k, CAST(revision AS TEXT) AS revision,
       json_extract(body, '$.ok') AS ok, json_extract(body, '$.path') AS path,
       json_extract(body, '$.cost') AS cost, json_extract(body, '$.agent') AS agent
FROM runs
"""
RUNS = {
    "key": ("k", "text"),
    "revision": ("revision", "text"),
    "ok": ("ok", "number"),
    "time": ("seq", "number"),
    "path": ("path", "text"),
    "cost": ("cost", "number"),
    "agent": ("agent", "text"),
}
REVISIONS_SOURCE = """
WITH h AS (
  SELECT p.rowid AS pr, p.namespace AS ns, p.key AS k, CAST(j.key AS INTEGER) AS i,
         json_extract(j.value, '$.revision') AS rev, json_extract(j.value, '$.outcome') AS o,
         json_extract(j.value, '$.proposed_at') AS proposed,
         json_extract(j.value, '$.decided_at') AS decided,
         json_extract(p.state, '$.pending_since') AS since
  FROM procedures p, json_each(p.state, '$.history') j)
SELECT ROW_NUMBER() OVER (ORDER BY a.pr, a.i) AS seq, a.ns || '/' || a.k AS key,
       CAST(a.rev AS TEXT) AS revision,
       CAST((SELECT b.rev FROM h b WHERE b.pr = a.pr AND b.i < a.i
             AND b.o IN ('original', 'accepted') ORDER BY b.i DESC LIMIT 1) AS TEXT)
         AS prior_revision,
       CASE WHEN a.o = 'original' THEN 0
            ELSE COALESCE(a.proposed, CASE WHEN a.o = 'pending' THEN a.since END,
                          (SELECT MIN(r.run_id) - 1 FROM runs r WHERE r.namespace = a.ns
                           AND r.key = a.k AND r.revision = a.rev), a.since) END
         AS proposed_at,
       a.decided AS decided_at,
       CASE WHEN a.o = 'original' THEN 'accepted' ELSE a.o END AS verdict
FROM h a
"""
REVISIONS = {
    "key": ("key", "text"),
    "revision": ("revision", "text"),
    "prior_revision": ("prior_revision", "text"),
    "proposed_at": ("proposed_at", "number"),
    "decided_at": ("decided_at", "number"),
    "verdict": ("verdict", "text"),
}
KINDS_SQL = """
SELECT COUNT(*), TOTAL(typeof(time) IN ('integer', 'real')), TOTAL(rated_at IS NOT NULL),
       TOTAL(typeof(rated_at) IN ('integer', 'real')), TOTAL(user_id IS NOT NULL),
       TOTAL(agent IS NOT NULL)
FROM pack_log
"""


def _concat(expr: str, kind: str) -> str:
    """One column as one string: integers (and integral reals) as SQLite prints them,
    other reals by ``printf('%!.17g')`` (exact, and slower), strings joined by U+001F."""
    if kind == "number":
        value = (
            f"CASE WHEN {expr} IS NULL THEN 'nan' WHEN typeof({expr}) = 'integer' THEN {expr} "
            f"WHEN {expr} = CAST({expr} AS INTEGER) THEN CAST({expr} AS INTEGER) "
            f"ELSE printf('%!.17g', {expr}) END"
        )
        return f"group_concat({value}, ' ')"
    return f"group_concat(COALESCE({expr}, ''), char(31))"


def read_columns(
    cur: sqlite3.Cursor, source: str, cols: dict[str, tuple[str, str]]
) -> tuple[int, dict[str, np.ndarray]]:
    """Every column of ``source`` (a table or query with an integer ``seq``) in ``seq``
    order, by one query (module doc): ``"number"`` columns as floats (NULL: NaN),
    ``"text"`` columns as object arrays of strings (NULL: "")."""
    parts = ["COUNT(*)", "group_concat(seq, ' ')"]
    parts += [_concat(expr, kind) for expr, kind in cols.values()]
    row = cur.execute(f"SELECT {', '.join(parts)} FROM ({source})").fetchone()
    n = int(row[0])
    if n == 0:
        return 0, {c: np.zeros(0, float if k == "number" else object) for c, (_, k) in
                   cols.items()}  # fmt: skip
    seq = np.array(row[1].split(" "), dtype=np.int64)
    order = slice(None) if (np.diff(seq) > 0).all() else np.argsort(seq, kind="stable")
    out = {}
    for (name, (expr, kind)), text in zip(cols.items(), row[2:], strict=True):
        if kind == "number":
            out[name] = np.array(text.split(" "), dtype=float)[order]
            continue
        items = text.split(SEP)
        if len(items) == n:
            out[name] = np.array(items, dtype=object)[order]
        else:  # a string holds the separator itself: this column row by row, in seq order
            rows = cur.execute(f"SELECT COALESCE({expr}, '') FROM ({source}) ORDER BY seq")
            out[name] = np.array(rows.fetchall(), dtype=object).reshape(n)
    return n, out


def _text(values: np.ndarray, unique: bool = False) -> Text:
    """Strings ("" empty) as dictionary codes in order of first appearance; ``unique``:
    the column is known to hold no value twice (a UNIQUE column), coded as it stands."""
    if unique:
        return Text.from_codes(np.arange(values.size), values)
    uniq, first, inverse = np.unique(values.astype(str), return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return Text.from_codes(rank[inverse], uniq[order].astype(object))


def _mixed(cur: sqlite3.Cursor, file: str, name: str) -> LogError:
    """The first row whose clock (a number or a string) differs from the first row's."""
    kind = f"(typeof({name}) IN ('integer', 'real'))"
    row, value = cur.execute(
        f"SELECT COUNT(*), (SELECT {name} FROM pack_log WHERE seq = x.s) FROM pack_log, "
        f"(SELECT MIN(seq) AS s FROM pack_log WHERE {name} IS NOT NULL AND {kind} != "
        f"(SELECT {kind} FROM pack_log WHERE {name} IS NOT NULL ORDER BY seq LIMIT 1)"
        ") AS x WHERE seq <= x.s"
    ).fetchone()
    allowed = "one clock in a column: all integers or all ISO 8601 timestamps"
    return LogError(file, int(row), name, value, allowed)


def _sessions(cur: sqlite3.Cursor, file: str) -> Table:
    n, int_time, rated, int_rated, users, agents = cur.execute(KINDS_SQL).fetchone()
    if n == 0:
        allowed = "a pack log with a session (ContextPacker.pack(..., session_id=...))"
        raise LogError(file, None, None, "no sessions", allowed)
    if 0 < int_time < n:
        raise _mixed(cur, file, "time")
    if 0 < int_rated < rated:
        raise _mixed(cur, file, "rated_at")
    clock = {"time": ("time", "number" if int_time == n else "text")}
    if rated:
        clock["rated_at"] = ("rated_at", "number" if int_rated == rated else "text")
    cols = {"session_id": ("session_id", "text"), "top_key": ("top_key", "text"),
            "withheld": ("withheld", "number"), "explore_rate": ("explore_rate", "number"),
            "outcome": ("outcome", "number"), "shown_keys": ("shown_keys", "text"),
            **clock}  # fmt: skip
    cols |= {c: (c, "text") for c, count in (("user_id", users), ("agent", agents)) if count}
    _, raw = read_columns(cur, "pack_log", cols)
    out: dict[str, Any] = {}
    for name, (_, kind) in cols.items():
        a = raw[name]
        if name in ("time", "rated_at") and kind == "text":
            out[name] = np.where(a == "", None, a)  # NULL: no rating yet
        elif kind == "text":
            out[name] = _text(a, unique=name == "session_id")  # UNIQUE in the table
        else:
            out[name] = a
    return Table("sessions", file, n, out)


def _table(cur: sqlite3.Cursor, name: str, file: str, source: str, cols: dict) -> Table | None:
    n, raw = read_columns(cur, source, cols)
    if n == 0:
        return None
    out = {c: _text(raw[c]) if kind == "text" else raw[c] for c, (_, kind) in cols.items()}
    return Table(name, file, n, out)


def _connect(path: Path) -> sqlite3.Connection:
    from procmem_core.storefile import StoreFileError, identify

    try:
        if not path.is_file():
            raise LogError(str(path), None, None, "no such file", NEEDS)
        identify(path, NEEDS)
    except StoreFileError as exc:
        raise LogError(str(path), None, None, exc.problem, NEEDS) from None
    con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    missing = sorted({"pack_log", "runs", "procedures"} - tables)
    if missing:
        con.close()
        have = ", ".join(sorted(tables)) or "none"
        raise LogError(str(path), None, None, f"no table {missing[0]} (has: {have})", NEEDS)
    return con


def store_tables(path: str | Path) -> dict[str, Table]:
    """The store's pack log, ledger and revision history as raw ``Table``s (one read
    transaction: a consistent snapshot)."""
    path = Path(path)
    try:
        con = _connect(path)
    except sqlite3.DatabaseError as exc:
        raise LogError(str(path), None, None, f"cannot be read ({exc})", NEEDS) from None
    try:
        cur = con.cursor()
        cur.execute("BEGIN")
        out = {"sessions": _sessions(cur, f"{path} (pack_log)")}
        runs = _table(cur, "runs", f"{path} (runs)", RUNS_SOURCE, RUNS)
        revisions = _table(cur, "revisions", f"{path} (revisions)", REVISIONS_SOURCE, REVISIONS)
    except sqlite3.DatabaseError as exc:  # damaged rows, JSON the store did not write
        raise LogError(str(path), None, None, f"cannot be read ({exc})", NEEDS) from None
    finally:
        con.close()
    if runs is not None and revisions is not None:
        out |= {"runs": runs, "revisions": revisions}
    return out


def read_store(path: str | Path) -> Log:
    """A ``ProcedureStore`` file read and checked as a session log (``LogError`` on the
    first bad value, naming the file and table, row, column and value)."""
    t = store_tables(path)
    return check_log(t["sessions"], t.get("runs"), t.get("revisions"))
