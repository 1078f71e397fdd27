"""Checking a tracking store before a report reads it: a SQLite file read without
writing a byte, a server's ``/health`` or a database's connection within
``PROBE_SECONDS`` (``check_store``)."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from functools import cache
from pathlib import Path

from procmem_core.probe import database_problem, server_problem, shown_database
from procmem_core.storefile import read_only_connection, sqlite_file_problem, sqlite_url_path
from reports.errors import NoSweepError, ReportError

HTTP_BOUNDS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "3",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
}
"""A report's MLflow calls to a server: each at most 30 s, retried 3 times with back-off
1, 2, 4 s (MLflow's defaults, 7 retries and 120 s, wait minutes on a server that is
gone). Set by ``python -m reports`` unless the variable is already set."""
PROBE_SECONDS = 5.0
"""How long the check before a report waits for a tracking server's ``/health`` or a
tracking database's connection."""
DATABASE_URI = re.compile(r"(postgresql|mysql|mssql)(\+\w+)?://")
"""A tracking database MLflow reaches over the network (it retries a connection that
fails for minutes, so the report connects once first, bounded)."""


@cache
def check_store(uri: str) -> None:
    """Before MLflow opens ``uri`` (which would create a missing SQLite store, or add its
    tables to any SQLite file): a SQLite store must exist and be a whole MLflow store of
    this MLflow's schema, identified read-only, a server must answer ``/health`` and a
    database (``DATABASE_URI``) take a connection within ``PROBE_SECONDS``. Raises
    ``ReportError`` naming the URI and the file."""
    path = sqlite_url_path(uri)  # the file MLflow would open: query dropped, %-decoded
    if path is not None:
        if path.exists() and not path.is_file():
            what = "is a folder" if path.is_dir() else "is not a regular file"
            raise ReportError(f"tracking store {uri}: {path} {what}, not an MLflow store")
        if not path.is_file() or path.stat().st_size == 0:
            what = "is empty" if path.is_file() else "does not exist"
            raise NoSweepError(
                f"tracking store {uri}: {path} {what}; nothing to report (run a sweep "
                "first, or set MLFLOW_TRACKING_URI to the store it used)"
            )
        problem = _sqlite_problem(path)
        if problem is not None:
            raise ReportError(f"tracking store {uri}: {path} {problem}")
    elif uri.split(":", 1)[0].lower() in ("http", "https"):
        _probe_server(uri)
    elif DATABASE_URI.match(uri):
        problem = database_problem(uri, PROBE_SECONDS)
        if problem is not None:
            shown = shown_database(uri)
            raise ReportError(f"the tracking database {shown} cannot be used: {problem}")


def _sqlite_problem(path: Path) -> str | None:
    """What makes ``path`` not a whole MLflow store of this MLflow's schema, read with
    ``mode=ro`` (no byte written): not SQLite, truncated (shorter than page size x
    page count of its header), unreadable, another program's database, or another
    alembic version than this MLflow's head."""
    problem = sqlite_file_problem(path)
    if problem is not None:
        return problem
    try:
        with closing(read_only_connection(path, PROBE_SECONDS)) as db:
            tables = {r[0] for r in db.execute("select name from sqlite_master")}
            if not {"experiments", "runs", "alembic_version"} <= tables:
                shown = ", ".join(sorted(t for t in tables if not t.startswith("sqlite_"))[:6])
                return f"is not an MLflow store (its tables: {shown or 'none'})"
            versions = [r[0] for r in db.execute("select version_num from alembic_version")]
    except sqlite3.DatabaseError as exc:
        return f"cannot be read ({exc})"
    import mlflow
    from alembic.script import ScriptDirectory
    from mlflow.store.db.utils import _get_alembic_config

    head = ScriptDirectory.from_config(_get_alembic_config("sqlite://")).get_current_head()
    if versions != [head]:
        return (
            f"has MLflow schema version {versions}, not the one MLflow {mlflow.__version__} "
            f"reads ({head}); an older store: back it up and run `mlflow db upgrade` on it"
        )
    return None


def _probe_server(uri: str) -> None:
    problem = server_problem(uri, PROBE_SECONDS)
    if problem is None:
        return
    hint = problem.hint("start it or fix MLFLOW_TRACKING_URI")
    raise ReportError(f"the tracking server {uri} {problem}; {hint}")
