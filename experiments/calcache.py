"""Where a job keeps the calibrations and design answers it shares with other jobs.

``calibration_cache`` (conf/config.yaml; default ``DEFAULT_CACHE``, relative to the repo
root, or an absolute path; ``null``: none, each process computes its own) names a folder
procmem owns. ``use_cache`` installs a ``procmem_core.gates.calibration_store.FileStore``
on it for this process and exports it in ``$PROCMEM_CALIBRATION_CACHE`` for the job's
worker processes, so the jobs of a sweep (each in its own process) and later runs compute
each calibration once. Entries are keyed by the calibration code's hash: a code change
makes new ones, and the old ones are never read again: ``python -m experiments.calcache
prune`` removes them (``calibration_store.prune``; ``--dry-run`` only counts); clearing the
whole cache is deleting the folder (``rm -r .procmem/calibrations``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from experiments.stores import ROOT
from procmem_core.errors import ParameterError, ProcmemError
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


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def main(argv: list[str] | None = None) -> int:
    """``python -m experiments.calcache prune [--folder F] [--dry-run]``: remove the cache's
    entries that this checkout's code never reads (another code version, or unreadable)."""
    ap = argparse.ArgumentParser(
        prog="python -m experiments.calcache",
        description="Remove the calibration cache's entries of other code versions.",
    )
    ap.add_argument("command", choices=["prune"])
    ap.add_argument(
        "--folder", default=None,
        help=f"the cache folder (default: ${calibration_store.CACHE_ENV}, else {DEFAULT_CACHE} "
        "under the repo root)",
    )  # fmt: skip
    ap.add_argument("--dry-run", action="store_true", help="count, remove nothing")
    args = ap.parse_args(argv)
    setting = args.folder or os.environ.get(calibration_store.CACHE_ENV) or DEFAULT_CACHE
    try:
        folder = cache_folder(setting)
        if not folder.is_dir():
            raise ParameterError("--folder", str(folder), "an existing calibration cache folder")
        done = calibration_store.prune(folder, dry_run=args.dry_run)
    except ProcmemError as exc:  # bad input: one line naming the option, before any work
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    verb = "would remove" if args.dry_run else "removed"
    print(
        f"{folder}: {verb} {done.removed} entries of other code versions or unreadable "
        f"({_mb(done.removed_bytes)}) and {done.temporary} leftover temporary files; kept "
        f"{done.kept} entries of this code's version ({_mb(done.kept_bytes)})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
