"""The report's frame on real runs: which sweep it reports, resumed sweeps, errors that
name the option, one folder per sweep, provenance, terms, and what it logs back to MLflow.

Two tiny sweeps into one temporary store (the second resumes the first with every job
skipped), then a single run of the same preset; ``python -m reports`` reads them back.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

import reports.build as build
from reports.__main__ import main
from reports.source import load_sweep

pytestmark = pytest.mark.slow

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
JOBS = ["experiment=quickstart", "case=fate_seed,gate_sprt", "scenario.replications=300",
        "tracking.experiment=frame", "hydra/launcher=basic", "progress=off"]  # fmt: skip


def run(args: list[str], uri: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "experiments.run", *args], cwd=ROOT,
        env=dict(os.environ, MLFLOW_TRACKING_URI=uri), capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def store(tmp_path_factory, new_mlflow_store):
    """``(uri, first parent, resumed parent, single run)``."""
    root = tmp_path_factory.mktemp("frame")
    uri = new_mlflow_store(root / "mlflow.db")
    run(["-m", *JOBS, f"hydra.sweep.dir={root / 'a'}"], uri)
    run(["-m", *JOBS, "resume=true", f"hydra.sweep.dir={root / 'b'}"], uri)
    run(["experiment=quickstart", "case=gate_margin", "scenario.replications=300",
         "tracking.experiment=frame", f"hydra.run.dir={root / 'single'}"], uri)  # fmt: skip
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("frame").experiment_id])
    by_dir = {r.data.tags.get("procmem.sweep_dir"): r.info.run_id for r in runs}
    single = next(r.info.run_id for r in runs if r.data.tags.get("procmem.role") == "single")
    return uri, by_dir[str(root / "a")], by_dir[str(root / "b")], single


def test_a_resumed_sweep_reports_every_job_however_many_sweeps_ran_them(store):
    uri, first, resumed, single = store
    sweep = load_sweep("frame", uri=uri)
    assert sweep.parent_id == resumed  # the latest sweep, not the later single run
    assert sweep.chosen.startswith("the latest of 2 sweep(s) of 'frame'")
    assert f"--run {first}" in sweep.chosen
    assert sweep.earlier == 2
    assert sorted(sweep.runs["scenario"]) == ["fate", "gate"]
    assert set(sweep.runs["status"]) == {"FINISHED"}
    assert single not in set(sweep.runs["run_id"])
    alone = load_sweep("frame", single, uri)
    assert list(alone.runs["run_id"]) == [single] and alone.chosen == f"run {single} (--run)"


def test_the_report_says_which_sweep_and_where_its_numbers_come_from(
    store, tmp_path, monkeypatch, capsys
):
    uri, first, resumed, _ = store
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setattr(build, "OUT_ROOT", tmp_path / "out")
    assert main(["frame"]) == 0
    out, err = capsys.readouterr()
    folder = tmp_path / "out" / "frame" / resumed
    assert out.strip() == str(folder / "index.html")
    assert (
        f"reporting the latest of 2 sweep(s) of 'frame' (others: --run {first}, ...): run {resumed}"
        in err
    )
    assert (tmp_path / "out" / "frame" / "latest").resolve() == folder.resolve()
    assert main(["frame", "--run", first, "--no-log"]) == 0  # another sweep, its own folder
    assert (tmp_path / "out" / "frame" / first / "index.html").exists()
    assert (tmp_path / "out" / "frame" / "latest").resolve().name == first
    assert (folder / "index.html").exists()  # the first report is still there
    # the provenance and the tables moved to the appendix page (issue 30)
    md = (folder / "report.md").read_text() + (folder / "appendix.md").read_text()
    client = MlflowClient(uri)
    parent = client.get_run(resumed)
    commit = parent.data.tags["mlflow.source.git.commit"]
    assert f"- Code: commit {commit}" in md
    assert "- Sweep command: python -m experiments.run -m experiment=quickstart" in md
    assert "resume=true" in md and "- Report command: python -m reports frame" in md
    assert re.search(r"- Packages of the jobs: python 3\.\d+\.\d+, procmem [\d.]+, numpy", md)
    assert "2 of its jobs were finished by an earlier sweep it resumed" in md
    assert "| gate | 1 run, 300 replications each, seed 0 |" in md
    captions = re.findall(r"^\*\*(.+)\*\*$", md, flags=re.M)
    gate_captions = [c for c in captions if "gate" in c.lower() and "[" in c]
    assert gate_captions and all(c.endswith("[1 run, 300 replications each, seed 0]")
                                 for c in gate_captions)  # fmt: skip
    for term in ("SE", "false revert", "cap rule", "break-even"):
        assert md.count(f"; {term}: ") + md.count(f"Terms. {term}: ") <= 1, term
    assert md.count("SE: Monte Carlo standard error") == 1
    tags, metrics = parent.data.tags, parent.data.metrics
    assert tags["procmem.report.gates"].startswith(("Use ", "No swept gate", "No gate meets"))
    rec = json.loads((folder / "recommendations.json").read_text())
    if rec["feasible"]:  # the prescribed gate's certified worst cases, as parent metrics
        chosen = next(a for a in rec["answers"] if a["config"] == rec["gate"])
        assert metrics["recommended.gates.false_revert_rate_worst"] == pytest.approx(
            chosen["false_revert"]
        )
        assert metrics["recommended.gates.power_worst"] == pytest.approx(chosen["power"])
    logged = {a.path for a in client.list_artifacts(resumed, "report")}
    assert {"report/summary.json", "report/gates.json", "report/index.html"} <= logged
    note = parent.data.tags["mlflow.note.content"]
    assert note.startswith("What do the seeds' defaults do, family by family")
    exp = client.get_experiment(parent.info.experiment_id)
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    child = client.search_runs([exp.experiment_id], "tags.`procmem.role` = 'child'")
    assert {c.info.run_name for c in child} == {"fate", "gate"}  # only the case varies
    oc = client.get_metric_history(
        next(c.info.run_id for c in child if c.info.run_name == "gate"), "oc.revert_rate"
    )
    assert sorted(m.step for m in oc) == [0, 50, 100, 150, 200]  # drops 0-0.2 in thousandths


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["frame", "--max-false-revert", "2"], "--max-false-revert 2.0 is not allowed"),
        (["frame", "--target-sessions", "0"], "--target-sessions 0 is not allowed"),
        (["frame", "--out", "/proc/procmem-report"], "--out /proc/procmem-report: cannot write"),
        (["dead"], "has no finished job (1 FAILED): nothing to report"),
    ],
)
def test_what_cannot_be_reported_is_one_line_with_exit_2(store, monkeypatch, capsys, argv,
                                                        fragment):  # fmt: skip
    uri, *_ = store
    client = MlflowClient(uri)
    if client.get_experiment_by_name("dead") is None:
        exp = client.create_experiment("dead")
        parent = client.create_run(exp, tags={"procmem.role": "parent"}, run_name="dead sweep")
        child = client.create_run(exp, tags={"mlflow.parentRunId": parent.info.run_id})
        client.set_terminated(child.info.run_id, "FAILED")
        client.set_terminated(parent.info.run_id, "FAILED")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert main([*argv, "--no-log"]) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and "\n" not in err and "Traceback" not in err
