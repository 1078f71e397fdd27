"""Job identity, MLflow batching and retries, progress, figures and the sweep summary."""

from __future__ import annotations

import json
import sqlite3

import pandas as pd
import pytest
from omegaconf import OmegaConf

from experiments import tracking as tr
from experiments.figures import scenario_figures
from experiments.identity import PARAM_VALUE_LIMIT, config_hash, flatten, job_seed
from experiments.progress import chunk_progress
from experiments.summary import print_summary, summary_table
from simulators import SCENARIOS
from simulators.replication import CHUNK_LISTENER

BASE = {"seed": 0, "task": "scenario", "scenario": {"name": "fate", "p": 0.7}, "gate": None}


def test_config_hash_ignores_how_a_job_runs_but_not_what_it_computes():
    cfg = OmegaConf.create(BASE)
    h = config_hash(cfg)
    assert len(h) == 16 and int(h, 16) >= 0
    run_control = {**BASE, "resume": True, "progress": "on", "tracking": {"experiment": "x"}}
    assert config_hash(OmegaConf.create(run_control)) == h
    assert config_hash({**BASE, "hydra": {"job": {"num": 3}}}) == h
    assert config_hash({**BASE, "scenario": {"name": "fate", "p": 0.71}}) != h
    assert config_hash({**BASE, "seed": 1}) != h


def test_job_seed_comes_from_seed_and_hash_only():
    a = job_seed(0, "0123456789abcdef")
    assert a == job_seed(0, "0123456789abcdef")
    assert 0 <= a < 2**63
    assert len({a, job_seed(1, "0123456789abcdef"), job_seed(0, "0123456789abcdee")}) == 3


def test_flatten_nests_with_dots_lists_as_json_and_cuts_long_values():
    flat = flatten({"a": {"b": 1, "c": [0.1, 0.2], "d": {}}, "e": None, "f": "x" * 7000})
    assert flat == {
        "a.b": "1",
        "a.c": json.dumps([0.1, 0.2]),
        "a.d": "{}",
        "e": "None",
        "f": "x" * PARAM_VALUE_LIMIT,
    }


def test_tracking_uri_is_the_environment_or_the_repo_store(monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert tr.tracking_uri() == f"sqlite:///{tr.DEFAULT_DB}"
    assert tr.DEFAULT_DB.is_absolute()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow:5000")
    assert tr.tracking_uri() == "http://mlflow:5000"
    assert tr.sqlite_path("http://mlflow:5000") is None


def test_log_uses_as_few_batches_as_mlflow_allows(tmp_path, monkeypatch):
    tracker = tr.Tracker("batching", f"sqlite:///{tmp_path / 'm.db'}")
    run_id = tracker.start_run("r", {tr.TAG_ROLE: "single"})
    batches = []
    real = tracker.client.log_batch
    monkeypatch.setattr(
        tracker.client, "log_batch", lambda *a, **k: batches.append(k) or real(*a, **k)
    )
    params = {f"p{i}": str(i) for i in range(250)}
    metrics = {f"m{i}": i / 7 for i in range(1200)}
    tags = {f"t{i}": "v" for i in range(150)}
    tracker.log(run_id, params=params, metrics=metrics, tags=tags)
    assert len(batches) == 3  # 250 params at 100 per call
    assert all(len(b["params"]) + len(b["metrics"]) + len(b["tags"]) <= 1000 for b in batches)
    data = tracker.client.get_run(run_id).data
    assert data.params == params and data.metrics == pytest.approx(metrics)
    assert all(data.tags[k] == "v" for k in tags)
    exp = tracker.client.get_experiment_by_name("batching")
    assert exp.artifact_location == (tmp_path / "mlartifacts" / "batching").as_uri()


def test_calls_retry_while_the_database_is_locked():
    tracker = tr.Tracker("unused", "sqlite:///unused.db")
    attempts = []

    def flaky() -> int:
        attempts.append(1)
        if len(attempts) < 3:
            raise RuntimeError("write failed") from sqlite3.OperationalError("database is locked")
        return 5

    assert tracker.call(flaky) == 5 and len(attempts) == 3
    assert tracker.seconds > 0

    def broken() -> None:
        attempts.append(1)
        raise ValueError("no such table")

    attempts.clear()
    with pytest.raises(ValueError, match="no such table"):
        tracker.call(broken)
    assert len(attempts) == 1


def test_progress_bar_counts_every_chunk_and_changes_nothing():
    fate = SCENARIOS["fate"](replications=10, chunk_size=3, sessions=5)
    plain = fate.run(7)
    with chunk_progress("on", "fate") as bar:
        shown = fate.run(7)
        fate.run(8)  # a second pass adds its chunks to the total
    assert (bar.n, bar.total) == (8, 8)
    assert shown.metrics == plain.metrics
    assert CHUNK_LISTENER.get() is None
    with chunk_progress("off", "fate") as none:
        assert none is None and CHUNK_LISTENER.get() is None


@pytest.mark.parametrize(
    ("name", "kwargs", "figures"),
    [
        ("fate", {"replications": 200}, {"fate_exclusion"}),
        (
            "confidence",
            {"replications": 20, "sessions": 10},
            {"fate_by_kind", "success_over_sessions", "active_by_kind"},
        ),
        ("gate", {"replications": 200}, {"operating_characteristic", "runs_by_verdict"}),
        ("explore", {"replications": 4, "sessions": 100}, {"ab_arms"}),
    ],
)
def test_each_scenario_gets_its_standard_figures(tmp_path, name, kwargs, figures):
    result = SCENARIOS[name](**kwargs).run(1)
    written = scenario_figures(result, tmp_path)
    assert {p.stem for p in written} == figures
    assert all(p.stat().st_size > 5000 for p in written)


def test_summary_shows_varying_overrides_key_metrics_and_failures(capsys):
    jobs = pd.DataFrame(
        [
            {"job": 0, "overrides": "experiment=q case=a", "scenario": "fate",
             "config_hash": "h0", "status": "finished", "run_id": "r0"},
            {"job": 1, "overrides": "experiment=q case=b", "scenario": "gate",
             "config_hash": "h1", "status": "failed", "run_id": "r1"},
            {"job": 2, "overrides": "experiment=q case=c", "scenario": "",
             "config_hash": "h2", "status": "missing", "run_id": None},
        ]
    )  # fmt: skip
    metrics = {"r0": {"p_excluded": 0.25, "p_excluded_se": 0.01, "break_even": 0.652}}
    table = summary_table(jobs, metrics)
    assert list(table["overrides"]) == ["case=a", "case=b", "case=c"]
    assert table["key metrics (±SE)"][0] == "p_excluded=0.25±0.01"
    print_summary(jobs, metrics, "q", "sqlite:///x.db")
    out = capsys.readouterr().out
    assert "FAILED jobs (2):" in out and "#2 experiment=q case=c: no run" in out
    assert "python -m reports q" in out and "reports/out/q/index.html" in out
    assert "mlflow ui --backend-store-uri sqlite:///x.db" in out


def test_figures_can_be_switched_off_without_changing_the_job(tmp_path, tracking_store):
    from experiments.job import JobContext, run_job
    from experiments.run import compose_job

    on = run_job(compose_job("quickstart", ["case=fate_seed", "scenario.replications=300"]),
                 JobContext(out_dir=tmp_path / "on"))  # fmt: skip
    off_cfg = compose_job(
        "quickstart", ["case=fate_seed", "scenario.replications=300", "tracking.figures=false"]
    )
    off = run_job(off_cfg, JobContext(out_dir=tmp_path / "off"))
    assert off.config_hash == on.config_hash and off.metrics == on.metrics
    assert (tmp_path / "on" / "artifacts" / "figures" / "fate_exclusion.png").exists()
    assert not (tmp_path / "off" / "artifacts" / "figures").exists()
    assert (tmp_path / "off" / "artifacts" / "tables" / "fates.parquet").exists()
