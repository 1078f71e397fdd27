"""The live loop in-process: order and concurrency, resume from a journal, 429 bursts,
budget and endpoint refusals (the offline model and the foreign server on 127.0.0.1)."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pandas as pd
import pytest
from foreign_server import ForeignServer, foreign_overrides
from mlflow.tracking import MlflowClient

from experiments.job import JobContext, run_job
from experiments.live.journal import SESSION_COLUMNS
from experiments.live.loop import LiveStopped
from experiments.live.session import JUDGE_PROMPT
from experiments.run import compose_job
from experiments.tasks.live import run_task, settings_from_config
from procmem_core.errors import ParameterError


def run(tmp_path: Path, name: str, overrides: list[str]) -> tuple[pd.DataFrame, list, dict]:
    """Run the task; its sessions.csv, procedures.json and metrics."""
    out = tmp_path / name
    cfg = compose_job("live", overrides)
    result = run_task(cfg, out)
    art = out / "artifacts"
    sessions = pd.read_csv(art / "sessions.csv", keep_default_na=False)
    procedures = json.loads((art / "procedures.json").read_text(encoding="utf-8"))
    return sessions, procedures, result.metrics


def offline(tmp_path: Path, name: str, *extra: str) -> list[str]:
    return [
        "live.sessions=20", "live.extract_every=5", "live.explore_rate=0.3",
        f"live.journal={tmp_path / name / 'journal.jsonl'}", *extra,
    ]  # fmt: skip


def test_results_do_not_depend_on_concurrency_and_follow_the_seed_rule(tmp_path):
    one, procs_one, m_one = run(tmp_path, "c1", offline(tmp_path, "c1", "live.concurrency=1"))
    four, procs_four, _ = run(tmp_path, "c4", offline(tmp_path, "c4", "live.concurrency=4"))
    pd.testing.assert_frame_equal(one, four)
    assert procs_one == procs_four
    assert list(one.columns) == list(SESSION_COLUMNS)
    assert one["session_id"].is_unique and list(one["time"]) == list(range(20))
    assert (one["explore_rate"] == 0.3).all()
    # round 1 (sessions 0-4) runs on the base prompt; learned procedures show in round 2
    # (later the seed's rule may drop every one below 0.55: then nothing is shown)
    assert (one["top_key"].iloc[:5] == "").all() and (one["top_key"].iloc[5:10] != "").all()
    empty = one["top_key"] == ""
    assert (one.loc[empty, "shown_keys"].map(json.loads).map(len) == 0).all()
    assert len(procs_one) >= 3 and m_one["n_procedures"] == len(procs_one)
    # every shown procedure got exactly one outcome per session that showed it
    shown = [k for keys in one["shown_keys"] for k in json.loads(keys)]
    for p in procs_one:
        assert p["successes"] + p["failures"] == shown.count(p["key"])
    # a withheld top key is never among the keys shown
    for _, row in one[one["withheld"]].iterrows():
        assert row["top_key"] not in json.loads(row["shown_keys"])
    assert m_one["success_rate"] == one["outcome"].mean()
    # the arms: sessions with a top procedure, shown or withheld (round 1 had none)
    arms = one[one["top_key"] != ""]
    assert m_one["success_rate_shown"] == arms.loc[~arms["withheld"], "outcome"].mean()
    assert m_one["success_rate_withheld"] == arms.loc[arms["withheld"], "outcome"].mean()


def test_a_resume_skips_the_journaled_rounds_and_ends_where_a_full_run_ends(tmp_path):
    full, procs, _ = run(tmp_path, "full", offline(tmp_path, "full"))
    journal = (tmp_path / "full" / "journal.jsonl").read_text(encoding="utf-8").splitlines()
    cut = tmp_path / "cut" / "journal.jsonl"
    cut.parent.mkdir()
    # two whole rounds, two sessions of the third, and a line torn by a kill
    cut.write_text("\n".join(journal[:12]) + "\n" + journal[12][:40], encoding="utf-8")
    resumed, procs_resumed, metrics = run(
        tmp_path, "cut", [*offline(tmp_path, "cut"), "resume=true"]
    )
    assert metrics["n_resumed"] == 10
    pd.testing.assert_frame_equal(full, resumed)
    assert procs == procs_resumed


@pytest.mark.parametrize(
    "change",
    [
        "live.seed=1", "live.explore_rate=0.5", "live.extract_every=4", "live.agent=other",
        "live.memory=graph",  # the flat run's records read as graph runs: an IndexError
        # the same sessions planned, another rule or model: resumed silently before the
        # journal's records carried the config's resume identity
        "rule.threshold=0.6", "rule=baseline",
    ],
)  # fmt: skip
def test_a_resume_refuses_a_journal_another_config_wrote(tmp_path, change):
    # the journal of seed 0, cut after two rounds: resuming it with another seed (or
    # explore rate, round size, agent, memory) must not mix that run's sessions into this log
    run(tmp_path, "first", offline(tmp_path, "same"))
    journal = tmp_path / "same" / "journal.jsonl"
    lines = journal.read_text(encoding="utf-8").splitlines()
    journal.write_text("\n".join(lines[:10]) + "\n", encoding="utf-8")
    cfg = compose_job("live", [*offline(tmp_path, "same"), change, "resume=true"])
    with pytest.raises(ParameterError, match=r"live\.journal=.*session \d+ has"):
        run_task(cfg, tmp_path / "second")


def test_a_raised_budget_and_another_concurrency_resume_the_same_journal(tmp_path):
    """A resume may change what to spend and how many sessions run at once (and where the
    journal lies): those keys are left out of the resume identity, so the default journal
    path stays the same and the records are accepted; the run ends as a full run does."""
    from experiments.live.journal import journal_path, resume_identity

    full, procs, _ = run(tmp_path, "full", offline(tmp_path, "full"))
    lines = (tmp_path / "full" / "journal.jsonl").read_text(encoding="utf-8").splitlines()
    cut = tmp_path / "cut" / "journal.jsonl"
    cut.parent.mkdir()
    cut.write_text("\n".join(lines[:10]) + "\n", encoding="utf-8")
    more = ["live.budget.tokens=10000000", "live.concurrency=3"]
    resumed, procs_resumed, metrics = run(
        tmp_path, "cut", [*offline(tmp_path, "cut"), *more, "resume=true"]
    )
    assert metrics["n_resumed"] == 10
    pd.testing.assert_frame_equal(full, resumed)
    assert procs == procs_resumed
    base = ["live.sessions=20", "live.extract_every=5"]
    a, b = compose_job("live", base), compose_job("live", [*base, *more, "live.journal=x"])
    settings = settings_from_config(a)
    assert resume_identity(a) == resume_identity(b)
    assert journal_path(a, settings) == journal_path(b, settings_from_config(a))
    other = compose_job("live", [*base, "rule.threshold=0.6"])
    assert resume_identity(other) != resume_identity(a)
    assert journal_path(other, settings_from_config(other)) != journal_path(a, settings)
    assert {json.loads(x)["config"] for x in lines} == {resume_identity(compose_job(
        "live", offline(tmp_path, "full")))}  # fmt: skip


def test_a_burst_of_429s_is_retried_as_told_and_loses_nothing(tmp_path, foreign_tasks):
    def once(name: str, burst: int) -> tuple[pd.DataFrame, int]:
        with ForeignServer(burst=burst) as server:
            over = foreign_overrides(
                server, foreign_tasks, tmp_path / name / "j.jsonl", sessions=30, extract_every=5
            )
            sessions, _, _ = run(tmp_path, name, [*over, "llm.max_retries=8"])
            return sessions, server.rate_limited

    calm, _ = once("calm", 0)
    stormy, limited = once("stormy", 8)
    assert limited == 8
    pd.testing.assert_frame_equal(calm, stormy)
    assert len(stormy) == 30


def test_a_budget_spent_while_running_stops_and_keeps_the_sessions_done(tmp_path, foreign_tasks):
    with ForeignServer(padding=2000) as server:  # every reply bills 2000 extra tokens
        over = foreign_overrides(server, foreign_tasks, tmp_path / "j.jsonl", sessions=40)
        over += ["live.extract_every=5", "live.concurrency=2"]
        estimate = settings_from_config(compose_job("live", over)).estimate
        cfg = compose_job("live", [*over, f"live.budget.tokens={estimate}"])
        with pytest.raises(LiveStopped, match="budget"):
            run_task(cfg, tmp_path / "out")
    sessions = pd.read_csv(tmp_path / "out" / "artifacts" / "sessions.csv")
    assert 0 < len(sessions) < 40
    assert list(sessions["time"]) == list(range(len(sessions)))


def test_an_endpoint_that_reports_no_usage_is_still_stopped_by_the_budget(tmp_path, foreign_tasks):
    """Replies without ``usage`` bill 0 tokens as reported: each call is charged its
    ``max_tokens`` instead (``session.billed``), so a budget of a few calls stops the run
    (it ran all 40 sessions before)."""
    with ForeignServer(usage=False) as server:
        over = foreign_overrides(server, foreign_tasks, tmp_path / "j.jsonl", sessions=40)
        max_tokens = int(compose_job("live", over).llm.max_tokens)
        budget = f"live.budget.tokens={10 * max_tokens}"
        cfg = compose_job("live", [*over, budget, "live.budget.reply_tokens=1"])
        with pytest.raises(LiveStopped, match="budget"):
            run_task(cfg, tmp_path / "out")
        posts = server.posts
    sessions = pd.read_csv(tmp_path / "out" / "artifacts" / "sessions.csv")
    assert 0 < len(sessions) < 40 and posts < 40


def test_a_resume_keeps_charging_what_an_endpoint_without_usage_was_billed(tmp_path, foreign_tasks):
    """A resume restores the budget spent by the sessions it restores as the run charged
    them (``session.billed``: ``max_tokens`` for a call without ``usage``), not the
    reported 0: the resumed run stops where the first one did. It restored 0 spent and
    ran a whole new budget (19 sessions, then 34 after the resume)."""
    with ForeignServer(usage=False) as server:
        over = foreign_overrides(server, foreign_tasks, tmp_path / "j.jsonl", sessions=40)
        max_tokens = int(compose_job("live", over).llm.max_tokens)
        over += [f"live.budget.tokens={10 * max_tokens}", "live.budget.reply_tokens=1"]
        with pytest.raises(LiveStopped, match="budget"):
            run_task(compose_job("live", over), tmp_path / "first")
        first = pd.read_csv(tmp_path / "first" / "artifacts" / "sessions.csv")
        posts = server.posts
        with pytest.raises(LiveStopped, match="budget"):
            run_task(compose_job("live", [*over, "resume=true"]), tmp_path / "again")
        posts = server.posts - posts
    again = pd.read_csv(tmp_path / "again" / "artifacts" / "sessions.csv")
    assert len(again) <= len(first) < 40
    assert posts <= 5  # the rest of the budget: a few calls of the round run again


def test_an_estimate_past_the_budget_is_refused_before_any_call():
    cfg = compose_job("live", ["live.sessions=500", "live.budget.tokens=1000"])
    with pytest.raises(ParameterError, match=r"live\.budget\.tokens=1000 .* estimated"):
        settings_from_config(cfg)


def _refused(url: str, out: Path) -> None:
    cfg = compose_job("live", ["llm.endpoint=remote", f"llm.base_url={url}", "llm.model=m"])
    with pytest.raises(ParameterError, match=f"llm.base_url='{url}'"):
        run_task(cfg, out)


def test_an_unreachable_endpoint_or_a_missing_key_is_refused_at_once(tmp_path, monkeypatch):
    """Refused after one attempt, not the client's retries (``preflight``: no retry, a
    short timeout): a server that hangs up on every connection is reached once."""
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _refused(f"http://127.0.0.1:{port}/v1", tmp_path / "a")
    accepted: list[int] = []
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()

        def hang_up() -> None:
            while True:
                try:
                    conn, _ = srv.accept()
                except OSError:  # shut down: the test is over
                    return
                accepted.append(1)
                conn.close()

        t = threading.Thread(target=hang_up, daemon=True)
        t.start()
        _refused(f"http://127.0.0.1:{srv.getsockname()[1]}/v1", tmp_path / "c")
        srv.shutdown(socket.SHUT_RDWR)
        t.join()
    assert accepted == [1]
    monkeypatch.delenv("PROCMEM_TEST_NO_KEY", raising=False)
    cfg = compose_job("live", ["llm.api_key_env=PROCMEM_TEST_NO_KEY"])
    with pytest.raises(ParameterError, match="PROCMEM_TEST_NO_KEY"):
        run_task(cfg, tmp_path / "b")


def test_the_graph_memory_packs_records_runs_and_resumes_through_the_agent(tmp_path):
    graph = ["live.memory=graph"]
    one, procs, _ = run(tmp_path, "g1", offline(tmp_path, "g1", "live.concurrency=1", *graph))
    four, procs_four, _ = run(tmp_path, "g4", offline(tmp_path, "g4", "live.concurrency=4", *graph))
    pd.testing.assert_frame_equal(one, four)
    assert procs == procs_four
    runs = pd.read_csv(tmp_path / "g1" / "artifacts" / "runs.csv")
    # one run per session that showed a procedure, for the first one shown
    shown = one[one["shown_keys"] != "[]"]
    assert list(runs["session_id"]) == list(shown["session_id"])
    assert list(runs["key"]) == [json.loads(k)[0] for k in shown["shown_keys"]]
    assert list(runs["ok"]) == [bool(o) for o in shown["outcome"]]
    stored = {p["key"]: p for p in procs}
    for key, group in runs.groupby("key"):
        assert stored[key]["runs"] == len(group)
        assert stored[key]["successes"] == int(group["ok"].sum())
    # learned procedures enter as candidates and leave that status with their first run
    assert all((p["status"] == "candidate") == (p["runs"] == 0) for p in procs)
    journal = (tmp_path / "g1" / "journal.jsonl").read_text(encoding="utf-8").splitlines()
    cut = tmp_path / "gcut" / "journal.jsonl"
    cut.parent.mkdir()
    cut.write_text("\n".join(journal[:13]) + "\n", encoding="utf-8")
    over = [*offline(tmp_path, "gcut", *graph), "resume=true"]
    resumed, procs_resumed, metrics = run(tmp_path, "gcut", over)
    assert metrics["n_resumed"] == 10
    pd.testing.assert_frame_equal(one, resumed)
    assert procs == procs_resumed


def test_a_rerun_with_the_cache_replays_without_calls(tmp_path):
    cache = f"live.cache={tmp_path / 'replies.sqlite'}"
    first, _, m1 = run(tmp_path, "first", offline(tmp_path, "first", cache))
    again, _, m2 = run(tmp_path, "again", offline(tmp_path, "again", cache))
    pd.testing.assert_frame_equal(first.drop(columns="tokens"), again.drop(columns="tokens"))
    # the first run calls the endpoint for every distinct request (two sessions that send
    # the very same request share one reply); the rerun calls it for none
    assert m1["n_cached_calls"] < m1["n_calls"] and m1["tokens_total"] > 0
    assert m2["n_cached_calls"] == m2["n_calls"] == m1["n_calls"]
    assert m2["tokens_total"] == 0 and (again["tokens"] == 0).all()


def test_a_budget_that_is_not_a_mapping_is_refused_naming_it():
    cfg = compose_job("live", ["live.budget=5"])
    with pytest.raises(ParameterError, match=r"live\.budget=5 is not allowed: a mapping"):
        settings_from_config(cfg)
    cfg = compose_job("live", ["live.budget=null"])  # no limit
    assert settings_from_config(cfg).loop.budget_tokens is None


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "+live.sesions=10",
            r"live\.sesions=10 is not allowed: unknown key; allowed: .*'sessions'",
        ),
        ("+live.budget.token=5", r"live\.budget\.token=5 is not allowed: unknown key; .*'tokens'"),
    ],
)
def test_a_misspelt_live_key_is_refused_naming_it(override, message):
    with pytest.raises(ParameterError, match=message):
        settings_from_config(compose_job("live", [override]))


def test_the_estimate_counts_the_judge_call_of_a_judged_task(tmp_path):
    # the same task scored by a check and by a judge: the judged one bills one more call a
    # session, JUDGE_PROMPT + rubric + the last reply (150) in and 40 tokens out, each text
    # estimated at 4/3 token a word plus 4
    rubric = 'The reply quantifies the "worst case" with a number.'
    base = {"id": "a", "situation": "s", "user_turns": ["What could go wrong?"]}
    estimates = {}
    for name, score in (("check", {"check": {"max_words": 120}}), ("judge", {"judge": rubric})):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(json.dumps({**base, **score}) + "\n", encoding="utf-8")
        over = ["live.sessions=30", f"live.tasks={path}"]
        estimates[name] = settings_from_config(compose_job("live", over)).estimate

    def words(text: str) -> int:
        return round(len(text.split()) * 4 / 3) + 4

    judge_call = words(JUDGE_PROMPT) + words(rubric) + 150 + 40
    assert estimates["judge"] - estimates["check"] == 30 * judge_call


def test_a_resumed_run_logs_the_steps_of_every_session_it_reports(tmp_path, tracking_store):
    over = offline(tmp_path, "steps")
    run(tmp_path, "steps", over)  # the journal of a run that stopped after two rounds
    journal = tmp_path / "steps" / "journal.jsonl"
    lines = journal.read_text(encoding="utf-8").splitlines()
    journal.write_text("\n".join(lines[:10]) + "\n", encoding="utf-8")
    outcome = run_job(compose_job("live", [*over, "resume=true"]), JobContext(tmp_path / "job"))
    assert outcome.metrics["n_resumed"] == 10 and outcome.metrics["n_sessions"] == 20
    client = MlflowClient(f"sqlite:///{tracking_store}")
    sessions = pd.read_csv(tmp_path / "job" / "artifacts" / "sessions.csv")
    history = sorted(
        (m.step, m.value) for m in client.get_metric_history(outcome.run_id, "success")
    )
    assert history == list(zip(range(20), sessions["outcome"].astype(float), strict=True))
