"""Is an MLflow tracking server there? One ``GET <uri>/health`` through the standard
library, shared by the sweep's store check (``experiments.stores``) and the report's
(``reports.store_check``), which wrap the reason in their own error and hint."""

from __future__ import annotations

import urllib.error
import urllib.request


def server_problem(uri: str, timeout: float) -> str | None:
    """Why the server at ``uri`` is not a healthy MLflow server, or None: ``cannot be
    reached (no answer in <timeout> s)``, ``cannot be reached (<error class>)`` (refused,
    no such host), or ``answered /health with HTTP <code>``."""
    url = f"{uri.rstrip('/')}/health"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            status = answer.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if isinstance(reason, TimeoutError):
            return f"cannot be reached (no answer in {timeout:g} s)"
        return f"cannot be reached ({type(reason).__name__})"
    return None if status == 200 else f"answered /health with HTTP {status}"
