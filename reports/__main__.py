"""``python -m reports <experiment> [--run <parent id>] [--out <folder>]``.

Reads the latest sweep of the MLflow experiment (or the given run) from
``$MLFLOW_TRACKING_URI`` (else the project's ``mlflow.db``), says on stderr which run it
reports and why, writes ``index.html``, ``report.md``, ``summary.csv`` and the figures to
``reports/out/<experiment>/<run id>/`` (``reports/out/<experiment>/latest`` points at the
newest; or ``--out``), logs them to the parent run under ``report/`` and prints the path
of ``index.html``. Exit status 2 with a one-line reason when there is nothing to report
(no sweep, no finished job) or an option is refused (naming the option).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from procmem_core.errors import ParameterError
from reports.build import make_report
from reports.errors import ReportError
from reports.options import SESSIONS_PER_DAY, ReportOptions
from reports.recommend import GateTargets
from reports.source import HTTP_BOUNDS, tracking_uri

OPTION_OF = {
    "false_revert": "--max-false-revert",
    "missed_regression": "--max-missed-regression",
    "target_power": "--target-power",
    "target_excluded": "--target-excluded",
    "target_sessions": "--target-sessions",
    "target_kept": "--target-kept",
    "sessions_per_day": "--sessions-per-day",
}
"""The command-line option behind each field of the report's targets."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m reports",
        description="Turn a logged procmem sweep into a tuning report.",
    )
    p.add_argument("experiment", help="MLflow experiment (one per preset, e.g. quickstart)")
    p.add_argument("--run", default=None, help="parent run id (default: the latest sweep)")
    p.add_argument("--out", type=Path, default=None, help="folder (default reports/out/<exp>)")
    p.add_argument("--max-false-revert", type=float, default=0.05, help="gate target")
    p.add_argument("--max-missed-regression", type=float, default=0.20, help="gate target")
    p.add_argument("--target-power", type=float, default=0.8, help="explore target power")
    p.add_argument(
        "--target-excluded",
        type=float,
        default=0.9,
        help="confidence rule: share of harmful procedures to exclude",
    )
    p.add_argument(
        "--target-kept",
        type=float,
        default=0.9,
        help="confidence rule: share of helpful procedures to keep",
    )
    p.add_argument(
        "--target-sessions",
        type=int,
        default=None,
        help="confidence rule: horizon in sessions (when the sweep has several)",
    )
    p.add_argument(
        "--sessions-per-day",
        type=float,
        default=SESSIONS_PER_DAY,
        help=f"gates: sessions a procedure serves per day, for calendar time "
        f"(default {SESSIONS_PER_DAY:g})",
    )
    p.add_argument("--no-log", action="store_true", help="do not log the report to MLflow")
    return p


def options_of(args: argparse.Namespace) -> ReportOptions:
    """The targets from the command line; a refused value names its option."""
    try:
        return ReportOptions(
            GateTargets(args.max_false_revert, args.max_missed_regression),
            args.target_power,
            args.target_excluded,
            args.target_sessions,
            args.target_kept,
            args.sessions_per_day,
        )
    except ParameterError as exc:
        option = OPTION_OF.get(exc.field, exc.field)
        raise ReportError(
            f"{option} {exc.value} is not allowed: {exc.allowed} ({exc.field}={exc.value!r})"
        ) from None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    for name, value in HTTP_BOUNDS.items():  # every call to a server ends in seconds
        os.environ.setdefault(name, value)
    command = "python -m reports " + " ".join(shlex.quote(a) for a in argv)
    try:
        options = options_of(args)
        report, written = make_report(
            args.experiment, args.run, args.out, options, log=not args.no_log, command=command
        )
    except ReportError as exc:
        print(f"python -m reports: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"python -m reports: invalid option: {exc}", file=sys.stderr)
        return 2
    except store_errors() as exc:  # the store failed while being read: one line, named
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        print(f"python -m reports: tracking store {tracking_uri()}: {first}", file=sys.stderr)
        return 2
    print(f"reporting {report.chosen}: run {report.parent_id}", file=sys.stderr)
    for s in report.sections:
        print(f"[{s.title}] {s.answer}", file=sys.stderr)
    print(written["index.html"])
    return 0


def store_errors() -> tuple[type[BaseException], ...]:
    """What MLflow raises when its store fails (a server that errs, a broken database)."""
    import sqlite3

    from mlflow.exceptions import MlflowException
    from sqlalchemy.exc import SQLAlchemyError

    return (MlflowException, SQLAlchemyError, sqlite3.Error)


if __name__ == "__main__":
    sys.exit(main())
