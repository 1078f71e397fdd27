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

Every column is read by SQL into numpy arrays (strings dictionary-encoded by
``np.unique``), never a Python loop per row; ``check_log`` then checks the values as for a
log directory. The file is opened read-only and never written.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from procmem_core.logs.schema import Log, LogError, Table, Text, check_log

NEEDS = "a procmem ProcedureStore file (SQLite, schema 3 or later) whose packs were logged"

SESSIONS_SQL = """
SELECT session_id, time, top_key, withheld, explore_rate, outcome, shown_keys,
       COALESCE(user_id, ''), COALESCE(agent, ''), rated_at,
       typeof(time) = 'integer',
       CASE WHEN rated_at IS NULL THEN NULL ELSE typeof(rated_at) = 'integer' END
FROM pack_log ORDER BY seq
"""
RUNS_SQL = """
SELECT namespace || '/' || key, CAST(revision AS TEXT), json_extract(body, '$.ok'), run_id,
       json_extract(body, '$.path'), json_extract(body, '$.cost'),
       COALESCE(json_extract(body, '$.agent'), '')
FROM runs ORDER BY run_id
"""
REVISIONS_SQL = """
WITH h AS (
  SELECT p.rowid AS pr, p.namespace AS ns, p.key AS k, CAST(j.key AS INTEGER) AS i,
         json_extract(j.value, '$.revision') AS rev, json_extract(j.value, '$.outcome') AS o,
         json_extract(j.value, '$.proposed_at') AS proposed,
         json_extract(j.value, '$.decided_at') AS decided,
         json_extract(p.state, '$.pending_since') AS since
  FROM procedures p, json_each(p.state, '$.history') j)
SELECT a.ns || '/' || a.k, CAST(a.rev AS TEXT),
       COALESCE(CAST((SELECT b.rev FROM h b WHERE b.pr = a.pr AND b.i < a.i
                      AND b.o IN ('original', 'accepted') ORDER BY b.i DESC LIMIT 1)
                     AS TEXT), ''),
       CASE WHEN a.o = 'original' THEN 0
            ELSE COALESCE(a.proposed, CASE WHEN a.o = 'pending' THEN a.since END,
                          (SELECT MIN(r.run_id) - 1 FROM runs r WHERE r.namespace = a.ns
                           AND r.key = a.k AND r.revision = a.rev), a.since) END,
       a.decided,
       CASE WHEN a.o = 'original' THEN 'accepted' ELSE a.o END
FROM h a ORDER BY a.pr, a.i
"""


def _text(values: tuple) -> Text:
    """Strings ("" empty) as dictionary codes in order of first appearance, as pyarrow's
    ``dictionary_encode`` numbers them for files (so sums over codes, e.g. the clustered
    SE's, add in the same order whichever reader read the log)."""
    if not values:
        return Text(np.zeros(0, np.int64), np.zeros(0, object))
    uniq, first, inverse = np.unique(
        np.asarray(values, dtype=str), return_index=True, return_inverse=True
    )
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return Text.from_codes(rank[inverse], uniq[order].astype(object))


def _time(file: str, name: str, values: tuple, integer: tuple) -> Any:
    """Integers (all rows integer-typed, NULL as NaN) or timestamp strings; a column
    mixing the two is refused at the first row whose kind differs from the first row's."""
    ints = np.asarray(integer, dtype=float)  # 1 integer, 0 other, NaN NULL (no rating)
    kinds = ints[~np.isnan(ints)]
    if kinds.size and (kinds == 1).all():
        return np.asarray(values, dtype=float)
    if not (kinds == 1).any():
        return np.asarray(values, dtype=object)
    odd = np.flatnonzero(~np.isnan(ints) & (ints != kinds[0]))[0]
    raise LogError(file, int(odd) + 1, name, values[odd],
                   "one clock in a column: all integers or all ISO 8601 timestamps")  # fmt: skip


def _columns(rows: list[tuple], width: int) -> list[tuple]:
    return list(zip(*rows, strict=True)) if rows else [()] * width


def _sessions(cur: sqlite3.Cursor, file: str) -> Table:
    rows = cur.execute(SESSIONS_SQL).fetchall()
    if not rows:
        allowed = "a pack log with a session (ContextPacker.pack(..., session_id=...))"
        raise LogError(file, None, None, "no sessions", allowed)
    sid, time, top, withheld, rate, outcome, shown, user, agent, rated, t_int, r_int = _columns(
        rows, 12
    )
    cols = {
        "session_id": _text(sid),
        "time": _time(file, "time", time, t_int),
        "top_key": _text(top),
        "withheld": np.asarray(withheld, dtype=np.int64),
        "explore_rate": np.asarray(rate, dtype=float),
        "outcome": np.asarray(outcome, dtype=float),
        "shown_keys": _text(shown),
        "user_id": _text(user),
        "agent": _text(agent),
        "rated_at": _time(file, "rated_at", rated, r_int),
    }
    if np.isnan(np.asarray(r_int, dtype=float)).all():
        del cols["rated_at"]  # never rated: absent, as in a file without the column
    for optional in ("user_id", "agent"):
        if (cols[optional].codes < 0).all():
            del cols[optional]
    return Table("sessions", file, len(rows), cols)


def _runs(cur: sqlite3.Cursor, file: str) -> Table | None:
    rows = cur.execute(RUNS_SQL).fetchall()
    if not rows:
        return None
    key, rev, ok, run_id, path, cost, agent = _columns(rows, 7)
    cols = {
        "key": _text(key), "revision": _text(rev), "ok": np.asarray(ok, dtype=np.int64),
        "time": np.asarray(run_id, dtype=float), "path": _text(path),
        "cost": np.asarray(cost, dtype=float), "agent": _text(agent),
    }  # fmt: skip
    return Table("runs", file, len(rows), cols)


def _revisions(cur: sqlite3.Cursor, file: str) -> Table | None:
    rows = cur.execute(REVISIONS_SQL).fetchall()
    if not rows:
        return None
    key, rev, prior, proposed, decided, verdict = _columns(rows, 6)
    cols = {
        "key": _text(key), "revision": _text(rev), "prior_revision": _text(prior),
        "proposed_at": np.asarray(proposed, dtype=float),
        "decided_at": np.asarray(decided, dtype=float), "verdict": _text(verdict),
    }  # fmt: skip
    return Table("revisions", file, len(rows), cols)


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
    con = _connect(path)
    try:
        cur = con.cursor()
        cur.execute("BEGIN")
        out = {"sessions": _sessions(cur, f"{path} (pack_log)")}
        runs, revisions = _runs(cur, f"{path} (runs)"), _revisions(cur, f"{path} (revisions)")
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
