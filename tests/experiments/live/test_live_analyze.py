"""The live loop's run analyzed straight from MLflow: its session traces (``traces:/``,
``experiments:/``), its artifact folder (``runs:/``, the run's root, and a bare run id)
and its ``sessions.csv`` copied into a directory give the same ``lifts.csv`` bytes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from foreign_server import ForeignServer, foreign_overrides
from mlflow.tracking import MlflowClient

from experiments.analyze import analyze
from experiments.analyze.read import read_log
from experiments.job import JobContext, run_job
from experiments.run import compose_job
from procmem_core.logs import LogError


@pytest.mark.slow
def test_a_live_runs_traces_and_artifacts_give_the_lifts_of_its_sessions(
    tmp_path, tracking_store, foreign_tasks
):
    with ForeignServer() as server:
        over = foreign_overrides(
            server, foreign_tasks, tmp_path / "j.jsonl", sessions=40, extract_every=10,
            explore_rate=0.3, concurrency=2,
        )  # fmt: skip
        outcome = run_job(compose_job("live", over), JobContext(out_dir=tmp_path / "job"))
    assert outcome.status == "finished"
    run_id = outcome.run_id
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(tmp_path / "job" / "artifacts" / "sessions.csv", logs / "sessions.csv")
    sessions = pd.read_csv(logs / "sessions.csv", keep_default_na=False)
    from_traces = read_log(f"traces:/{run_id}").sessions
    assert list(from_traces.session_id.strings()) == list(sessions["session_id"])
    assert list(from_traces.outcome) == list(sessions["outcome"].astype(float))
    assert list(from_traces.withheld) == list(sessions["withheld"])
    assert (from_traces.explore_rate == 0.3).all()
    texts = {}
    for source in (str(logs), f"traces:/{run_id}", "experiments:/live", f"runs:/{run_id}",
                   run_id):  # fmt: skip
        out = tmp_path / f"out-{len(texts)}"
        analyze(source, out, track_run=False, design=False, prescribe=False)
        texts[source] = (out / "lifts.csv").read_text()
    assert len(set(texts.values())) == 1, texts
    lifts = pd.read_csv(tmp_path / "out-0" / "lifts.csv")
    assert len(lifts) >= 1 and lifts["n_withheld"].sum() == sessions["withheld"].sum() - (
        sessions.loc[sessions["withheld"], "top_key"].eq("").sum())  # fmt: skip
    client = MlflowClient(f"sqlite:///{tracking_store}")
    assert client.get_run(run_id).data.params["live.explore_rate"] == "0.3"


def stopped_by_budget(server: ForeignServer, tmp_path: Path, foreign_tasks) -> list[str]:
    """A 40-session live run at concurrency 4 stopped by its token budget (its artifacts
    in ``tmp_path / "first"``); returns its overrides, to resume it."""
    over = foreign_overrides(
        server, foreign_tasks, tmp_path / "j.jsonl", sessions=40, extract_every=5,
        explore_rate=0.3, concurrency=4,
    )  # fmt: skip
    with pytest.raises(Exception, match="budget"):
        run_job(
            compose_job("live", [*over, "live.budget.tokens=60000"]),
            JobContext(out_dir=tmp_path / "first"),
        )
    return over


@pytest.mark.slow
def test_traces_of_a_stopped_run_and_its_resume_read_as_their_logs_or_are_refused(
    tmp_path, tracking_store, foreign_tasks
):
    """A run stopped by its budget (concurrency 4) traced sessions its log does not keep
    (finished after the one the budget stopped); its resume traced only the sessions it
    ran, not the ones it restored. ``traces:/`` read them as logs: the resume's 20 of
    its 40 sessions gave a lift of +0.13 where its sessions.csv gives +0.46. Now a run's
    traces are its logged sessions (the ``success`` steps), and a run whose logged
    sessions were traced elsewhere is refused naming ``runs:/``."""
    with ForeignServer(padding=2000) as server:
        over = stopped_by_budget(server, tmp_path, foreign_tasks)
        again = run_job(
            compose_job("live", [*over, "live.budget.tokens=null", "resume=true"]),
            JobContext(out_dir=tmp_path / "again"),
        )
    client = MlflowClient(f"sqlite:///{tracking_store}")
    experiment = client.get_experiment_by_name("live").experiment_id
    [stopped] = [r for r in client.search_runs([experiment]) if r.info.status == "FAILED"]
    logged = pd.read_csv(tmp_path / "first" / "artifacts" / "sessions.csv")
    traced = read_log(f"traces:/{stopped.info.run_id}").sessions
    assert list(traced.session_id.strings()) == list(logged["session_id"])
    assert list(traced.outcome) == list(logged["outcome"].astype(float))
    assert again.metrics["n_resumed"] > 0
    with pytest.raises(LogError, match=rf"runs:/{again.run_id}"):
        read_log(f"traces:/{again.run_id}")


@pytest.mark.slow
def test_experiments_source_reads_a_stopped_runs_logged_sessions_only(
    tmp_path, tracking_store, foreign_tasks
):
    """``experiments:/`` reads each run's traces as ``traces:/`` does: the sessions the
    run logged. A run stopped by its budget at concurrency 4 traced the session the
    budget cut (no outcome) and any finished after it; ``experiments:/`` read them too,
    25 sessions where the run logged 24, the cut one an unrated session counted in its
    procedure's arm and in the missing ratings."""
    with ForeignServer(padding=2000) as server:
        stopped_by_budget(server, tmp_path, foreign_tasks)
    logged = pd.read_csv(tmp_path / "first" / "artifacts" / "sessions.csv")
    read = read_log("experiments:/live").sessions
    # in the order of the traces' start times (concurrent sessions may start out of order)
    got = sorted(zip(read.session_id.strings(), read.outcome, read.withheld, strict=True))
    want = zip(
        logged["session_id"], logged["outcome"].astype(float), logged["withheld"], strict=True
    )
    assert got == sorted(want)
