"""``python -m experiments.answers <experiment> --run <parent run id> [targets]``.

Computes a sweep's design answers at other targets than the defaults the sweep used when
it ended (``experiments.answers.sweep_answers``), from the runs it logged (its children
and the earlier runs a resumed sweep names in ``tables/jobs.parquet``), and logs them on
its parent run as ``answers/<name>.json`` beside the others, so ``python -m reports``
with the same targets reads them. The options are the report's own.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pandas as pd

from experiments import tracking as tr
from experiments.answers import (
    ALPHA,
    BETA,
    EXCLUDE,
    KEEP,
    TARGET_POWER,
    answer_metrics,
    runs_frame,
    sweep_answers,
    write_answers,
)
from experiments.stores import check_for, uri_source
from procmem_core.errors import ParameterError, ProcmemError, check_int, check_probability


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m experiments.answers", description=__doc__)
    p.add_argument("experiment", help="the MLflow experiment of the sweep")
    p.add_argument("--run", required=True, help="the sweep's parent run id")
    p.add_argument("--max-false-revert", type=float, default=ALPHA)
    p.add_argument("--max-missed-regression", type=float, default=BETA)
    p.add_argument("--target-kept", type=float, default=KEEP)
    p.add_argument("--target-excluded", type=float, default=EXCLUDE)
    p.add_argument("--target-sessions", type=int, default=None)
    p.add_argument("--target-power", type=float, default=TARGET_POWER)
    return p


def _runs(tracker: tr.Tracker, parent_id: str) -> list:
    """The parent's children and the earlier runs its ``tables/jobs.parquet`` names; a
    run with no children (a single job) is its own sweep, as the report reads it."""
    client = tracker.client
    children = tracker.children(parent_id) or [client.get_run(parent_id)]  # a single run
    have = {c.info.run_id for c in children}
    names = {a.path for a in client.list_artifacts(parent_id, "tables")}
    if "tables/jobs.parquet" not in names:
        return children
    with tempfile.TemporaryDirectory(prefix="procmem-jobs-") as tmp:
        jobs = pd.read_parquet(client.download_artifacts(parent_id, "tables/jobs.parquet", tmp))
    wanted = [r for r in jobs.get("run_id", pd.Series(dtype=object)).dropna() if r not in have]
    return children + [client.get_run(r) for r in dict.fromkeys(wanted)]


def _run(tracker: tr.Tracker, run_id: str):
    """The run ``run_id``, or None when the store has none."""
    from mlflow.exceptions import MlflowException

    try:
        return tracker.client.get_run(run_id)
    except MlflowException:
        return None


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        for name in ("max_false_revert", "max_missed_regression", "target_kept",
                     "target_excluded", "target_power"):  # fmt: skip
            check_probability(name, getattr(args, name), open_low=True)
        if args.target_sessions is not None:
            check_int("target_sessions", args.target_sessions, minimum=1)
        tracker = tr.Tracker(args.experiment)
        check_for(tracker.uri, uri_source(), "read")  # before MLflow opens (or makes) it
        exp = tracker.client.get_experiment_by_name(args.experiment)
        run = _run(tracker, args.run) if exp is not None else None
        if run is None or run.info.experiment_id != exp.experiment_id:
            raise ParameterError("--run", args.run, f"a run of experiment {args.experiment!r}")
        answers = sweep_answers(
            runs_frame(_runs(tracker, args.run)), args.max_false_revert,
            args.max_missed_regression, args.target_kept, args.target_excluded,
            args.target_sessions, args.target_power,
        )  # fmt: skip
    except ProcmemError as exc:
        print(f"python -m experiments.answers: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="procmem-answers-") as tmp:
        paths = write_answers(answers, Path(tmp))
        tracker.log_artifacts(args.run, Path(tmp))
    if "gate" in answers:
        tracker.log(args.run, metrics=answer_metrics(answers))
    for path in paths:
        print(f"answers/{path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
