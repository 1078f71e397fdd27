"""The end-of-sweep summary printed on stdout: one row per job, its key metrics with SEs.

Then the failed jobs (if any), the command that writes the report, and how to open the
MLflow UI on the store.
"""

from __future__ import annotations

import math
import sys

import pandas as pd

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
    """``value±se`` with 3 significant digits (``value`` alone when there is no SE)."""
    value = metrics[name]
    se = metrics.get(f"{name}_se")
    if se is None or math.isnan(se):
        return f"{value:.3g}"
    return f"{value:.3g}±{se:.2g}"


def summary_table(jobs: pd.DataFrame, metrics: dict[str, dict[str, float]]) -> pd.DataFrame:
    """One row per job: number, scenario, status, the overrides that vary, key metrics."""
    split = [str(o).split() for o in jobs["overrides"]]
    common = set.intersection(*map(set, split)) if len(split) > 1 else set()
    rows = []
    for job, overrides in zip(jobs.itertuples(index=False), split, strict=True):
        m = metrics.get(job.run_id, {}) if job.run_id else {}
        shown = " ".join(f"{n}={fmt(m, n)}" for n in key_metrics(job.scenario, m))
        rows.append(
            {
                "job": job.job,
                "scenario": job.scenario,
                "status": job.status,
                "overrides": " ".join(o for o in overrides if o not in common),
                "key metrics (±SE)": shown,
            }
        )
    return pd.DataFrame(rows)


def print_summary(
    jobs: pd.DataFrame, metrics: dict[str, dict[str, float]], experiment: str, uri: str
) -> None:
    """Print the summary table, the failed jobs, the report command and the UI command."""
    table = summary_table(jobs, metrics)
    out = sys.stdout
    print(f"\n== {experiment}: {len(jobs)} jobs", file=out)
    counts = jobs["status"].value_counts().to_dict()
    print("   " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())), file=out)
    if len(table):
        with pd.option_context("display.max_colwidth", 90, "display.width", 200):
            print(table.head(MAX_ROWS).to_string(index=False), file=out)
        if len(table) > MAX_ROWS:
            print(f"   ... {len(table) - MAX_ROWS} more rows in tables/jobs.parquet", file=out)
    bad = jobs[jobs["status"].isin(["failed", "missing"])]
    if len(bad):
        print(f"\nFAILED jobs ({len(bad)}):", file=out)
        for job in bad.itertuples(index=False):
            has_run = isinstance(job.run_id, str)
            detail = f"run {job.run_id} (traceback.txt)" if has_run else "no run: the job died"
            print(f"  #{job.job} {job.overrides or '(no overrides)'}: {detail}", file=out)
    print(
        f"\nreport: python -m reports {experiment}  ->  reports/out/{experiment}/index.html",
        file=out,
    )
    print(f"browse: mlflow ui --backend-store-uri {uri}", file=out)
    out.flush()
