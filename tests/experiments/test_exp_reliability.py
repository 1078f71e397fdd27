"""Issue 31 on real processes, files and signals: a terminal status is written once,
refusals create nothing, a store that is not ours is never written, nothing hangs.

Stops are raised at a chosen point by a callback (``stop_points``) and sweeps are held
by ``sweep_barrier``; tests wait on files and process exits, never on seconds of work.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from mlflow.tracking import MlflowClient

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
HERE = Path(__file__).resolve().parent
FATE = ["experiment=quickstart", "case=fate_seed", "scenario.replications=200", "progress=off"]
WAIT_SECONDS = 120.0


def run_cli(tmp: Path, args: list[str], uri: str | None = None, **env: str):
    """``python -m experiments.run <args>`` against ``uri`` (default ``tmp/mlflow.db``)."""
    full = dict(
        os.environ,
        MLFLOW_TRACKING_URI=uri or f"sqlite:///{tmp / 'mlflow.db'}",
        PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        **env,
    )
    return subprocess.run(
        [sys.executable, "-m", "experiments.run", *args],
        cwd=ROOT, env=full, capture_output=True, text=True, timeout=WAIT_SECONDS,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip


def all_runs(db: Path, experiment: str = "quickstart") -> list:
    client = MlflowClient(f"sqlite:///{db}")
    exp = client.get_experiment_by_name(experiment)
    return client.search_runs([exp.experiment_id], max_results=1000)


def test_a_stop_just_after_finished_leaves_the_run_finished(tmp_path):
    proc = run_cli(
        tmp_path,
        [*FATE, "+hydra.callbacks.stop._target_=stop_points.StopAfterFinished",
         f"hydra.run.dir={tmp_path / 'run'}"],
    )  # fmt: skip
    assert proc.returncode == 143, proc.stderr[-2000:]  # the stop did arrive, after the commit
    (run,) = all_runs(tmp_path / "mlflow.db")
    assert run.info.status == "FINISHED"
    assert "procmem.end_reason" not in run.data.tags
    assert 0.0 <= run.data.metrics["p_excluded"] <= 1.0
