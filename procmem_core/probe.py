"""Is an MLflow tracking server there? One ``GET <uri>/health`` through the standard
library, shared by the sweep's store check (``experiments.stores``) and the report's
(``reports.store_check``), which wrap the reason in their own error and hint
(``ServerProblem.hint``: one rule for both). The same for a tracking database
(``postgresql://``, ``mysql://``, ...): one connection bounded by a timeout
(``database_problem``), and the URI as a message shows it (``shown_database``)."""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlsplit

NOT_MLFLOW = "not an MLflow server?"
"""The hint when something answered ``/health`` but not with HTTP 200."""


@dataclass(frozen=True)
class ServerProblem:
    """Why a server is not a healthy MLflow server: ``reason`` (read as text) and its kind,
    ``reachable`` (something answered, not with 200) or not (nothing answered)."""

    reason: str
    reachable: bool

    def __str__(self) -> str:
        return self.reason

    def hint(self, start: str) -> str:
        """What to do: ``start`` (how to start the server or fix the URI) when nothing
        answered, else ``NOT_MLFLOW``."""
        return NOT_MLFLOW if self.reachable else start


def server_problem(uri: str, timeout: float) -> ServerProblem | None:
    """Why the server at ``uri`` is not a healthy MLflow server, or None: ``cannot be
    reached (no answer in <timeout> s)``, ``cannot be reached (<error class>)`` (refused,
    no such host; not ``reachable``), or ``answered /health with HTTP <code>``
    (``reachable``)."""
    url = f"{uri.rstrip('/')}/health"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            status = answer.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if isinstance(reason, TimeoutError):
            return ServerProblem(f"cannot be reached (no answer in {timeout:g} s)", False)
        return ServerProblem(f"cannot be reached ({type(reason).__name__})", False)
    return None if status == 200 else ServerProblem(f"answered /health with HTTP {status}", True)


def shown_database(uri: str) -> str:
    """A database URI as a message shows it: without its user and password."""
    parts = urlsplit(uri)
    return parts._replace(netloc=parts.netloc.split("@")[-1]).geturl()


def database_problem(uri: str, timeout: float) -> str | None:
    """Why the database at ``uri`` cannot be used (the first line of the error: a missing
    driver, a refused connection, a bad password), or None: one connection, given
    ``timeout`` seconds to connect (``connect_timeout``) where the driver takes one
    (PostgreSQL, MySQL). MLflow itself retries a failed connection for minutes."""
    import sqlalchemy

    scheme = urlsplit(uri).scheme
    args = {"connect_timeout": int(timeout)} if scheme.startswith(("postgres", "mysql")) else {}
    try:
        engine = sqlalchemy.create_engine(uri, connect_args=args)
        with engine.connect():
            pass
        engine.dispose()
    except Exception as exc:  # a missing driver, a refused connection, a bad password
        text = str(exc).strip()
        return text.splitlines()[0] if text else type(exc).__name__
    return None
