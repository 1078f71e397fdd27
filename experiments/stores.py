"""Which MLflow tracking store a job uses, checked before any run exists.

- ``tracking_uri``: ``tracking.uri`` (set by the sweep's main process for every job, so
  a worker on another machine never guesses from its own environment), else
  ``$MLFLOW_TRACKING_URI``, else ``sqlite:///<absolute repo root>/mlflow.db``;
- ``check_uri``: a malformed URI is named as such; an unreachable server or database
  fails within ``CONNECT_SECONDS`` (MLflow itself retries for minutes), naming it; a
  SQLite file is identified read-only (``sqlite_problem``: not SQLite, truncated,
  another program's database, another MLflow schema, a changed table) and named, its
  bytes unchanged; a new store is made only in a folder that exists;
- ``check_for``: the same check for a command that reads (a missing store refused) or
  logs an analysis; every command checks before MLflow opens the store;
- ``check_experiment_name``: an experiment name is a safe folder name;
- ``browse_hint``: the server's page, or the ``mlflow ui`` command for a local store.

``reports.source.check_store`` is the reader's side of the same identification (reports
never import experiments): it refuses a missing store instead of creating one.
"""

from __future__ import annotations

import os
import re
import sys
from contextlib import closing
from pathlib import Path
from urllib.parse import quote, urlsplit

from procmem_core.errors import ParameterError, ProcmemError
from procmem_core.probe import database_problem, server_problem, shown_database
from procmem_core.storefile import read_only_connection, sqlite_file_problem, sqlite_url_path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DB = ROOT / "mlflow.db"
URI_SCHEMES = ("sqlite", "http", "https", "postgresql", "mysql", "mssql")
CONNECT_SECONDS = 5.0
"""How long the check before a sweep waits for a tracking server or database."""


class TrackingError(ProcmemError):
    """The tracking store cannot be used: unreachable, or not an MLflow store."""


EXPERIMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
"""An experiment name is a folder name (``outputs/<name>``, ``multirun/<name>``,
``mlartifacts/<name>``): letters, digits, ``.``, ``_``, ``-``, starting with a letter or
digit, so no name (``..``, ``a/b``, empty) leads outside those roots."""


def check_experiment_name(name: object, field: str = "tracking.experiment") -> str:
    """``name`` if it is a safe experiment name (``EXPERIMENT_NAME``), else raise."""
    if not isinstance(name, str) or not EXPERIMENT_NAME.fullmatch(name):
        raise ParameterError(
            field,
            name,
            "a name of letters, digits, '.', '_' or '-' (at most 100, starting with a letter "
            "or digit): it names the folders outputs/<name>, multirun/<name> and "
            "mlartifacts/<name>",
        )
    return name


def tracking_uri(configured: str | None = None) -> str:
    """``configured`` (``tracking.uri``, set for every job of a sweep by the process that
    launched it) if given, else ``$MLFLOW_TRACKING_URI``, else the SQLite store at the
    repo root; a relative ``sqlite:///`` path made absolute (``absolute_sqlite``)."""
    uri = configured or os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{DEFAULT_DB}"
    return absolute_sqlite(uri)


def absolute_sqlite(uri: str) -> str:
    """``sqlite:///rel.db`` as ``sqlite:///<working directory>/rel.db`` (the directory
    percent-encoded, as the URI's path is read decoded): the artifact folder beside the
    store must be an absolute file URI, and a sweep's jobs must open the same file
    whatever their working directory. Any other URI as it is."""
    prefix = "sqlite:///"
    rest = uri[len(prefix) :]
    if not uri.startswith(prefix) or not rest or rest.startswith(("/", "?")):
        return uri
    return f"{prefix}{quote(os.getcwd())}/{rest}"


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
        path = sqlite_url_path(uri)  # a run takes sqlite:/// only (absolute_sqlite, artifacts)
        ok = uri.startswith("sqlite:///") and path is not None and path.name != ""
        ok = ok and "uri=true" not in parts.query.lower()
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


def _check_sqlite(path: Path, uri: str) -> bool:
    """Identify the file read-only; True when there is no store yet (MLflow creates one).

    A new store is made only in a folder that exists (a URI into a missing folder is
    refused, not created) and that can be written; an existing file must be a whole
    MLflow store of this MLflow's schema (``sqlite_problem``), else nothing writes to it.
    """
    if path.is_dir():
        raise TrackingError(f"tracking store {uri}: {path} is a folder, not a database file")
    if path.exists() and not path.is_file():  # a FIFO or a device: MLflow would block on it
        raise TrackingError(f"tracking store {uri}: {path} is not a regular file")
    if not path.exists() or path.stat().st_size == 0:
        if not path.parent.is_dir():
            raise TrackingError(
                f"tracking store {uri}: the folder {path.parent} does not exist; create it "
                "first or choose another path (nothing was created)"
            )
        if not os.access(path.parent, os.W_OK):
            raise TrackingError(
                f"tracking store {uri}: cannot create {path} ({path.parent} is read-only)"
            )
        return True
    problem = sqlite_problem(path)
    if problem is not None:
        raise TrackingError(f"tracking store {uri}: {path} {problem}")
    return False


TRACKING_TABLES = ("experiments", "runs", "tags", "params", "metrics", "latest_metrics")
"""The tables a job writes; their columns are checked against MLflow's models."""


def sqlite_problem(path: Path) -> str | None:
    """What makes the SQLite file at ``path`` unusable as this MLflow's store, read
    without writing a byte (``mode=ro``); None for a whole store of the current schema.

    In order: not SQLite (header), truncated, unreadable, another program's database
    (no ``experiments``/``runs``, or no table but another program's ``application_id``
    or ``user_version``, which MLflow never sets), no or another alembic version than
    this MLflow's head (an older store: ``mlflow db upgrade``), a table MLflow writes
    whose columns changed.
    """
    import sqlite3

    problem = sqlite_file_problem(path)
    if problem is not None:
        return problem
    try:
        with closing(read_only_connection(path, CONNECT_SECONDS)) as db:
            tables = {r[0] for r in db.execute("select name from sqlite_master")}
            if tables and not {"experiments", "runs"} <= tables:
                shown = ", ".join(sorted(t for t in tables if not t.startswith("sqlite_"))[:6])
                return f"is a SQLite database but not an MLflow store (its tables: {shown})"
            if not tables:  # empty: MLflow may make its store here, unless another owns it
                (app_id,) = db.execute("PRAGMA application_id").fetchone()
                (user_version,) = db.execute("PRAGMA user_version").fetchone()
                mark = f"application_id {app_id:#x}" if app_id else f"user_version {user_version}"
                if app_id or user_version:
                    return f"is an SQLite database of another application ({mark})"
                return None
            versions = (
                [r[0] for r in db.execute("select version_num from alembic_version")]
                if "alembic_version" in tables
                else []
            )
            columns = {t: {r[1] for r in db.execute(f"pragma table_info('{t}')")} for t in tables}
    except sqlite3.DatabaseError as exc:
        return f"cannot be read ({exc})"
    return schema_problem(versions, columns)


def schema_problem(versions: list[str], columns: dict[str, set[str]]) -> str | None:
    """An MLflow store's alembic version and tables against this MLflow's."""
    import mlflow
    from alembic.script import ScriptDirectory
    from mlflow.store.db.base_sql_model import Base
    from mlflow.store.db.utils import _get_alembic_config
    from mlflow.store.tracking.dbmodels import models  # noqa: F401 (fills Base.metadata)

    scripts = ScriptDirectory.from_config(_get_alembic_config("sqlite://"))
    head, mine = scripts.get_current_head(), f"MLflow {mlflow.__version__}"
    if len(versions) != 1:
        return f"is an MLflow store without a schema version (alembic_version: {versions})"
    if versions[0] != head:
        known = {r.revision for r in scripts.walk_revisions()}
        if versions[0] in known:
            return (
                f"has an older MLflow schema ({versions[0]}) than {mine} uses ({head}): "
                "back it up, then run `mlflow db upgrade` on this URI"
            )
        return f"has MLflow schema version {versions[0]!r}, unknown to {mine} (a newer MLflow?)"
    for name in TRACKING_TABLES:
        table = Base.metadata.tables[name]
        needed = {c.name for c in table.columns if c.computed is None}
        missing = needed - columns.get(name, set())
        if missing:
            return (
                f"is an MLflow store whose table {name} was changed (no column "
                f"{', '.join(sorted(missing))}, which {mine} writes)"
            )
    return None


def _check_server(uri: str) -> None:
    problem = server_problem(uri, CONNECT_SECONDS)
    if problem is None:
        return
    hint = problem.hint(
        "start it (mlflow server --host 127.0.0.1 --port <port> ...) or fix MLFLOW_TRACKING_URI"
    )
    raise TrackingError(f"the tracking server {uri} {problem}: {hint}")


def _check_database(uri: str) -> None:
    problem = database_problem(uri, CONNECT_SECONDS)
    if problem is not None:
        raise TrackingError(
            f"the tracking database {shown_database(uri)} cannot be used: {problem}"
        )


def check_uri(uri: str, source: str = "MLFLOW_TRACKING_URI") -> bool:
    """Before any run: the URI is well formed and its store answers within seconds, or,
    for SQLite, is a whole MLflow store identified without writing to it. True when the
    SQLite store does not exist yet (the caller says where it creates it)."""
    check_uri_form(uri, source)
    path = sqlite_path(uri)
    if path is not None:
        return _check_sqlite(path, uri)
    if urlsplit(uri).scheme in ("http", "https"):
        _check_server(uri)
    else:
        _check_database(uri)
    return False


def check_for(uri: str, source: str, what: str | None = None) -> bool:
    """``check_uri`` for a command other than a run: one that only reads (``what``, the
    word it would do: "read", "draw") refuses a store that does not exist yet instead of
    creating it; for one that writes (``what`` None), True when the store is new (the
    caller says where, ``announce_new``, when it creates it)."""
    new = check_uri(uri, source)
    if new and what is not None:
        raise TrackingError(f"tracking store {uri}: no store there; nothing to {what}")
    return new


def announce_new(uri: str) -> None:
    """Say on stderr where a new SQLite store is being created."""
    print(f"tracking: creating a new MLflow store at {sqlite_path(uri)}", file=sys.stderr)


def browse_hint(uri: str, experiment_id: str | None = None, run_id: str | None = None) -> str:
    """How to look at the runs: the server's page, or the ``mlflow ui`` command."""
    if urlsplit(uri).scheme in ("http", "https"):
        page = uri.rstrip("/") + "/#/experiments"
        if experiment_id:
            page += f"/{experiment_id}" + (f"/runs/{run_id}" if run_id else "")
        return f"open {page}"
    return f"mlflow ui --backend-store-uri {uri}"


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI as MLflow opens it (its query dropped,
    percent-decoded: ``storefile.sqlite_url_path``); None for any other store."""
    return sqlite_url_path(uri)
