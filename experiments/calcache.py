"""Where a job keeps the calibrations and design answers it shares with other jobs.

``calibration_cache`` (conf/config.yaml; default ``DEFAULT_CACHE``, relative to the repo
root, or an absolute path; ``null``: none, each process computes its own) names a folder
procmem owns. ``use_cache`` installs a ``procmem_core.gates.calibration_store.FileStore``
on it for this process and exports it in ``$PROCMEM_CALIBRATION_CACHE`` for the job's
worker processes, so the jobs of a sweep (each in its own process) and later runs compute
each calibration once. Entries are keyed by the calibration code's hash: a code change
makes new ones; clearing the cache is deleting the folder (``rm -r .procmem/calibrations``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from experiments.stores import ROOT
from procmem_core.errors import ParameterError
from procmem_core.gates import calibration_store

DEFAULT_CACHE = ".procmem/calibrations"
"""The shared cache folder, under the repo root (git-ignored)."""


def cache_folder(setting: Any) -> Path | None:
    """The folder ``calibration_cache`` names (relative: under the repo root), or None."""
    if setting is None:
        return None
    if not isinstance(setting, str | os.PathLike) or not str(setting).strip():
        raise ParameterError(
            "calibration_cache", setting, "a folder path (relative to the repo root) or null"
        )
    path = Path(setting).expanduser()
    return path if path.is_absolute() else ROOT / path


def use_cache(setting: Any = DEFAULT_CACHE) -> Path | None:
    """Install the file cache on ``cache_folder(setting)`` for this process and its
    workers (None: the in-memory default, and the workers' variable is cleared)."""
    folder = cache_folder(setting)
    if folder is None:
        calibration_store.install(None)
        os.environ.pop(calibration_store.CACHE_ENV, None)
        return None
    calibration_store.install(calibration_store.FileStore(folder))
    os.environ[calibration_store.CACHE_ENV] = str(folder)
    return folder
