"""Reading a session log (docs/logs.md) into the schema's raw ``Table``s: CSV, Parquet and
JSON Lines through pyarrow's C readers (no Python loop per row); string columns arrive as
dictionary codes (``Text``). ``procmem_core.logs.check_log`` then checks every value.

A log is a directory with ``sessions.<ext>`` and optionally ``runs.<ext>``,
``revisions.<ext>``; a file that is not in the format its name says is refused naming it.
``read_log`` also reads a ``ProcedureStore`` (an SQLite file or a PostgreSQL URI,
``procmem_core.logs.store``) and logs kept in MLflow (``mlflow_logs``: a run's log
folder, the live loop's traces); which one ``LOGS`` names is decided by its form
(``source_kind``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.json as pjson
import pyarrow.parquet as pq

from experiments.analyze.mlflow_logs import (
    EXPERIMENT_PREFIX,
    RUN_PREFIX,
    TRACES_PREFIX,
    run_folder,
    trace_sessions,
)
from procmem_core.errors import ParameterError
from procmem_core.graph.postgres import SCHEMES, is_uri, shown_uri
from procmem_core.logs import Log, LogError, Table, Text, check_log, columns
from procmem_core.logs.schema import FORMATS, TABLES
from procmem_core.logs.store import read_store

TEXT_KINDS = ("id", "text", "json", "verdict")
RUN_ID = re.compile(r"[0-9a-f]{32}")


def _text_columns(table: str) -> list[str]:
    return [c for c, kind in columns(table).items() if kind in TEXT_KINDS]


def _read_arrow(path: Path, table: str) -> pa.Table:
    try:
        if path.suffix == ".csv":
            types = {c: pa.string() for c in _text_columns(table)}
            convert = pcsv.ConvertOptions(column_types=types, strings_can_be_null=False)
            return pcsv.read_csv(path, convert_options=convert)
        if path.suffix == ".parquet":
            return pq.read_table(path)
        _first_json_object(path)
        return pjson.read_json(path)
    except pa.ArrowInvalid as exc:
        # "Column() changed from object to ...": a row that is not an object
        if path.suffix == ".jsonl" and "changed from" in str(exc) and "Column()" not in str(exc):
            return _mixed_json(path)  # valid JSON whose column mixes types: checked later
        raise _not_format(path, exc) from None
    except (pa.ArrowTypeError, OSError) as exc:
        raise _not_format(path, exc) from None


JSON_ROWS = "a JSON Lines file of one object per row, as its name ends in '.jsonl'"


def _first_json_object(path: Path) -> None:
    """Refuse a JSON Lines file whose first row is JSON but not an object before pyarrow
    reads it: its reader crashes the process (a segmentation fault) on a first ``null``.
    A first row that is no JSON at all is left to pyarrow's own error."""
    with path.open("rb") as f:
        found = next(((i, s) for i, s in enumerate(f, start=1) if s.strip()), None)
    if found is None:
        return
    line, text = found
    try:
        value = json.loads(text)
    except ValueError:
        return
    if not isinstance(value, dict):
        raise LogError(str(path), line, None, text.strip()[:80].decode("utf-8", "replace"),
                       JSON_ROWS)  # fmt: skip


def _not_format(path: Path, exc: Exception) -> LogError:
    first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    allowed = f"a {FORMATS[path.suffix]} file, as its name ends in {path.suffix!r}"
    if path.suffix == ".jsonl" and "Column() changed from object" in first:
        allowed = JSON_ROWS
    return LogError(str(path), None, None, f"unreadable ({first})", allowed)


def _mixed_json(path: Path) -> pa.Table:
    """JSON Lines whose columns mix types (a number and a string): pandas' C reader; a
    column pyarrow cannot type becomes strings (the checks then name the bad value)."""
    try:
        frame = pd.read_json(path, lines=True, dtype=False)
    except (ValueError, TypeError) as exc:  # a row that is not an object
        raise LogError(str(path), None, None, f"unreadable ({exc})", JSON_ROWS) from None
    if not all(isinstance(c, str) for c in frame.columns):
        raise LogError(str(path), None, None, "a row that is not an object", JSON_ROWS)
    cols = {}
    for c in frame.columns:
        try:
            cols[c] = pa.array(frame[c], from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            cols[c] = pa.array([None if v is None else str(v) for v in frame[c]], pa.string())
    return pa.table(cols)


def _column(col: pa.ChunkedArray, text: bool) -> object:
    """A column as numpy: ``Text`` for string columns, else a numeric / bool / datetime /
    object array (nulls: NaN for numbers, None otherwise)."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if text:
        enc = pc.dictionary_encode(col.cast(pa.string()))
        codes = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        empty = pc.index(enc.dictionary, "").as_py()
        return Text.from_codes(codes, enc.dictionary.to_numpy(zero_copy_only=False), empty)
    if pa.types.is_null(col.type):
        return np.full(len(col), np.nan)
    if pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
        return col.cast(pa.float64()).to_numpy(zero_copy_only=False)
    if pa.types.is_boolean(col.type) and col.null_count == 0:
        return col.to_numpy(zero_copy_only=False)
    if pa.types.is_timestamp(col.type) or pa.types.is_date(col.type):
        return col.cast(pa.timestamp("ns")).to_numpy(zero_copy_only=False)
    return col.to_numpy(zero_copy_only=False).astype(object)


def arrow_table(arrow: pa.Table, name: str, file: str) -> Table:
    """A pyarrow table as the schema's raw ``Table`` (only the schema's columns converted;
    extra columns are kept out and ignored)."""
    known = columns(name)
    cols = {
        c: _column(arrow.column(c), known[c] in TEXT_KINDS)
        for c in arrow.column_names
        if c in known
    }
    extras = tuple(c for c in arrow.column_names if c not in known)
    return Table(name, file, arrow.num_rows, cols, extras)


def find_files(directory: Path) -> dict[str, Path]:
    """``sessions`` (required), ``runs``, ``revisions`` of a log directory by name."""
    if not directory.is_dir():
        raise LogError(str(directory), None, None, "not a directory", "a log directory")
    found: dict[str, Path] = {}
    for name in TABLES:
        hits = sorted(p for p in directory.glob(f"{name}.*") if p.suffix in FORMATS)
        if len(hits) > 1:
            raise LogError(str(directory), None, None, [p.name for p in hits], f"one {name} file")
        if hits:
            found[name] = hits[0]
    if "sessions" not in found:
        allowed = "a sessions.csv, sessions.parquet or sessions.jsonl file"
        raise LogError(str(directory), None, None, "no sessions file", allowed)
    return found


def read_tables(directory: str | Path) -> dict[str, Table]:
    """Every file of a log directory as a raw ``Table``."""
    files = find_files(Path(directory))
    return {n: arrow_table(_read_arrow(p, n), n, str(p)) for n, p in files.items()}


ALLOWED = (
    "a log directory (sessions.*, runs.*, revisions.*), a ProcedureStore file (SQLite) or "
    "URI (postgresql://<user>@<host>[:<port>]/<database>; schemes " + ", ".join(SCHEMES) + "), "
    "runs:/<run id>[/<folder>], "
    "traces:/<run id>, experiments:/<experiment name> or a bare 32-hex MLflow run id"
)


def source_kind(source: str | Path) -> tuple[str, str]:
    """What ``source`` names, decided by its form before anything is read: ``directory``,
    ``store`` (an existing file, or a PostgreSQL URI: ``graph.postgres.SCHEMES``; another
    ``scheme://`` is refused),
    ``artifacts`` (``runs:/``, or a bare 32-hex run id that
    is no path), ``traces`` (``traces:/``, ``experiments:/``); anything else is refused
    naming the argument."""
    text = str(source)
    if text.startswith(RUN_PREFIX):
        return "artifacts", text
    if text.startswith((TRACES_PREFIX, EXPERIMENT_PREFIX)):
        return "traces", text
    try:
        if is_uri(text):
            return "store", text
    except ParameterError:  # another scheme://: not a path either
        raise LogError(
            "LOGS", None, None, shown_uri(text), f"an unknown scheme; {ALLOWED}"
        ) from None
    path = Path(text)
    if path.is_dir():
        return "directory", text
    if path.is_file():
        if path.suffix in FORMATS:
            raise LogError(
                "LOGS", None, None, text,
                f"the directory holding {path.name}, not the file (or a ProcedureStore file)",
            )  # fmt: skip
        return "store", text
    if RUN_ID.fullmatch(text):
        return "artifacts", RUN_PREFIX + text
    raise LogError("LOGS", None, None, text, f"no such file or directory; {ALLOWED}")


def read_log(source: str | Path, tracking_uri: str | None = None) -> Log:
    """A log read and checked (``LogError`` on the first bad value) from any source
    ``source_kind`` accepts."""
    kind, text = source_kind(source)
    if kind == "store":
        return read_store(text)
    if kind == "traces":
        return check_log(trace_sessions(text, tracking_uri))
    if kind == "artifacts":
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            folder = run_folder(text, tracking_uri, Path(tmp))
            try:
                return read_log(folder)
            except LogError as exc:  # named by the run's folder, not the temporary copy
                name = exc.file.replace(str(folder), text.rstrip("/"))
                raise LogError(name, exc.row, exc.column, exc.value, exc.allowed) from None
    t = read_tables(text)
    return check_log(t["sessions"], t.get("runs"), t.get("revisions"))
