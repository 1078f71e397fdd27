"""Which MLflow tracking store a job uses, checked before any run exists.

- ``tracking_uri``: ``tracking.uri`` (set by the sweep's main process for every job, so
  a worker on another machine never guesses from its own environment), else
  ``$MLFLOW_TRACKING_URI``, else ``sqlite:///<absolute repo root>/mlflow.db``;
- ``check_uri``: a malformed URI is named as such; an unreachable server or database
  fails within ``CONNECT_SECONDS`` (MLflow itself retries for minutes), naming it; a file
  that is not a SQLite database, or a SQLite database that is not an MLflow store, is
  named;
- ``browse_hint``: the server's page, or the ``mlflow ui`` command for a local store.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from experiments.identity import ROOT
from procmem_core.errors import ParameterError, ProcmemError

DEFAULT_DB = ROOT / "mlflow.db"
URI_SCHEMES = ("sqlite", "http", "https", "postgresql", "mysql", "mssql")
CONNECT_SECONDS = 5.0
"""How long the check before a sweep waits for a tracking server or database."""


class TrackingError(ProcmemError):
    """The tracking store cannot be used: unreachable, or not an MLflow store."""


def tracking_uri(configured: str | None = None) -> str:
    """``configured`` (``tracking.uri``, set for every job of a sweep by the process that
    launched it) if given, else ``$MLFLOW_TRACKING_URI``, else the SQLite store at the
    repo root."""
    return configured or os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{DEFAULT_DB}"


def uri_source(configured: str | None = None) -> str:
    """Where the URI came from, for messages: the config key or the variable."""
    if configured:
        return "tracking.uri"
    return "MLFLOW_TRACKING_URI" if os.environ.get("MLFLOW_TRACKING_URI") else "tracking.uri"


def check_uri_form(uri: str, source: str = "MLFLOW_TRACKING_URI") -> None:
    """Refuse a URI MLflow cannot use as a tracking store, naming it as malformed."""
    parts = urlsplit(uri)
    scheme = parts.scheme.split("+")[0].lower()
    ok = scheme in URI_SCHEMES
    if scheme == "sqlite":
        ok = uri.startswith("sqlite:///") and len(uri) > len("sqlite:///")
    elif scheme in ("http", "https"):
        ok = bool(parts.hostname) and parts.netloc.count(":") <= 1
        try:
            parts.port  # noqa: B018 (raises on a port that is not a number)
        except ValueError:
            ok = False
    elif ok:
        ok = bool(parts.netloc or parts.path.strip("/"))
    if not ok:
        raise ParameterError(
            source,
            uri,
            "a malformed tracking URI; expected sqlite:///<path to a .db file>, "
            "http(s)://<host>:<port> (an mlflow server), or a database URL such as "
            "postgresql://<user>@<host>/<database>",
        )


def _check_sqlite(path: Path, uri: str) -> None:
    if path.is_dir():
        raise TrackingError(f"tracking store {uri}: {path} is a folder, not a database file")
    if not path.exists() or path.stat().st_size == 0:
        folder = next(p for p in (path.parent, *path.parents) if p.exists())
        if not os.access(folder, os.W_OK):
            raise TrackingError(
                f"tracking store {uri}: cannot create {path} ({folder} is read-only)"
            )
        return
    with path.open("rb") as fh:
        header = fh.read(16)
    if header != b"SQLite format 3\x00":
        raise TrackingError(f"tracking store {uri}: {path} is not a SQLite database")
    import sqlite3

    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=CONNECT_SECONDS) as db:
            tables = {r[0] for r in db.execute("select name from sqlite_master")}
    except sqlite3.DatabaseError as exc:
        raise TrackingError(f"tracking store {uri}: {path} cannot be read ({exc})") from None
    if tables and not {"experiments", "runs"} <= tables:
        raise TrackingError(
            f"tracking store {uri}: {path} is a SQLite database but not an MLflow store "
            f"(its tables: {', '.join(sorted(tables)[:6])})"
        )


def _check_server(uri: str) -> None:
    import requests

    try:
        answer = requests.get(f"{uri.rstrip('/')}/health", timeout=CONNECT_SECONDS)
    except requests.RequestException as exc:
        reason = type(exc).__name__
        raise TrackingError(
            f"the tracking server {uri} cannot be reached ({reason}): start it "
            f"(mlflow server --host 127.0.0.1 --port <port> ...) or fix MLFLOW_TRACKING_URI"
        ) from None
    if answer.status_code != 200:
        raise TrackingError(
            f"{uri} answered /health with HTTP {answer.status_code}: not an MLflow server?"
        )


def _check_database(uri: str) -> None:
    import sqlalchemy

    scheme = urlsplit(uri).scheme
    args = (
        {"connect_timeout": int(CONNECT_SECONDS)}
        if scheme.startswith(("postgres", "mysql"))
        else {}
    )
    shown = urlsplit(uri)._replace(netloc=urlsplit(uri).netloc.split("@")[-1]).geturl()
    try:
        engine = sqlalchemy.create_engine(uri, connect_args=args)
        with engine.connect():
            pass
        engine.dispose()
    except Exception as exc:  # a missing driver, a refused connection, a bad password
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TrackingError(f"the tracking database {shown} cannot be used: {text}") from None


def check_uri(uri: str, source: str = "MLFLOW_TRACKING_URI") -> None:
    """Before any run: the URI is well formed and its store answers within seconds."""
    check_uri_form(uri, source)
    path = sqlite_path(uri)
    if path is not None:
        _check_sqlite(path, uri)
    elif urlsplit(uri).scheme in ("http", "https"):
        _check_server(uri)
    else:
        _check_database(uri)


def browse_hint(uri: str, experiment_id: str | None = None, run_id: str | None = None) -> str:
    """How to look at the runs: the server's page, or the ``mlflow ui`` command."""
    if urlsplit(uri).scheme in ("http", "https"):
        page = uri.rstrip("/") + "/#/experiments"
        if experiment_id:
            page += f"/{experiment_id}" + (f"/runs/{run_id}" if run_id else "")
        return f"open {page}"
    return f"mlflow ui --backend-store-uri {uri}"


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (None for any other store)."""
    prefix = "sqlite:///"
    return Path(uri[len(prefix) :]) if uri.startswith(prefix) else None
