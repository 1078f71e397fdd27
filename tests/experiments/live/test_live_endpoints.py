"""The live loop against endpoints that answer oddly (foreign servers on 127.0.0.1): a
judge in a Markdown fence or without a verdict, extractions and reflections past the
graph's limits, a models route that is not an OpenAI one; and settings the graph store
refuses, checked before any call."""

from __future__ import annotations

import json
import socket

import pytest
from foreign_server import GOOD, NEUTRAL, PASS_REPLY, ForeignServer, foreign_overrides
from test_live_loop import run

from experiments.live.loop import LiveStopped
from experiments.live.reflect import REVISE_PROMPT
from experiments.live.session import JUDGE_PROMPT
from experiments.run import compose_job
from experiments.tasks.live import run_task, settings_from_config
from procmem_core.errors import ParameterError


class FencedJudge(ForeignServer):
    """The foreign server, answering the judge in a Markdown fence as models without JSON
    mode do: pass when the reply states the worst case."""

    def answer(self, body: dict) -> tuple[int, dict, dict]:
        status, payload, headers = super().answer(body)
        if status == 200 and body["messages"][0]["content"] == JUDGE_PROMPT:
            verdict = {"pass": PASS_REPLY in body["messages"][1]["content"], "reason": "read"}
            payload["choices"][0]["message"]["content"] = f"```json\n{json.dumps(verdict)}\n```"
        return status, payload, headers


def test_a_judge_answering_in_a_markdown_fence_scores_the_sessions(tmp_path):
    tasks = tmp_path / "judged.jsonl"
    rubric = "The reply quantifies the worst case."
    lines = [
        {"id": f"t{i}", "situation": "s", "user_turns": [f"I have {i} lakh. What could go wrong?"],
         "judge": rubric}
        for i in range(10)
    ]  # fmt: skip
    tasks.write_text("\n".join(json.dumps(t) for t in lines) + "\n", encoding="utf-8")
    with FencedJudge() as server:
        over = foreign_overrides(server, tasks, tmp_path / "j.jsonl", sessions=20)
        sessions, _, metrics = run(tmp_path, "fenced", over)
    assert len(sessions) == 20
    journal = (tmp_path / "j.jsonl").read_text(encoding="utf-8").splitlines()
    replies = [json.loads(line)["messages"][-1]["content"] for line in journal]
    assert list(sessions["outcome"]) == [int(r == PASS_REPLY) for r in replies]
    assert 0 < metrics["success_rate"] < 1


class LongExtraction(ForeignServer):
    """The foreign server, its extraction adding a procedure whose description is one
    2,800-character sentence (no ASCII full stop): a step the graph store refuses."""

    def answer(self, body: dict) -> tuple[int, dict, dict]:
        status, payload, headers = super().answer(body)
        if status == 200 and (body.get("response_format") or {}).get("type") == "json_object":
            long = {"title": "长描述", "trigger": "用户询问风险", "confidence": 0.8,
                    "description": "先说明最坏情况并给出具体数字" * 200}  # fmt: skip
            extracted = json.loads(payload["choices"][0]["message"]["content"])
            extracted["procedures"].append(long)
            payload["choices"][0]["message"]["content"] = json.dumps(extracted)
        return status, payload, headers


def test_a_learned_procedure_the_graph_store_refuses_is_left_out_not_fatal(tmp_path, foreign_tasks):
    with LongExtraction() as server:
        over = foreign_overrides(
            server, foreign_tasks, tmp_path / "j.jsonl", sessions=20, memory="graph"
        )
        sessions, procedures, metrics = run(tmp_path, "long", over)
    assert len(sessions) == 20 and list(sessions["time"]) == list(range(20))
    assert len((tmp_path / "j.jsonl").read_text(encoding="utf-8").splitlines()) == 20
    # the two storable procedures learned at the first extraction; the long one refused
    # there and at each of the three later extractions (its key is never held)
    assert sorted(p["title"] for p in procedures) == sorted([GOOD, NEUTRAL])
    assert metrics["n_learned_refused"] == 4


class LongReflection(ForeignServer):
    """The foreign server, its revision reflection a 2,500-character step (past the
    graph's 2,000 characters a step); ``reflections`` counts the reflection requests."""

    reflections = 0

    def answer(self, body: dict) -> tuple[int, dict, dict]:
        status, payload, headers = super().answer(body)
        if status == 200 and body["messages"][0]["content"] == REVISE_PROMPT:
            step = "Always state the worst case " + "with numbers " * 200
            content = json.dumps({"revision": {"step": step}})
            payload["choices"][0]["message"]["content"] = content
            self.reflections += 1
        return status, payload, headers


def test_a_reflected_step_the_graph_cannot_hold_proposes_nothing_and_the_run_goes_on(
    tmp_path, foreign_tasks
):
    with LongReflection() as server:
        over = foreign_overrides(
            server, foreign_tasks, tmp_path / "j.jsonl", sessions=30, memory="graph",
            revise_every=10, explore_rate=0.3,
        )  # fmt: skip
        sessions, procedures, metrics = run(tmp_path, "reflect", over)
        asked = server.reflections
    assert asked >= 1  # a revision was due and the model was asked
    assert len(sessions) == 30 and metrics["revisions_proposed"] == 0
    assert all(p["revision"] == 1 for p in procedures)


class ModelsAnswer(ForeignServer):
    """The foreign server, its ``GET /v1/models`` answering ``status`` with ``body``."""

    def __init__(self, status: int, body: str) -> None:
        self.status, self.body = status, body
        super().__init__()

    def _handler(self) -> type:
        server, base = self, super()._handler()

        class Handler(base):
            def do_GET(self) -> None:
                data = server.body.encode()
                self.send_response(server.status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


ERROR = json.dumps({"error": {"message": "no"}})


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (
            403,
            ERROR,
            r"llm\.api_key_env=None is not allowed: a key the endpoint accepts \(HTTP 403",
        ),
        (500, ERROR, r"llm\.base_url='http://127.*' is not allowed: .*answered HTTP 500"),
        (200, "<html>a web page</html>", r"llm\.base_url=.* answered no model list"),
        (200, json.dumps({"object": "list"}), r"llm\.base_url=.* answered no model list"),
    ],
)
def test_a_models_route_that_is_not_an_openai_one_is_refused_naming_the_key(
    tmp_path, foreign_tasks, status, body, message
):
    with ModelsAnswer(status, body) as server:
        cfg = compose_job("live", foreign_overrides(server, foreign_tasks, tmp_path / "j.jsonl"))
        with pytest.raises(ParameterError, match=message):
            run_task(cfg, tmp_path / "out")


def test_a_busy_models_route_is_let_through(tmp_path, foreign_tasks):
    with ModelsAnswer(429, ERROR) as server:
        over = foreign_overrides(server, foreign_tasks, tmp_path / "j.jsonl", sessions=5)
        sessions, _, _ = run(tmp_path, "busy", over)
    assert len(sessions) == 5


@pytest.mark.parametrize("key", ["live.cache", "llm.cache"])
def test_a_cache_that_is_not_a_sqlite_file_is_refused_naming_its_key(tmp_path, key):
    for path, why in ((tmp_path / "notes.txt", "is not a SQLite database"), (tmp_path, "open")):
        if path.suffix:
            path.write_text("not a database", encoding="utf-8")
        cfg = compose_job("live", ["live.sessions=2", f"{key}={path}"])
        with pytest.raises(ParameterError, match=rf"^{key}='.* is not allowed: .*{why}") as err:
            run_task(cfg, tmp_path / "out")
        assert str(err.value).endswith(f": {path})")  # in full: a long value is cut at 80


def test_a_namespace_the_graph_store_refuses_is_refused_before_any_call():
    over = ["live.memory=graph", "live.namespace='my team'"]
    with pytest.raises(ParameterError, match=r"^live\.namespace='my team' is not allowed"):
        settings_from_config(compose_job("live", over))
    flat = settings_from_config(compose_job("live", ["live.namespace='my team'"]))
    assert flat.namespace == "my team"  # the flat memory only writes it in the log


def test_an_agent_name_the_graph_store_refuses_is_refused_naming_live_agent():
    over = ["live.memory=graph", f"live.agent={'a' * 300}"]
    with pytest.raises(ParameterError, match=r"^live\.agent='a+\.\.\. \(300 characters\)"):
        settings_from_config(compose_job("live", over))


def test_an_agent_name_too_long_for_its_session_ids_is_refused_before_any_call():
    """The graph store takes session ids of at most 256 characters; an agent of 256
    passed the name check, then its first session id (agent-seed-index, 264 characters)
    was refused after the first round's calls, naming session_id."""
    over = ["live.memory=graph", f"live.agent={'a' * 256}"]
    with pytest.raises(ParameterError, match=r"^live\.agent='a+\.\.\. \(256 characters\)"):
        settings_from_config(compose_job("live", over))
    fits = "a" * (256 - len("-0-00059"))  # the longest id of 60 sessions at seed 0
    assert settings_from_config(compose_job("live", [*over[:1], f"live.agent={fits}"]))


class NoVerdict(ForeignServer):
    """The foreign server, its judge answering JSON without a verdict."""

    def answer(self, body: dict) -> tuple[int, dict, dict]:
        status, payload, headers = super().answer(body)
        if status == 200 and body["messages"][0]["content"] == JUDGE_PROMPT:
            payload["choices"][0]["message"]["content"] = '{"verdict": "fine"}'
        return status, payload, headers


def test_a_judge_answer_without_a_verdict_stops_the_run_naming_the_judge(tmp_path):
    tasks = tmp_path / "judged.jsonl"
    line = {"id": "t", "situation": "s", "user_turns": ["What could go wrong?"], "judge": "Any."}
    tasks.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with NoVerdict() as server:
        cfg = compose_job("live", foreign_overrides(server, tasks, tmp_path / "j.jsonl"))
        with pytest.raises(LiveStopped, match=r"\(JudgeError\): the judge \(model 'foreign' at "):
            run_task(cfg, tmp_path / "out")


class PartialUsage(ForeignServer):
    """The foreign server, its ``usage`` holding null counts, or only ``total_tokens``
    (as some OpenAI-compatible proxies send)."""

    def __init__(self, usage: dict) -> None:
        self.partial = usage
        super().__init__()

    def answer(self, body: dict) -> tuple[int, dict, dict]:
        status, payload, headers = super().answer(body)
        if status == 200:
            payload["usage"] = dict(self.partial)
        return status, payload, headers


@pytest.mark.parametrize(
    ("usage", "tokens"),
    [
        ({"prompt_tokens": None, "completion_tokens": None, "total_tokens": None}, 0),
        ({"total_tokens": 10}, 10),
        ({"prompt_tokens": 7, "completion_tokens": None, "total_tokens": 10}, 10),
        ({"prompt_tokens": 7}, 7),
    ],
)
def test_a_usage_with_null_or_missing_counts_is_read_not_fatal(
    tmp_path, foreign_tasks, usage, tokens
):
    """A count that is null or absent is 0, and a completion count that is missing is
    ``total_tokens`` less the prompt's: the run used to stop at its first call with
    ``TypeError: unsupported operand type(s) for +: 'NoneType' and 'NoneType'``."""
    with PartialUsage(usage) as server:
        over = foreign_overrides(server, foreign_tasks, tmp_path / "j.jsonl", sessions=5)
        sessions, _, metrics = run(tmp_path, "usage", over)
    assert len(sessions) == 5 and metrics["n_calls"] == 6  # 5 turns and one extraction
    assert metrics["tokens_total"] == 6 * tokens


def judged_tasks(path, n: int = 4):
    rubric = "The reply quantifies the worst case."
    lines = [
        {"id": f"t{i}", "situation": "s", "user_turns": [f"I have {i} lakh. What could go wrong?"],
         "judge": rubric}
        for i in range(n)
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(t) for t in lines) + "\n", encoding="utf-8")
    return path


def test_a_judge_on_its_own_endpoint_is_asked_beside_the_offline_agent(tmp_path):
    """``live.judge.base_url`` names the judge's endpoint whatever the agent's: beside the
    offline agent it was replaced by the offline server's URL, so the offline judge
    scored every session and the configured one was never asked."""
    tasks = judged_tasks(tmp_path / "judged.jsonl")
    with FencedJudge() as server:
        over = [
            "live.sessions=6", f"live.tasks={tasks}", f"live.journal={tmp_path / 'j.jsonl'}",
            f"+live.judge.base_url={server.base_url}", "+live.judge.model=foreign",
        ]  # fmt: skip
        sessions, _, _ = run(tmp_path, "judge", over)
        posts = server.posts
    assert len(sessions) == 6 and posts == 6  # one verdict a session, nothing else


@pytest.mark.parametrize(
    ("role", "override", "message"),
    [
        ("extractor", "api_key_env=PROCMEM_TEST_NO_KEY", r"^live\.extractor\.api_key_env="),
        ("judge", "api_key_env=PROCMEM_TEST_NO_KEY", r"^live\.judge\.api_key_env="),
        ("judge", "base_url=CLOSED", r"^live\.judge\.base_url='http://127\.0\.0\.1:"),
        ("agent", "api_key_env=PROCMEM_TEST_NO_KEY", r"^llm\.api_key_env="),
    ],
)
def test_an_endpoint_refused_at_the_start_is_named_by_the_key_that_set_it(
    tmp_path, foreign_tasks, monkeypatch, role, override, message
):
    """The extractor's or judge's missing key or unreachable URL is refused naming
    ``live.extractor.*`` or ``live.judge.*``; it was named ``api_key_env`` (no group)
    or ``llm.base_url``, the agent's, which answered."""
    monkeypatch.delenv("PROCMEM_TEST_NO_KEY", raising=False)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    override = override.replace("CLOSED", closed)
    with ForeignServer() as server:
        over = foreign_overrides(server, foreign_tasks, tmp_path / "j.jsonl", sessions=2)
        over.append(f"llm.{override}" if role == "agent" else f"+live.{role}.{override}")
        with pytest.raises(ParameterError, match=message):
            run_task(compose_job("live", over), tmp_path / "out")
