"""``python -m reports <experiment> [--run <parent id>] [--out <folder>]``.

Reads the latest sweep of the MLflow experiment (or the given parent run) from
``$MLFLOW_TRACKING_URI`` (else the project's ``mlflow.db``), writes ``index.html``,
``report.md``, ``summary.csv`` and the figures to ``reports/out/<experiment>/`` (or
``--out``), logs them to the parent run under ``report/`` and prints the path of
``index.html``. Exit status 2 with a one-line reason when there is nothing to report.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reports.build import make_report
from reports.errors import ReportError
from reports.options import ReportOptions
from reports.recommend import GateTargets


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
    p.add_argument("--no-log", action="store_true", help="do not log the report to MLflow")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        options = ReportOptions(
            GateTargets(args.max_false_revert, args.max_missed_regression),
            args.target_power,
            args.target_excluded,
            args.target_sessions,
            args.target_kept,
        )
        report, written = make_report(
            args.experiment, args.run, args.out, options, log=not args.no_log
        )
    except ReportError as exc:
        print(f"python -m reports: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"python -m reports: invalid option: {exc}", file=sys.stderr)
        return 2
    for s in report.sections:
        print(f"[{s.title}] {s.answer}", file=sys.stderr)
    print(written["index.html"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
