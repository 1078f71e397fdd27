"""Real sweeps of ``python -m experiments.run -m`` into a temporary SQLite store.

One small joblib sweep (three jobs, two at a time, one of which cannot write its
artifacts) is run once for the module, then resumed sequentially in reverse order; its
children must follow the MLflow contract and match a job run in this process number for
number; an invalid sweep must create no run. Stopped and killed sweeps:
test_stops.py; Ray and tracking servers: test_services.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from mlflow.tracking import MlflowClient
from omegaconf import OmegaConf

from experiments.figures import draw_logged
from experiments.identity import flatten
from experiments.job import JobContext, run_job
from experiments.run import compose_job as compose_config
from experiments.spec import identity_container
from procmem_core.errors import ParameterError

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
JOBS = "case=fate_seed,gate_sprt,confidence_seed"
SMALL = ["experiment=quickstart", "scenario.replications=400"]


def run_cli(args: list[str], store: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m experiments.run <args>`` with the MLflow store in ``store``."""
    env = dict(os.environ, MLFLOW_TRACKING_URI=f"sqlite:///{store / 'mlflow.db'}")
    return subprocess.run(
        [sys.executable, "-m", "experiments.run", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def client_for(store: Path) -> MlflowClient:
    return MlflowClient(f"sqlite:///{store / 'mlflow.db'}")


def runs_of(store: Path, experiment: str) -> list:
    client = client_for(store)
    exp = client.get_experiment_by_name(experiment)
    return [] if exp is None else client.search_runs([exp.experiment_id], max_results=1000)


def parent_and_children(store: Path, experiment: str, sweep_dir: Path):
    runs = runs_of(store, experiment)
    parent = next(
        r
        for r in runs
        if r.data.tags.get("procmem.role") == "parent"
        and r.data.tags.get("procmem.sweep_dir") == str(sweep_dir)
    )
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    return parent, children


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("store")


@pytest.fixture(scope="module")
def sweeps(store):
    """Sweep 1: joblib, two jobs at a time into one SQLite file; job #1 cannot write its
    artifacts (a file blocks the folder). Sweep 2: sequential, the jobs in reverse order,
    ``resume=true``, once the blocker is gone."""
    first, second = store / "par", store / "seq"
    blocker = first / "1" / "artifacts"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("not a folder")
    common = ["-m", *SMALL, "tracking.experiment=exp_sweep"]
    failed = run_cli([*common, JOBS, f"hydra.sweep.dir={first}"], store)
    blocker.unlink()
    reverse = ",".join(reversed(JOBS.removeprefix("case=").split(",")))
    resumed = run_cli(
        [*common, f"case={reverse}", "hydra/launcher=basic", "resume=true",
         f"hydra.sweep.dir={second}"],
        store,
    )  # fmt: skip
    return failed, resumed


def test_failing_job_fails_its_run_the_parent_and_the_command(store, sweeps):
    failed, _ = sweeps
    assert failed.returncode != 0, failed.stderr
    assert "FAILED jobs (1):" in failed.stdout
    assert re.search(r"#1 .*case=gate_sprt", failed.stdout)
    parent, children = parent_and_children(store, "exp_sweep", store / "par")
    assert parent.info.status == "FAILED"
    m = parent.data.metrics
    assert (m["jobs_total"], m["jobs_finished"], m["jobs_failed"]) == (3, 2, 1)
    assert sorted(c.info.status for c in children) == ["FAILED", "FINISHED", "FINISHED"]
    bad = next(c for c in children if c.info.status == "FAILED")
    client = client_for(store)
    path = client.download_artifacts(bad.info.run_id, "traceback.txt", str(store / "tb"))
    assert "FileExistsError" in Path(path).read_text()
    assert bad.data.params["scenario.name"] == "gate"  # params were logged before it failed
    jobs = pd.read_parquet(
        client.download_artifacts(parent.info.run_id, "tables/jobs.parquet", str(store / "j"))
    )
    assert list(jobs["status"]) == ["finished", "failed", "finished"]
    sweep = yaml.safe_load(
        Path(
            client.download_artifacts(parent.info.run_id, "sweep.yaml", str(store / "y"))
        ).read_text()
    )
    assert JOBS in sweep["overrides"] and "case" in sweep["params"]


def test_child_runs_follow_the_mlflow_contract(store, sweeps):
    _, children = parent_and_children(store, "exp_sweep", store / "par")
    fate = next(c for c in children if c.data.tags["procmem.scenario"] == "fate")
    tags, params, metrics = fate.data.tags, fate.data.params, fate.data.metrics
    assert re.fullmatch(r"[0-9a-f]{16}", tags["procmem.config_hash"])
    assert tags["procmem.seed"] == "0" and tags["procmem.preset"] == "exp_sweep"
    assert re.fullmatch(r"[0-9a-f]{40}|unknown", tags["mlflow.source.git.commit"])
    assert "case=fate_seed" in tags["procmem.overrides"].split()
    assert tags["procmem.role"] == "child"
    assert params["scenario.name"] == "fate" and params["scenario.replications"] == "400"
    assert params["rule.threshold"] == "0.55" and params["rule.name"] == "confidence"
    assert params["resume"] == "False" and params["task"] == "scenario"
    # a child logs the groups its scenario reads, not every group
    assert not any(k.startswith(("gate.", "feedback.", "users.", "explore.")) for k in params)
    p, se, exact = metrics["p_excluded"], metrics["p_excluded_se"], metrics["p_excluded_exact"]
    assert 0 < p < 1 and se > 0 and abs(p - exact) <= 4 * se
    client = client_for(store)
    out = store / "fate_artifacts"
    local = Path(client.download_artifacts(fate.info.run_id, "", str(out)))
    config = yaml.safe_load((local / "config.yaml").read_text())
    assert config["scenario"]["name"] == "fate" and "hydra" not in config
    fates = pd.read_parquet(local / "tables" / "fates.parquet")
    assert len(fates) == 20 and {"session", "excluded_rate", "excluded_exact"} <= set(fates)
    assert fates["excluded_rate"].iloc[-1] == pytest.approx(p)
    assert not (local / "figures").exists()  # jobs draw no figures unless asked


def test_resume_runs_only_what_is_not_finished(store, sweeps):
    _, resumed = sweeps
    assert resumed.returncode == 0, resumed.stderr
    parent, children = parent_and_children(store, "exp_sweep", store / "seq")
    assert parent.info.status == "FINISHED"
    m = parent.data.metrics
    assert (m["jobs_total"], m["jobs_skipped"], m["jobs_finished"]) == (3, 2, 1)
    assert [c.data.tags["procmem.scenario"] for c in children] == ["gate"]
    assert children[0].data.tags["procmem.job_num"] == "1"  # reverse order: gate stays #1
    finished = [
        r.data.tags["procmem.config_hash"]
        for r in runs_of(store, "exp_sweep")
        if r.info.status == "FINISHED" and r.data.tags.get("procmem.role") == "child"
    ]
    assert len(finished) == len(set(finished)) == 3


def test_parallel_jobs_lose_nothing_and_match_a_sequential_job(
    store, sweeps, tmp_path, tracking_store
):
    """The local (process) sweep's finished children have every param, metric and artifact, and
    the very numbers a job run in this process (as the basic launcher runs it) gives."""
    parent, children = parent_and_children(store, "exp_sweep", store / "par")
    assert parent.data.tags["procmem.launcher"].endswith("ProcessLauncher")
    client = client_for(store)
    for child in (c for c in children if c.info.status == "FINISHED"):
        case = next(o for o in child.data.tags["procmem.overrides"].split() if "case=" in o)
        cfg = compose_config("quickstart", [case, "scenario.replications=400"])
        OmegaConf.update(cfg, "tracking.experiment", "exp_sweep")
        own = run_job(cfg, JobContext(out_dir=tmp_path / case))
        assert own.config_hash == child.data.tags["procmem.config_hash"]
        assert own.metrics == child.data.metrics
        logged = flatten(identity_container(cfg) | {"resume": cfg.resume})
        assert child.data.params == logged
        tables = {a.path for a in client.list_artifacts(child.info.run_id, "tables")}
        assert tables == {f"tables/{name}.parquet" for name in own_tables(tmp_path / case)}
    # the standard figures, drawn afterwards from the logged tables, into each run
    drawn = draw_logged("exp_sweep", parent.info.run_id, f"sqlite:///{store / 'mlflow.db'}")
    finished = [c for c in children if c.info.status == "FINISHED"]
    assert set(drawn) == {c.info.run_id for c in finished}
    for child in finished:
        figures = client.list_artifacts(child.info.run_id, "figures")
        assert {Path(f.path).stem for f in figures} == set(drawn[child.info.run_id])
        assert figures and all(f.file_size > 5000 for f in figures)


def own_tables(out_dir: Path) -> set[str]:
    return {p.stem for p in (out_dir / "artifacts" / "tables").glob("*.parquet")}


def test_invalid_single_run_creates_no_store(tmp_path, unmade_tracking_store):
    cfg = compose_config("quickstart", ["case=gate_sprt", "gate.alpha=1.5"])
    with pytest.raises(ParameterError, match=r"gate\.alpha=1\.5 is not allowed"):
        run_job(cfg, JobContext(out_dir=tmp_path / "job"))
    assert not unmade_tracking_store.exists() and not (tmp_path / "job").exists()


def test_invalid_sweep_stops_before_any_run(tmp_path):
    proc = run_cli(
        ["-m", "experiment=quickstart", "case=gate_sprt", "gate.alpha=0.05,1.5",
         f"hydra.sweep.dir={tmp_path / 's'}"],
        tmp_path,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "gate.alpha=1.5 is not allowed: expected a number in (0, 1)" in proc.stderr
    assert re.search(r"\(sweep job: .*gate\.alpha=1\.5\)", proc.stderr)
    assert not (tmp_path / "mlflow.db").exists()
