"""The graph live loop proposes revisions, the configured gate decides them, and the run's
revisions log replays to the same verdicts; its pack log is the session log; a resume
rebuilds both (the offline model on 127.0.0.1)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from foreign_server import ForeignServer, foreign_overrides
from mlflow.tracking import MlflowClient
from test_live_loop import offline, run

from experiments.analyze import analyze
from experiments.analyze.read import read_log
from experiments.job import JobContext, run_job
from experiments.live.revisions import LESSON
from experiments.live.tasks import BUNDLED
from experiments.run import compose_job
from procmem_core.agent import SDK_GATE_MIN_RUNS
from procmem_core.gates import SPRTGate
from procmem_core.logs.replay import gate_replay

GRAPH = ("live.memory=graph", "live.sessions=40", "live.revise_every=10", "live.concurrency=2")
FD = "procedure_allocate_maturing_fd_for_risk_averse_users"
FUNDS = "procedure_annual_fund_monitoring_and_rebalancing"
FINCOACH = BUNDLED["fincoach"]


def artifacts(tmp_path: Path, name: str) -> dict[str, pd.DataFrame]:
    art = tmp_path / name / "artifacts"
    return {
        f: pd.read_csv(art / f"{f}.csv", keep_default_na=False)
        for f in ("sessions", "runs", "revisions", "pack_log")
    }


def test_a_live_graph_run_proposes_revisions_that_the_gate_decides_and_the_log_replays(
    tmp_path,
):
    sessions, procs, metrics = run(tmp_path, "full", offline(tmp_path, "full", *GRAPH))
    assert metrics["revisions_proposed"] == 3
    assert metrics["revisions_decided"] == 1
    assert metrics["revisions_accepted"] == 1 and metrics["revisions_reverted"] == 0
    logs = artifacts(tmp_path, "full")
    revisions = logs["revisions"]
    proposed = revisions[revisions["prior_revision"] != ""]
    rows = [tuple(r) for r in proposed.astype(str).itertuples(index=False)]
    # session 9 proposes FD's revision 2 (its failed runs' lesson), the evolve after FD's
    # 10th run (session 36) accepts it; two more proposals are still pending
    assert rows == [
        (FD, "2", "1", "9", "36", "accepted"),
        (FUNDS, "2", "1", "19", "", "pending"),
        (FD, "3", "2", "39", "", "pending"),
    ]
    stored = {p["key"]: p for p in procs}
    assert stored[FD]["revision"] == 3
    # its new step is the offline model's reflection on the failed runs' check, read back
    # from the HTTP reply (journaled with session 9), not the checker's lesson
    step = stored[FD]["steps"][2]
    assert step == "Make the reply match the pattern \\A[^\\n]*emergency fund"
    assert not step.startswith(LESSON)
    journal = (tmp_path / "full" / "journal.jsonl").read_text(encoding="utf-8").splitlines()
    ninth = json.loads(journal[9])
    assert ninth["reflections"][f"{FD}@1"]["step"] == step
    assert [c["purpose"] for c in ninth["calls"]].count("revision") == 1
    runs = logs["runs"]
    fd = runs[runs["key"] == FD]
    # revision 1 failed both its runs; revision 2 passed 3 of its 9 (no drop: accepted)
    assert list(fd.loc[fd["revision"] == 1, "ok"]) == [False, False]
    assert (len(fd[fd["revision"] == 2]), fd.loc[fd["revision"] == 2, "ok"].sum()) == (9, 3)
    # the log in the session log schema replays to the live verdict
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    for name in ("sessions", "runs", "revisions"):
        shutil.copy(tmp_path / "full" / "artifacts" / f"{name}.csv", log_dir / f"{name}.csv")
    analyze(str(log_dir), tmp_path / "out", track_run=False, design=False, prescribe=False)
    replay = pd.read_csv(tmp_path / "out" / "gate_replay.csv", keep_default_na=False)
    assert list(replay["logged_verdict"]) == ["accepted", "pending", "pending"]
    assert list(replay["sprt_verdict"]) == list(replay["logged_verdict"])
    live_gate = SPRTGate(min_runs=SDK_GATE_MIN_RUNS)  # the gate the live evolve used
    again = gate_replay(read_log(log_dir), {"live": live_gate})
    assert list(again["live_verdict"]) == list(replay["logged_verdict"])
    # the seed's SPRT (min 3 runs) accepts after 3 of revision 2's runs, the SDK's
    # (min 5) after 6: the same verdict
    assert (replay["sprt_runs"][0], again["live_runs"][0]) == (3, 6)
    # the store's pack log is the session log, session by session
    packs = logs["pack_log"]
    assert list(packs["session_id"]) == list(sessions["session_id"])
    assert list(packs["time"]) == list(sessions["time"])
    assert list(packs["withheld"]) == list(sessions["withheld"])
    assert list(packs["outcome"]) == list(sessions["outcome"])
    refs = ["" if k == "" else f"default/{k}" for k in sessions["top_key"]]
    assert list(packs["top_key"]) == refs
    shown = [json.dumps([f"default/{k}" for k in json.loads(s)]) for s in sessions["shown_keys"]]
    assert list(packs["shown_keys"]) == shown


def test_a_resumed_graph_run_proposes_and_logs_what_an_uninterrupted_one_does(tmp_path):
    run(tmp_path, "full", offline(tmp_path, "full", *GRAPH))
    journal = (tmp_path / "full" / "journal.jsonl").read_text(encoding="utf-8").splitlines()
    cut = tmp_path / "cut" / "journal.jsonl"
    cut.parent.mkdir()
    # rounds of 5: six whole rounds (after both first proposals) and a torn seventh
    cut.write_text("\n".join(journal[:33]) + "\n" + journal[33][:40], encoding="utf-8")
    # resumed at concurrency 1 (the full run's is 2): the same logs either way
    one = [*GRAPH[:-1], "live.concurrency=1", "resume=true"]
    _, _, metrics = run(tmp_path, "cut", offline(tmp_path, "cut", *one))
    assert metrics["n_resumed"] == 30
    assert metrics["revisions_proposed"] == 3 and metrics["revisions_decided"] == 1
    full, resumed = artifacts(tmp_path, "full"), artifacts(tmp_path, "cut")
    for name in ("sessions", "runs", "revisions", "pack_log"):
        pd.testing.assert_frame_equal(full[name], resumed[name])
    assert resumed["pack_log"]["session_id"].is_unique


@pytest.mark.slow
def test_the_revisions_reach_mlflow_and_replay_from_the_run(tmp_path, tracking_store):
    over = offline(tmp_path, "job", *GRAPH)
    outcome = run_job(compose_job("live", over), JobContext(out_dir=tmp_path / "job"))
    assert outcome.status == "finished"
    data = MlflowClient(f"sqlite:///{tracking_store}").get_run(outcome.run_id).data
    assert data.params["live.revise_every"] == "10"
    assert (data.metrics["revisions_proposed"], data.metrics["revisions_decided"]) == (3, 1)
    assert data.metrics["revisions_accepted"] == 1
    # each reflection is a trace of its own in the MLflow session of the session that
    # ended the revision step; the sessions' own traces are still one per session
    client = MlflowClient(f"sqlite:///{tracking_store}")
    mlflow.set_tracking_uri(f"sqlite:///{tracking_store}")
    experiment = client.get_run(outcome.run_id).info.experiment_id
    traces = mlflow.search_traces(locations=[experiment], run_id=outcome.run_id, return_type="list")
    reflections = [t for t in traces if "procmem.revision" in t.info.tags]
    sessions = [t for t in traces if "procmem.session_id" in t.info.tags]
    assert len(sessions) == 40 and len(reflections) == 3
    ids = sorted(t.info.trace_metadata["mlflow.trace.session"] for t in reflections)
    assert ids == [f"fincoach-0-{i:05d}" for i in (9, 19, 39)]
    first = next(t for t in reflections if t.info.trace_metadata["mlflow.trace.session"] == ids[0])
    [span] = first.data.spans
    assert (span.name, span.attributes["key"]) == ("revision", FD)
    assert span.outputs["step"] == "Make the reply match the pattern \\A[^\\n]*emergency fund"
    analyze(f"runs:/{outcome.run_id}", tmp_path / "out", track_run=False, design=False,
            prescribe=False)  # fmt: skip
    replay = pd.read_csv(tmp_path / "out" / "gate_replay.csv", keep_default_na=False)
    assert list(replay["logged_verdict"]) == ["accepted", "pending", "pending"]
    assert list(replay["sprt_verdict"]) == list(replay["logged_verdict"])


def test_failed_runs_of_judged_tasks_are_revised_with_the_rubric_as_their_check(tmp_path):
    # the FinCoach tasks scored by a judge rubric instead of checks (the offline judge)
    rubric = 'The reply mentions the "emergency fund" and the "worst case".'
    lines = [
        json.dumps({"id": t["id"], "situation": t["situation"], "user_turns": t["user_turns"],
                    "judge": rubric}, ensure_ascii=False)
        for t in map(json.loads, FINCOACH.read_text(encoding="utf-8").splitlines())
    ]  # fmt: skip
    tasks = tmp_path / "judged.jsonl"
    tasks.write_text("\n".join(lines) + "\n", encoding="utf-8")
    over = ["live.memory=graph", "live.sessions=60", "live.revise_every=20",
            "live.revision_step=checker", f"live.tasks={tasks}"]  # fmt: skip
    _, procs, metrics = run(tmp_path, "judged", offline(tmp_path, "judged", *over))
    assert metrics["revisions_proposed"] >= 1
    revised = [p for p in procs if p["revision"] > 1]
    assert revised and all(p["steps"][-1] == LESSON + f"judge: {rubric}" for p in revised)


def test_a_run_on_a_revision_the_gate_decided_while_its_round_ran_is_left_out(
    tmp_path, foreign_tasks
):
    """A round's sessions are packed when it starts and applied in order when it ends, so
    an evolve applied for one session can revert the revision a later session of the same
    round was served. Recording that session's run raised the store's 'revision=2 is not
    allowed: expected None, 1 (current)' and ended the run (seed 4 here: the evolve applied
    for session 37 reverted revision 2, which session 38 had been served; a resume replays
    the same crash). The run is now left out of the ledger (the graph it followed was
    rejected; the session stays in the log) and counted."""
    with ForeignServer(hurt=LESSON) as server:  # the checker's lesson as a step hurts
        over = foreign_overrides(
            server, foreign_tasks, tmp_path / "out" / "j.jsonl", sessions=60, extract_every=5,
            explore_rate=0.2, concurrency=3, memory="graph", revise_every=10,
            revision_step="checker",
        )  # fmt: skip
        sessions, _, metrics = run(tmp_path, "out", [*over, "seed=4"])
    logs = artifacts(tmp_path, "out")
    assert len(sessions) == 60 and metrics["revisions_reverted"] >= 1
    followed = int((sessions["shown_keys"] != "[]").sum())
    assert metrics["n_runs_unrecorded"] >= 1
    assert len(logs["runs"]) + metrics["n_runs_unrecorded"] == followed
    replay = pd.DataFrame(gate_replay(read_log(str(tmp_path / "out" / "artifacts")),
                                      {"sdk": SPRTGate(min_runs=SDK_GATE_MIN_RUNS)}))  # fmt: skip
    decided = replay[replay["logged_verdict"] != "pending"]
    assert len(decided) >= 1 and (decided["sdk_verdict"] == decided["logged_verdict"]).all()


def test_a_run_on_the_prior_served_before_a_proposal_has_the_priors_path(tmp_path):
    """A revision proposed for one session of a round leaves the later sessions of that
    round on the prior they were served (its concurrent runs). Their runs were recorded
    with path [] where docs/live.md says every node of the graph followed, in reading
    order (seed 0: revision 3 proposed at session 41, sessions 42 and 44 followed
    revision 2's three steps; runs.csv had '[]')."""
    over = offline(
        tmp_path, "prior", "live.memory=graph", "live.sessions=45", "live.revise_every=7",
        "live.explore_rate=0.2", "live.concurrency=2",
    )  # fmt: skip
    run(tmp_path, "prior", over)
    logs = artifacts(tmp_path, "prior")
    runs = logs["runs"].astype({"revision": int, "time": int})
    revisions = logs["revisions"]
    revisions = revisions[revisions["prior_revision"] != ""]
    concurrent = 0
    for _, rev in revisions.astype({"prior_revision": int, "proposed_at": int}).iterrows():
        prior = runs[(runs["key"] == rev["key"]) & (runs["revision"] == rev["prior_revision"])]
        before = prior[prior["time"] <= rev["proposed_at"]]["path"]
        for path in prior[prior["time"] > rev["proposed_at"]]["path"]:
            concurrent += 1
            assert path == before.iloc[-1] and json.loads(path)  # the prior's whole graph
    assert concurrent >= 2
