"""``python -m experiments.analyze LOGS --out DIR``: see ``experiments.analyze``."""

from __future__ import annotations

import argparse
import sys

from experiments.analyze import analyze
from procmem_core.errors import ProcmemError


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m experiments.analyze",
        description="Read a procmem session log: lifts, SRM, replays, a fitted world.",
    )
    p.add_argument(
        "logs",
        help="a log directory (sessions.*, runs.*, revisions.*); a ProcedureStore file "
        "or PostgreSQL URI, postgresql://<user>@<host>[:<port>]/<database> (also postgres://, "
        "postgresql+psycopg://, postgresql+psycopg2://; its pack log, "
        "ledger and revisions); an MLflow run's log folder, "
        "runs:/<run id>[/<folder>] or a bare run id (default folder: tables, else the "
        "run's root); the live loop's session traces, traces:/<run id> or "
        "experiments:/<experiment name>",
    )
    p.add_argument("--out", required=True, help="directory for the files and report")
    p.add_argument("--level", type=float, default=0.95, help="confidence level (0.95)")
    p.add_argument(
        "--target-lift",
        type=float,
        default=0.1,
        help="lift the planner sizes for when no session was withheld (0.1)",
    )
    p.add_argument("--tracking-uri", default=None, help="MLflow tracking URI")
    p.add_argument("--no-track", action="store_true", help="write the files only")
    p.add_argument("--seed", type=int, default=0, help="seed of the world's bootstrap/checks")
    p.add_argument(
        "--no-prescribe",
        action="store_true",
        help="skip the prescriptions (explore rate, flat rule, gate; about a minute)",
    )
    p.add_argument(
        "--no-rule-design",
        action="store_true",
        help="replay the seed's flat rule only (skip designing one for this log, ~20 s)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        result = analyze(args.logs, args.out, args.level, args.target_lift,
                         args.tracking_uri, not args.no_track, not args.no_rule_design,
                         args.seed, not args.no_prescribe)  # fmt: skip
    except ProcmemError as exc:  # a bad log: one message naming where, before any output
        print(f"python -m experiments.analyze: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {', '.join(result.files)} to {result.out}")
    if result.run_id:
        print(f"MLflow run {result.run_id} (experiment analyze)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
