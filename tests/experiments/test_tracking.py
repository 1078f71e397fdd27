"""Job identity, MLflow batching and retries, progress, figures and the sweep summary."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from omegaconf import OmegaConf

from experiments import stores as tr_stores
from experiments import tracking as tr
from experiments.figures import scenario_figures
from experiments.identity import PARAM_VALUE_LIMIT, flatten, job_seed
from experiments.progress import SweepProgress, chunk_progress
from experiments.spec import config_hash
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
    assert tr_stores.tracking_uri() == f"sqlite:///{tr_stores.DEFAULT_DB}"
    assert tr_stores.DEFAULT_DB.is_absolute()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow:5000")
    assert tr_stores.tracking_uri() == "http://mlflow:5000"
    assert tr_stores.tracking_uri("sqlite:////w/m.db") == "sqlite:////w/m.db"  # the config's
    assert tr_stores.sqlite_path("http://mlflow:5000") is None


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


def test_summary_is_aligned_names_failures_and_prints_pasteable_commands(capsys, monkeypatch):
    jobs = pd.DataFrame(
        [
            {"job": 0, "name": "fate: p 0.7", "overrides": "experiment=q case=a",
             "scenario": "fate", "config_hash": "h0", "status": "finished", "run_id": "r0",
             "reason": ""},
            {"job": 1, "name": "gate: SPRT", "overrides": "experiment=q case=b",
             "scenario": "gate", "config_hash": "h1", "status": "failed", "run_id": "r1",
             "reason": "its process was killed by SIGKILL (signal 9) before it reported"},
            {"job": 2, "name": "gate: margin", "overrides": "experiment=q case=c",
             "scenario": "gate", "config_hash": "h2", "status": "missing", "run_id": None,
             "reason": "no run: the job never reported"},
        ]
    )  # fmt: skip
    metrics = {"r0": {"p_excluded": 0.25, "p_excluded_se": 0.01, "break_even": 0.652}}
    table = summary_table(jobs, metrics)
    assert list(table["overrides"]) == ["case=a", "case=b", "case=c"]
    assert list(table["run"]) == ["fate: p 0.7", "gate: SPRT", "gate: margin"]
    assert table["key metrics (±SE)"][0] == "p_excluded=0.25 ± 0.01"

    class Store:
        experiment, experiment_id, uri = "q", "1", "sqlite:///x.db"

    monkeypatch.chdir(Path(sys.executable).parents[2])  # the venv's parent: a relative path
    print_summary(jobs, metrics, Store(), "p123", 75.0)
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "== q: 3 jobs in 1:15 (failed 1, finished 1, missing 1)" in lines
    header = next(i for i, line in enumerate(lines) if line.strip().startswith("job"))
    rows = lines[header : header + 4]
    assert len({line.index("status") if i == 0 else None for i, line in enumerate(rows)}) == 2
    assert {row[rows[0].index("status") :].split()[0] for row in rows[1:]} == {
        "finished", "failed", "missing"
    }  # fmt: skip
    assert "FAILED jobs (2):" in out
    assert "#1 experiment=q case=b: run r1: its process was killed by SIGKILL" in out
    assert "#2 experiment=q case=c: no run: no run: the job never reported" in out
    python = Path(sys.executable).relative_to(Path(sys.executable).parents[2])
    assert f"report:  {python} -m reports q --run p123" in out
    assert "-> reports/out/q/p123/index.html" in out
    assert f"browse:  {python.with_name('mlflow')} ui --backend-store-uri sqlite:///x.db" in out
    assert tr_stores.browse_hint("http://127.0.0.1:5000", "3", "p1") == (
        "open http://127.0.0.1:5000/#/experiments/3/runs/p1"
    )


def test_jobs_draw_figures_only_when_asked_and_the_numbers_do_not_change(tmp_path, tracking_store):
    from experiments.job import JobContext, run_job
    from experiments.run import compose_job

    base = ["case=fate_seed", "scenario.replications=300"]
    off = run_job(compose_job("quickstart", base), JobContext(out_dir=tmp_path / "off"))
    on_cfg = compose_job("quickstart", [*base, "tracking.figures=true"])
    on = run_job(on_cfg, JobContext(out_dir=tmp_path / "on"))
    assert off.config_hash == on.config_hash and off.metrics == on.metrics
    assert (tmp_path / "on" / "artifacts" / "figures" / "fate_exclusion.png").exists()
    assert not (tmp_path / "off" / "artifacts" / "figures").exists()
    assert (tmp_path / "off" / "artifacts" / "tables" / "fates.parquet").exists()
    assert off.figure_seconds < 0.01 < on.figure_seconds


def test_run_names_say_what_tells_a_job_apart_from_the_others_of_its_scenario():
    from experiments.identity import run_name, varying_keys

    jobs = [
        ("gate", {"gate.name": "sprt", "gate.alpha": "0.05", "scenario.ledger_size": "None"}),
        ("gate", {"gate.name": "margin", "gate.margin": "0.1", "scenario.ledger_size": "None"}),
        ("gate", {"gate.name": "sprt", "gate.alpha": "0.05", "scenario.ledger_size": "20"}),
        ("confidence", {"rule.reward": "0.08", "scenario.calibration_blocks": "0"}),
        (
            "confidence",
            {
                "rule.reward": "0.08",
                "feedback.flips.false_negative": "0.1",
                "scenario.calibration_blocks": "45",
            },
        ),
        ("loop", {"gate.name": "sprt", "explore.estimator": "dim"}),
    ]
    vary = varying_keys(jobs)  # the calibration blocks say how SEs are checked: not named
    assert vary == [
        "gate:gate.name", "confidence:feedback.flips.false_negative", "gate:scenario.ledger_size"
    ]  # fmt: skip
    names = [run_name(label, params, vary) for label, params in jobs]
    assert names == [
        "gate: SPRT, p0 known", "gate: margin, p0 known", "gate: SPRT, ledger size 20",
        "confidence", "confidence: false negative 0.1", "loop",
    ]  # fmt: skip
    assert run_name("fate", {"scenario.p": "0.652"}, ["scenario.p"]) == "fate: p 0.652"
    # a search's float reads in 4 significant digits; the params keep every digit
    rate = {"explore.explore_rate": "0.056099363343358924"}
    assert run_name("loop", rate, ["explore.explore_rate"]) == "loop: explore rate 0.0561"
    assert run_name("x", {"s.v": "123.456789"}, ["s.v"]) == "x: v 123.5"
    # an unset scenario field reads as what a scenario says it means (unset_phrase),
    # any other unset field is left out
    assert run_name("gate", {"scenario.ledger_size": "None"}, ["scenario.ledger_size"]) == (
        "gate: p0 known"
    )
    assert run_name("loop", {"scenario.other": "None"}, ["scenario.other"]) == "loop"
    assert run_name("gate", {"gate.ledger_size": "None"}, ["gate.ledger_size"]) == "gate"


def test_sweep_progress_prints_jobs_done_elapsed_and_the_last_jobs_metrics(capsys):
    """``SweepProgress`` reads the children from the store (so every launcher shows it):
    one line per newly ended job, counting the skipped ones, naming the failed ones."""

    def child(run_id, num, status, end, metrics):
        return SimpleNamespace(
            info=SimpleNamespace(run_id=run_id, status=status, end_time=end, run_name="gate: SPRT"),
            data=SimpleNamespace(
                metrics=metrics, tags={"procmem.scenario": "gate", "procmem.job_num": str(num)}
            ),
        )

    m = {"false_revert_rate": 0.089, "false_revert_rate_se": 0.0009, "mean_runs_null": 23.93}
    done = [child("a", 0, "FINISHED", 2, m), child("b", 1, "FAILED", 1, {})]
    running = child("c", 2, "RUNNING", None, {})
    jobs = [SimpleNamespace(num=i, skipped_by="p" if i == 3 else None) for i in range(4)]
    bar = SweepProgress("sqlite:///unused.db", "x", "parent", jobs, "on")
    bar.tty = False
    bar.tracker = SimpleNamespace(children=lambda parent: [*done, running])
    bar.update()
    bar.update()  # nothing new: nothing printed twice
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2
    elapsed = r"\d+:\d\d"  # m:ss, whatever the machine's load
    assert re.match(
        rf"\[2/4 jobs \(1 failed, 1 skipped\), {elapsed}\] #1 gate: SPRT FAILED$", lines[0]
    )
    assert re.match(rf"\[3/4 jobs \(1 failed, 1 skipped\), {elapsed}\] #0 gate: SPRT: ", lines[1])
    assert lines[1].endswith("false_revert_rate=0.089 ± 0.0009  mean_runs_null=23.9")
    quiet = SweepProgress("sqlite:///unused.db", "x", "parent", jobs, "off")
    quiet.tracker = bar.tracker
    quiet.update()
    assert capsys.readouterr().err == "" and quiet.failed == 1  # counted, not shown


def test_a_single_run_prints_its_id_status_metrics_and_report_command(capsys):
    from experiments.summary import command, print_single

    outcome = SimpleNamespace(
        status="FINISHED",
        total_seconds=1.34,
        metrics={"p_excluded": 0.7403, "p_excluded_se": 0.00044, "expected_sessions_applied": 8.0},
    )
    print_single("abc123", "fate: p 0.7", outcome, SimpleNamespace(experiment="quickstart"))
    out, err = capsys.readouterr()
    assert out == ""  # stdout stays the job's own
    first, second = err.strip().splitlines()
    assert first == (
        "run abc123 (fate: p 0.7) FINISHED in 1.3 s: p_excluded=0.74 ± 0.00044  "
        "expected_sessions_applied=8"
    )
    assert second == f"report: {command('python')} -m reports quickstart --run abc123"
    assert second.split()[1].endswith("python")  # a command a newcomer can paste


def test_a_gate_run_without_a_ledger_is_tagged_p0_known():
    """Its params read gate.prior=plugin and scenario.ledger_size=None; the tag says what
    that is, and a run with a ledger gets no such tag."""
    from experiments.run import compose_job
    from experiments.spec import unset_tags

    assert unset_tags(compose_job("quickstart", ["case=gate_sprt"])) == {
        "procmem.ledger_size": "p0 known"
    }
    assert unset_tags(compose_job("quickstart", ["case=gate_ledger"])) == {}
    assert unset_tags(compose_job("quickstart", ["case=fate_seed"])) == {}


def test_a_job_without_declared_metrics_shows_results_not_calibration_blocks():
    """The reflections scenario declares no key metrics: its summary line shows the first
    three metrics with an SE by name, skipping the blocks (``cal00_...``) that sort first."""
    from experiments.summary import headline

    metrics = {
        "cal00_true_contrast_rate_s40": 0.77, "cal00_true_contrast_rate_s40_se": 0.02,
        "opposite_pair_rate": 0.49, "opposite_pair_rate_se": 0.027,
        "pairs": 5.0, "pairs_se": 0.1,
        "same_task_rate": 1.0, "same_task_rate_se": 0.0,
        "true_contrast_rate": 0.71, "true_contrast_rate_se": 0.021,
    }  # fmt: skip
    line = headline("reflections", metrics)
    assert "cal00" not in line
    assert line.startswith("opposite_pair_rate=0.49") and "pairs=5" in line
    assert "same_task_rate" in line and "true_contrast_rate" not in line
