"""What the command prints when a sweep or a single run ends (stdout).

After a sweep: one aligned row per job (number, run name, status, key metrics with their
SEs), the jobs that failed with the reason, and commands a newcomer can paste: the report
of this very sweep and how to browse the runs. After a single run (stderr, so that a
job's stdout stays its own, as the seed demo's must): its run id, status and metrics.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from experiments.build import task_module, task_names
from experiments.identity import SCENARIO_TASK
from experiments.stores import browse_hint
from procmem_core.logged import parse_name
from procmem_core.metric import Metric
from simulators.scenarios import SCENARIOS

MAX_ROWS = 60


def clock(seconds: float) -> str:
    """``h:mm:ss`` (or ``m:ss`` under an hour)."""
    s = round(seconds)
    h, m = divmod(s // 60, 60)
    return f"{h}:{m:02d}:{s % 60:02d}" if h else f"{m}:{s % 60:02d}"


def declared_metrics(label: str) -> tuple[str, ...]:
    """The headline metrics a job declares: its scenario's ``key_metrics`` class attribute,
    or its task module's ``KEY_METRICS``; () for an unknown label."""
    if label in SCENARIOS:
        return SCENARIOS[label].key_metrics
    if label == SCENARIO_TASK or label not in task_names():
        return ()
    return tuple(getattr(task_module(label), "KEY_METRICS", ()))


def key_metrics(label: str, metrics: Mapping[str, float]) -> list[str]:
    """The metric names to show for one job: the declared ones it logged, else the
    first three (by name) with an SE, never a calibration block's (``cal00_...``: a check
    of the SEs, not a result)."""
    names = [m for m in declared_metrics(label) if m in metrics]
    if names:
        return names
    shown = [m for m in sorted(metrics) if f"{m}_se" in metrics and parse_name(m) is None]
    return shown[:3]


def headline(label: str, metrics: Mapping[str, float]) -> str:
    """``name=value ± se`` of each key metric, space-separated (``Metric.fmt``)."""
    return "  ".join(
        f"{m}={Metric.from_flat(metrics, m).fmt()}" for m in key_metrics(label, metrics)
    )


def summary_table(jobs: pd.DataFrame, metrics: dict[str, dict[str, float]]) -> pd.DataFrame:
    """One row per job: number, run name, status, the overrides that vary, key metrics."""
    split = [str(o).split() for o in jobs["overrides"]]
    common = set.intersection(*map(set, split)) if len(split) > 1 else set()
    rows = []
    for job, overrides in zip(jobs.to_dict("records"), split, strict=True):
        run_id = job.get("run_id")
        m = metrics.get(run_id, {}) if isinstance(run_id, str) else {}
        shown = headline(job["scenario"], m)
        rows.append(
            {
                "job": job["job"],
                "run": job.get("name") or job["scenario"],
                "status": job["status"],
                "overrides": " ".join(o for o in overrides if o not in common),
                "key metrics (±SE)": shown,
            }
        )
    return pd.DataFrame(rows)


def command(tool: str) -> str:
    """How to call ``tool`` (``python``, ``mlflow``) of this environment, pasteable from
    the current folder: ``.venv/bin/python`` inside it, the absolute path otherwise."""
    exe = Path(sys.executable)
    path = exe if tool == "python" else exe.with_name(tool)
    try:
        return os.fspath(path.relative_to(Path.cwd()))
    except ValueError:
        return os.fspath(path)


def aligned(table: pd.DataFrame) -> list[str]:
    """The table as left-aligned text columns (numbers right-aligned)."""
    cells = [[str(c) for c in table.columns]] + [[str(v) for v in r] for r in table.values]
    widths = [max(len(row[i]) for row in cells) for i in range(len(table.columns))]
    numeric = [pd.api.types.is_numeric_dtype(table[c]) for c in table.columns]
    lines = []
    for row in cells:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(row, widths, numeric, strict=True)
        ]
        lines.append("  ".join(parts).rstrip())
    return lines


def print_summary(
    jobs: pd.DataFrame,
    metrics: dict[str, dict[str, float]],
    tracker: Any,
    parent_id: str,
    seconds: float,
) -> None:
    """Print the summary table, the failed jobs, the report and the browse commands."""
    out = sys.stdout
    counts = jobs["status"].value_counts().to_dict()
    tally = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    print(f"\n== {tracker.experiment}: {len(jobs)} jobs in {clock(seconds)} ({tally})", file=out)
    table = summary_table(jobs, metrics)
    if not (table["overrides"] != "").any():
        table = table.drop(columns="overrides")
    for line in aligned(table.head(MAX_ROWS)):
        print("  " + line, file=out)
    if len(table) > MAX_ROWS:
        print(f"  ... {len(table) - MAX_ROWS} more rows in tables/jobs.parquet", file=out)
    bad = jobs[jobs["status"].isin(["failed", "missing"])]
    if len(bad):
        print(f"\nFAILED jobs ({len(bad)}):", file=out)
        for job in bad.to_dict("records"):
            run = f"run {job['run_id']}" if isinstance(job.get("run_id"), str) else "no run"
            reason = job.get("reason") or "see traceback.txt"
            print(f"  #{job['job']} {job['overrides'] or '(no overrides)'}: {run}: {reason}",
                  file=out)  # fmt: skip
    report = f"{command('python')} -m reports {tracker.experiment} --run {parent_id}"
    print(f"\nreport:  {report}", file=out)
    print(f"         -> reports/out/{tracker.experiment}/{parent_id}/index.html", file=out)
    hint = browse_hint(tracker.uri, tracker.experiment_id, parent_id)
    if hint.startswith("mlflow "):
        hint = command("mlflow") + hint.removeprefix("mlflow")
    print(f"browse:  {hint}", file=out)
    out.flush()


def print_single(run_id: str, name: str, outcome: Any, tracker: Any) -> None:
    """A single run's id, status, time and key metrics (stderr), and its report command."""
    label = name.split(":")[0]
    shown = headline(label, outcome.metrics)
    err = sys.stderr
    print(
        f"run {run_id} ({name}) {outcome.status} in {outcome.total_seconds:.1f} s"
        + (f": {shown}" if shown else ""),
        file=err,
    )
    print(f"report: {command('python')} -m reports {tracker.experiment} --run {run_id}", file=err)
    err.flush()
