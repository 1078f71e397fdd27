"""The procmem session log, version 1: its columns (``schema_v1.json``, shipped in the
package) and every check of a log's values, on numpy arrays, before any analysis.

A reader (``experiments.analyze.read``: CSV, Parquet, JSON Lines, a store) hands each file
over as a ``Table`` of raw columns: numeric or boolean numpy arrays, ``Text`` (dictionary
codes and their strings) or object arrays of strings. ``check_log`` converts every column
by its kind and refuses the first bad value with a ``LogError`` naming the file, the row
(1-based, the header not counted), the column, the value and what is allowed.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from procmem_core.logs.tables import Log, LogError, Sessions, Table, Text

SCHEMA_FILE = "schema_v1.json"
TABLES = ("sessions", "runs", "revisions")
VERDICTS = ("accepted", "reverted", "pending")
FORMATS = {".csv": "CSV", ".parquet": "Parquet", ".jsonl": "JSON Lines"}
UNITS = {"seconds": "timestamps", "ticks": "integer ticks"}


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema of the log (``version``, and one row schema per table)."""
    text = resources.files("procmem_core.logs").joinpath(SCHEMA_FILE).read_text("utf-8")
    return json.loads(text)


SCHEMA_VERSION: int = schema()["version"]


def columns(table: str) -> dict[str, str]:
    """Column name -> kind (id, text, bool, rate, outcome, unit, number, time, json,
    verdict) of one table, required columns first."""
    spec = schema()["tables"][table]
    return {name: p["x-procmem-kind"] for name, p in spec["properties"].items()}


def required(table: str) -> tuple[str, ...]:
    return tuple(schema()["tables"][table]["required"])


def _first(bad: np.ndarray) -> int:
    return int(np.flatnonzero(bad)[0])


def _raw(col: Any, row: int) -> Any:
    """The value of ``row`` as the file holds it: an empty cell (read as NaN or null) is
    named as the empty string, not as the NaN a reader made of it."""
    if isinstance(col, Text):
        return col.value(row)
    v = col[row]
    v = v.item() if isinstance(v, np.generic) else v
    return "" if v is None or (isinstance(v, float) and v != v) else v


def _is_empty(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return np.isnan(a)
    if a.dtype.kind == "O":
        return np.array([v is None or v == "" or v != v for v in a], dtype=bool)
    return np.zeros(a.shape, dtype=bool)


def _as_float(t: Table, name: str, a: Any, allowed: str) -> np.ndarray:
    """A numeric column as float (empty -> NaN); strings parsed by numpy, the first that
    does not parse refused."""
    if isinstance(a, Text):
        a = a.strings().astype(object)
    a = np.asarray(a)
    if a.dtype.kind in "biuf":
        return a.astype(float)
    empty = _is_empty(a)
    text = np.where(empty, "nan", a).astype(str)
    try:
        return text.astype(float)
    except ValueError:
        for i, s in enumerate(text):
            try:
                float(s)
            except ValueError:
                raise LogError(t.file, i + 1, name, _raw(a, i), allowed) from None
        raise


def _as_bool(t: Table, name: str, a: Any) -> np.ndarray:
    allowed = "true or false (also 1/0)"
    if isinstance(a, Text):
        a = a.strings().astype(object)
    a = np.asarray(a)
    if a.dtype.kind == "b":
        return a
    if a.dtype.kind in "iuf":
        bad = ~np.isin(a, (0, 1))
        if bad.any():
            raise LogError(t.file, _first(bad) + 1, name, _raw(a, _first(bad)), allowed)
        return a.astype(bool)
    s = np.char.lower(np.where(_is_empty(a), "", a).astype(str))
    bad = ~np.isin(s, ("true", "false", "1", "0"))
    if bad.any():
        raise LogError(t.file, _first(bad) + 1, name, _raw(a, _first(bad)), allowed)
    return np.isin(s, ("true", "1"))


def _as_time(t: Table, name: str, a: Any, nullable: bool) -> tuple[np.ndarray, str]:
    """Seconds since the epoch (timestamps) or the integers themselves."""
    allowed = "an ISO 8601 timestamp or an integer" + (" (or empty)" if nullable else "")
    if isinstance(a, Text):
        a = a.strings().astype(object)
    a = np.asarray(a)
    if a.dtype.kind == "M":
        ns = a.astype("datetime64[ns]")
        out = ns.astype("int64").astype(float) / 1e9
        return np.where(np.isnat(ns), np.nan, out), "seconds"
    if a.dtype.kind in "iuf":
        f = a.astype(float)
        bad = (np.isnan(f) & (not nullable)) | (np.isfinite(f) & (f != np.round(f)))
        if bad.any():
            raise LogError(t.file, _first(bad) + 1, name, _raw(a, _first(bad)), allowed)
        return f, "ticks"
    empty = _is_empty(a)
    if _one_kind(t, name, a, empty, allowed):  # integers written as text: ticks
        return _as_time(t, name, np.where(empty, "nan", a).astype(str).astype(float), nullable)
    try:
        ns = np.where(empty, None, a).astype("datetime64[ns]")
    except ValueError:
        ns = None
    if ns is None or (np.isnat(ns) & ~empty).any():
        for i, v in enumerate(a):
            if not empty[i]:
                try:
                    np.datetime64(str(v).replace("Z", "").split("+")[0])
                except ValueError:
                    raise LogError(t.file, i + 1, name, v, allowed) from None
        raise LogError(t.file, None, name, "mixed values", allowed)
    return _as_time(t, name, ns, nullable)[0], "seconds"


def _one_kind(t: Table, name: str, a: np.ndarray, empty: np.ndarray, allowed: str) -> bool:
    """Whether a text time column holds integers (``True``) or timestamps; both at once
    are refused: numpy would read a bare integer as a year ("5" as 0005-01-01, then
    wrapped in nanoseconds to 1758)."""
    text = np.where(empty, "", a).astype(str)
    digits = np.char.isdigit(np.char.lstrip(text, "+-")) & ~empty
    if digits.any() and not digits[~empty].all():
        row = _first(digits) if not digits[_first(~empty)] else _first(~digits & ~empty)
        first = _first(~empty) + 1
        raise LogError(t.file, row + 1, name, _raw(a, row),
                       f"{allowed}, one kind per column (row {first} is "
                       f"{'an integer' if digits[first - 1] else 'a timestamp'})")  # fmt: skip
    return bool(digits.any())


def _as_text(a: Any) -> Text:
    return a if isinstance(a, Text) else Text.encode(np.asarray(a, dtype=object))


def _present(t: Table) -> None:
    for col in required(t.name):
        if col not in t.columns:
            have = ", ".join(sorted([*t.columns, *t.extras])) or "none"
            raise LogError(
                t.file, None, col, "missing", f"a {t.name} file needs column {col!r} (has: {have})"
            )


def _convert(t: Table) -> tuple[dict[str, Any], str]:
    """Every known column of ``t`` converted by its kind; the time unit."""
    out: dict[str, Any] = {}
    unit = "ticks"
    need = required(t.name)
    for name, kind in columns(t.name).items():
        if name not in t.columns:
            continue
        a = t.columns[name]
        if kind in ("id", "text", "json"):
            out[name] = _as_text(a)
        elif kind == "bool":
            out[name] = _as_bool(t, name, a)
        elif kind == "time":
            out[name], u = _as_time(t, name, a, nullable=name not in need)
            if name in need:
                unit, main = u, name
            elif u != unit and np.isfinite(out[name]).any():  # seconds against ticks
                raise LogError(t.file, None, name, UNITS[u], f"{UNITS[unit]}, as {main!r} is")
        elif kind == "verdict":
            out[name] = _check_verdict(t, name, _as_text(a))
        else:
            out[name] = _number(t, name, kind, a)
    return out, unit


def _number(t: Table, name: str, kind: str, a: Any) -> np.ndarray:
    allowed = {
        "rate": "a number in [0, 1)",
        "outcome": "0, 1 or empty (no rating)",
        "unit": "a number in [0, 1] or empty",
        "number": "a finite number or empty",
    }[kind]
    x = _as_float(t, name, a, allowed)
    if kind == "rate":
        bad = ~((x >= 0) & (x < 1))
    elif kind == "outcome":
        bad = ~(np.isnan(x) | (x == 0) | (x == 1))
    elif kind == "unit":
        bad = ~(np.isnan(x) | ((x >= 0) & (x <= 1)))
    else:
        bad = np.isinf(x)
    if bad.any():
        raise LogError(t.file, _first(bad) + 1, name, _raw(a, _first(bad)), allowed)
    return x


def _check_verdict(t: Table, name: str, v: Text) -> Text:
    bad_values = ~np.isin(v.values, VERDICTS)
    if bad_values.any():
        row = _first(v.codes == _first(bad_values))
        raise LogError(t.file, row + 1, name, v.value(row), f"one of {', '.join(VERDICTS)}")
    return v


def _sessions(t: Table) -> Sessions:
    cols, unit = _convert(t)
    rated_at = cols.get("rated_at")
    if rated_at is not None and (rated_at < cols["time"]).any():
        row = _first(rated_at < cols["time"])
        raise LogError(
            t.file, row + 1, "rated_at", _raw(t.columns["rated_at"], row),
            f"a time at or after the session's time ({_raw(t.columns['time'], row)!r})",
        )  # fmt: skip
    sid: Text = cols["session_id"]
    if (sid.codes < 0).any():
        row = _first(sid.codes < 0)
        raise LogError(t.file, row + 1, "session_id", "", "a non-empty, unique string")
    counts = np.bincount(sid.codes, minlength=sid.values.size)
    if (counts > 1).any():
        dup = np.flatnonzero(counts > 1)[0]
        rows = np.flatnonzero(sid.codes == dup)
        raise LogError(
            t.file, int(rows[1]) + 1, "session_id", sid.value(rows[1]),
            f"a unique string (row {int(rows[0]) + 1} has it too)",
        )  # fmt: skip
    if np.isnan(cols["time"]).any():
        row = _first(np.isnan(cols["time"]))
        raise LogError(t.file, row + 1, "time", "", "an ISO 8601 timestamp or an integer")
    top: Text = cols["top_key"]
    orphan = cols["withheld"] & (top.codes < 0)
    if orphan.any():
        row = _first(orphan)
        raise LogError(t.file, row + 1, "top_key", "", "a procedure key when withheld is true")
    fixed = ("session_id", "time", "top_key", "withheld", "explore_rate", "outcome")
    optional = {k: v for k, v in cols.items() if k not in fixed}
    return Sessions(
        t.file, sid, cols["time"], top.codes.astype(np.int64), top.values,
        cols["withheld"], cols["explore_rate"], cols["outcome"], optional, unit,
    )  # fmt: skip


def _pairs(key: Text, rev: Text) -> np.ndarray:
    return np.char.add(np.char.add(key.strings().astype(str), "\x1f"), rev.strings().astype(str))


def _unique_revisions(t: Table, v: dict) -> None:
    """One row per (key, revision): a second row would be replayed twice, with two
    proposal times and possibly two verdicts for one revision."""
    pairs = _pairs(v["key"], v["revision"])
    _, first, inverse = np.unique(pairs, return_index=True, return_inverse=True)
    dup = first[inverse] != np.arange(pairs.size)
    if dup.any():
        row = _first(dup)
        raise LogError(
            t.file, row + 1, "revision", v["revision"].value(row),
            f"one row per revision of key {v['key'].value(row)!r} "
            f"(row {int(first[inverse[row]]) + 1} has it too)",
        )  # fmt: skip


def _known_priors(t: Table, v: dict) -> None:
    """Every ``prior_revision`` a revision of the same key listed in the table: an
    unlisted prior has no runs (each run names a listed revision), so a gate replayed
    against it would judge the revision on nothing."""
    prior = v["prior_revision"]
    named = prior.codes >= 0
    unknown = named & ~np.isin(_pairs(v["key"], prior), _pairs(v["key"], v["revision"]))
    if unknown.any():
        row = _first(unknown)
        raise LogError(
            t.file, row + 1, "prior_revision", prior.value(row),
            f"a revision of key {v['key'].value(row)!r} listed in this file, or empty for a "
            "first revision",
        )  # fmt: skip


def _runs_revisions(runs: Table | None, revisions: Table | None) -> tuple[dict | None, dict | None]:
    r, r_unit = _convert(runs) if runs is not None else (None, None)
    v, v_unit = _convert(revisions) if revisions is not None else (None, None)
    if r is not None and v is not None and r_unit != v_unit:
        raise LogError(revisions.file, None, "proposed_at", UNITS[v_unit],
                       f"{UNITS[r_unit]}, as {runs.file}'s 'time' is")  # fmt: skip
    for t, cols in ((runs, r), (revisions, v)):
        if cols is None:
            continue
        for name in ("key", "revision"):
            if (cols[name].codes < 0).any():
                row = _first(cols[name].codes < 0)
                raise LogError(t.file, row + 1, name, "", "a non-empty string")
    if v is not None:
        _unique_revisions(revisions, v)
        _known_priors(revisions, v)
    if r is not None and v is not None:
        known = _pairs(v["key"], v["revision"])
        missing = ~np.isin(_pairs(r["key"], r["revision"]), known)
        if missing.any():
            row = _first(missing)
            raise LogError(
                runs.file, row + 1, "revision", r["revision"].value(row),
                f"a revision of key {r['key'].value(row)!r} listed in {revisions.file}",
            )  # fmt: skip
    return r, v


def check_log(sessions: Table, runs: Table | None = None, revisions: Table | None = None) -> Log:
    """Every table's required columns first, then each table's values, then the runs
    against the revisions: the first problem raises ``LogError``."""
    for t in (sessions, runs, revisions):
        if t is not None:
            _present(t)
    s = _sessions(sessions)
    r, v = _runs_revisions(runs, revisions)
    return Log(s, r, v)
