"""What the command prints when a sweep or a single run ends (stdout).

After a sweep: one aligned row per job (number, run name, status, key metrics with their
SEs), the jobs that failed with the reason, and commands a newcomer can paste: the report
of this very sweep and how to browse the runs. After a single run (stderr, so that a
job's stdout stays its own, as the seed demo's must): its run id, status and metrics.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from experiments.stores import browse_hint

KEY_METRICS: dict[str, tuple[str, ...]] = {
    "fate": ("p_excluded", "expected_sessions_applied"),
    "confidence": ("session_success_rate", "helpful_retained", "harmful_excluded"),
    "gate": ("false_revert_rate", "missed_regression_rate", "mean_runs_null", "mean_runs_alt"),
    "explore": ("true_lift", "estimate", "coverage", "power", "exploration_cost"),
    "loop": ("success_rate", "regret", "correct_verdict_rate", "missed_harmful_rate"),
    "llm_replay": ("failed", "failed_stage", "n_procedures", "n_shown_session_2"),
}
"""The metrics the summary shows per scenario (others: the first three with an SE)."""

MAX_ROWS = 60


def key_metrics(scenario: str, metrics: dict[str, float]) -> list[str]:
    """The metric names to show for one job."""
    names = [m for m in KEY_METRICS.get(scenario, ()) if m in metrics]
    if names:
        return names
    return [m for m in sorted(metrics) if f"{m}_se" in metrics][:3]


def fmt(metrics: dict[str, float], name: str) -> str:
    """``value±se`` with 3 significant digits (``value`` alone when there is no SE;
    ``value(no variation)`` with SE 0: the report gives its exact bound)."""
    value = metrics[name]
    se = metrics.get(f"{name}_se")
    if se is None or math.isnan(se):
        return f"{value:.3g}"
    if se == 0:
        return f"{value:.3g}(no variation)"
    return f"{value:.3g}±{se:.2g}"


def summary_table(jobs: pd.DataFrame, metrics: dict[str, dict[str, float]]) -> pd.DataFrame:
    """One row per job: number, run name, status, the overrides that vary, key metrics."""
    split = [str(o).split() for o in jobs["overrides"]]
    common = set.intersection(*map(set, split)) if len(split) > 1 else set()
    rows = []
    for job, overrides in zip(jobs.to_dict("records"), split, strict=True):
        run_id = job.get("run_id")
        m = metrics.get(run_id, {}) if isinstance(run_id, str) else {}
        shown = " ".join(f"{n}={fmt(m, n)}" for n in key_metrics(job["scenario"], m))
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
    from experiments.progress import clock

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
    shown = " ".join(f"{m}={fmt(outcome.metrics, m)}" for m in key_metrics(label, outcome.metrics))
    err = sys.stderr
    print(
        f"run {run_id} ({name}) {outcome.status} in {outcome.total_seconds:.1f} s"
        + (f": {shown}" if shown else ""),
        file=err,
    )
    print(f"report: {command('python')} -m reports {tracker.experiment} --run {run_id}", file=err)
    err.flush()
