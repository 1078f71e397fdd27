"""The live loop's run analyzed straight from MLflow: its session traces (``traces:/``,
``experiments:/``), its artifact folder (``runs:/``, the run's root, and a bare run id)
and its ``sessions.csv`` copied into a directory give the same ``lifts.csv`` bytes."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
from foreign_server import ForeignServer, foreign_overrides
from mlflow.tracking import MlflowClient

from experiments.analyze import analyze
from experiments.analyze.read import read_log
from experiments.job import JobContext, run_job
from experiments.run import compose_job


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
