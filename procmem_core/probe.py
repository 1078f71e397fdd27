"""Is an MLflow tracking server there? One ``GET <uri>/health`` through the standard
library, shared by the sweep's store check (``experiments.stores``) and the report's
(``reports.store_check``), which wrap the reason in their own error and hint
(``ServerProblem.hint``: one rule for both)."""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass

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
