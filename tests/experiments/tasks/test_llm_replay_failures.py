"""A failed llm_replay is visible (issue 17): it says so on stderr and in the summary, exits
non-zero unless ``replay.on_error=record`` is set explicitly, and a raised failure still
logs the artifacts written before it. Real runs of ``python -m experiments.run``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from mlflow.tracking import MlflowClient

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_cli(args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, MLFLOW_TRACKING_URI=f"sqlite:///{tmp / 'mlflow.db'}")
    return subprocess.run(
        [sys.executable, "-m", "experiments.run", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def unreachable(tmp: Path) -> list[str]:
    return [
        "experiment=llm_replay",
        "llm.endpoint=remote",
        f"llm.base_url=http://127.0.0.1:{closed_port()}/v1",
        "llm.max_retries=0",
        "llm.timeout=5",
        f"hydra.run.dir={tmp / 'run'}",
        f"hydra.sweep.dir={tmp / 'sweep'}",
    ]


def only_run(tmp: Path):
    client = MlflowClient(f"sqlite:///{tmp / 'mlflow.db'}")
    exp = client.get_experiment_by_name("llm_replay")
    runs = [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get(
        "procmem.role") != "parent"]  # fmt: skip
    (run,) = runs
    names = {a.path for a in client.list_artifacts(run.info.run_id)}
    return run, names


def test_a_failed_replay_exits_non_zero_says_so_and_logs_its_artifacts(tmp_path):
    proc = run_cli(unreachable(tmp_path), tmp_path)
    assert proc.returncode != 0
    assert "llm_replay FAILED at stage session_1" in proc.stderr
    assert "connection" in proc.stderr
    run, artifacts = only_run(tmp_path)
    assert run.info.status == "FAILED"
    assert {"error.json", "system_prompt_1.txt", "traceback.txt"} <= artifacts


def test_on_error_record_set_explicitly_finishes_and_the_summary_shows_the_failure(tmp_path):
    proc = run_cli(["-m", *unreachable(tmp_path), "replay.on_error=record"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "llm_replay FAILED at stage session_1" in proc.stderr
    assert "failed=1  failed_stage=1" in proc.stdout  # the end-of-sweep summary (Metric.fmt)
    run, artifacts = only_run(tmp_path)
    assert run.info.status == "FINISHED" and run.data.metrics["failed"] == 1.0
    assert "error.json" in artifacts
