"""What MLflow tracking costs the quickstart jobs: logging time over job time.

Runs every quickstart case in this process with ``experiments.job.run_job`` (the code a
sweep's job runs) as children of one parent run in a temporary SQLite store, after
creating the store, the experiment and the parent, as the sweep callback does before jobs
start. Per job it reports the time spent in MLflow calls (parent look-up, run creation,
one batch of params and metrics, artifact upload, termination) and writing the artifact
files (config.yaml, parquet tables), and apart from them drawing the figures, over the
job's total time.

``logging_share`` = (MLflow calls + artifact files) / total, summed over the jobs; the
target is <= 0.10. ``logging_share_with_figures`` adds the figures the jobs draw: none
by default (``tracking.figures=false``), so the target <= 0.15 holds; the same figures
drawn afterwards from the logged tables (``python -m experiments.figures``, for the
MLflow UI) are timed apart as ``figures_afterwards_seconds``. The MLflow import and the
database creation are one-off costs per process / per sweep and printed apart. Last
line: one JSON object.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench_tracking_"))
    os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{tmp / 'mlflow.db'}"
    for module in ("experiments.callbacks", "experiments.job", "experiments.run"):
        importlib.import_module(module)  # loaded before the mlflow import is timed, as always
    from experiments.tracking import TAG_ROLE, TAG_SWEEP_DIR, Tracker

    t0 = time.perf_counter()
    import mlflow  # noqa: F401 (one-off import cost)

    import_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    sweep_dir = str(tmp / "sweep")
    parent = Tracker("quickstart")  # creates the database and the parent, as the callback does
    parent_id = parent.start_run("bench", {TAG_ROLE: "parent", TAG_SWEEP_DIR: sweep_dir})
    setup_s = time.perf_counter() - t0
    rows = _time_jobs(tmp, parent_id, sweep_dir)
    parent.finish(parent_id)
    from experiments.figures import draw_logged

    t0 = time.perf_counter()
    drawn = draw_logged("quickstart", parent_id)
    afterwards_s = time.perf_counter() - t0
    print(f"mlflow import {import_s:.2f} s (once per process), store+experiment {setup_s:.2f} s")
    drawn_count = sum(len(v) for v in drawn.values())
    print(json.dumps(_summary(rows, afterwards_s, drawn_count, import_s, setup_s)))


def _time_jobs(tmp: Path, parent_id: str, sweep_dir: str) -> list[tuple[str, float, float, float]]:
    """Run every quickstart case as a child of ``parent_id``; per job ``(case, total
    seconds, MLflow + artifact-file seconds, figure seconds)``, each printed."""
    from omegaconf import OmegaConf

    from experiments.callbacks import sweep_params
    from experiments.job import JobContext, run_job
    from experiments.run import compose_job as compose_config

    cases = str(sweep_params(compose_config("quickstart"))["case"]).split(",")
    rows = []
    for case in cases:
        cfg = compose_config("quickstart", [f"case={case}", "progress=off"])
        OmegaConf.update(cfg, "tracking.parent", parent_id)  # as the sweep callback does
        ctx = JobContext(out_dir=tmp / case, multirun=True, sweep_dir=sweep_dir, job_num=len(rows))
        out = run_job(cfg, ctx)
        logging = out.tracking_seconds + out.artifact_seconds
        rows.append((case, out.total_seconds, logging, out.figure_seconds))
        print(
            f"{case:18s} total {out.total_seconds:6.3f} s  mlflow+files {logging:6.3f} s "
            f"({logging / out.total_seconds:5.1%})  figures {out.figure_seconds:6.3f} s"
        )
    return rows


def _summary(
    rows: list[tuple[str, float, float, float]],
    afterwards_s: float,
    drawn: int,
    import_s: float,
    setup_s: float,
) -> dict:
    """The shares the module docstring defines, summed over the jobs, and the one-off costs."""
    total = sum(r[1] for r in rows)
    logging = sum(r[2] for r in rows)
    figures = sum(r[3] for r in rows)
    return {
        "jobs": len(rows),
        "job_seconds": round(total, 3),
        "logging_seconds": round(logging, 3),
        "figure_seconds": round(figures, 3),
        "logging_share": round(logging / total, 4),
        "logging_share_with_figures": round((logging + figures) / total, 4),
        "max_job_logging_share": round(max(r[2] / r[1] for r in rows), 4),
        "figures_afterwards_seconds": round(afterwards_s, 3),
        "figures_afterwards": drawn,
        "mlflow_import_seconds": round(import_s, 3),
        "store_setup_seconds": round(setup_s, 3),
    }


if __name__ == "__main__":
    main()
