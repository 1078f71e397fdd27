"""The offline chat-completions server: real HTTP, the real schema, the real openai client."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procmem_core.errors import ParameterError
from procmem_core.flat import Procedure, build_system_prompt
from simulators import offline_model
from simulators.llm_server import FAULT_HEADER, Fault, OfflineServer, completion

REPO = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())


@pytest.fixture
def server():
    with OfflineServer() as s:
        yield s


def post(server: OfflineServer, body: dict, headers: dict | None = None):
    """POST to /v1/chat/completions; returns (status, headers, json body)."""
    req = urllib.request.Request(
        server.base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **(headers or {})},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.headers, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, err.headers, json.loads(err.read())


CHAT = {
    "model": "m",
    "max_tokens": 200,
    "messages": [
        {"role": "system", "content": "You are FinCoach."},
        {"role": "user", "content": "I have ₹50,000 in an FD."},
    ],
}


def test_response_has_the_chat_completion_schema_and_is_deterministic(server):
    status, _, body = post(server, CHAT)
    assert status == 200
    assert body["object"] == "chat.completion"
    assert body["id"].startswith("chatcmpl-")
    assert isinstance(body["created"], int)
    assert body["model"] == "m"
    choice = body["choices"][0]
    assert choice["message"]["role"] == "assistant"
    assert "₹50,000" in choice["message"]["content"]
    assert choice["finish_reason"] == "stop"
    usage = body["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage["completion_tokens"] == offline_model.count_tokens(choice["message"]["content"])
    _, _, again = post(server, CHAT)
    for key in ("id", "choices", "usage", "model"):
        assert again[key] == body[key]


def test_reply_cut_at_max_tokens_and_reasoning_counts_inside_it(server):
    status, _, body = post(server, {**CHAT, "max_tokens": 5})
    assert status == 200
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 5
    budget = offline_model.REASONING_TOKENS["low"] + 3
    _, _, low = post(server, {**CHAT, "max_tokens": budget, "reasoning_effort": "low"})
    assert low["choices"][0]["finish_reason"] == "length"
    assert low["usage"]["completion_tokens_details"]["reasoning_tokens"] == 48
    assert low["usage"]["completion_tokens"] == budget
    assert offline_model.count_tokens(low["choices"][0]["message"]["content"]) == 3


@pytest.mark.parametrize(
    ("fault", "status", "code"),
    [
        (Fault("bad_request"), 400, "invalid_request"),
        (Fault("json_validate_failed"), 400, "json_validate_failed"),
        (Fault("rate_limit", 0.25), 429, "rate_limit_exceeded"),
        (Fault("server_error"), 500, None),
    ],
)
def test_error_faults_answer_with_the_openai_error_body(server, fault, status, code):
    server.inject(fault)
    got, headers, body = post(server, CHAT)
    assert got == status
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    if fault.kind == "rate_limit":
        assert headers["Retry-After"] == "0.25"
    assert post(server, CHAT)[0] == 200  # a queued fault is used once
    assert [r.fault for r in server.requests] == [fault.kind, None]


def test_content_faults_and_header_faults(server):
    server.inject("truncate", "invalid_json", Fault("reply", content='{"procedures": 1}'))
    _, _, cut = post(server, CHAT)
    full = offline_model.reply_content(CHAT["messages"])
    assert cut["choices"][0]["finish_reason"] == "length"
    assert full.startswith(cut["choices"][0]["message"]["content"])
    assert len(cut["choices"][0]["message"]["content"]) < len(full)
    _, _, prose = post(server, CHAT)
    with pytest.raises(json.JSONDecodeError):
        json.loads(prose["choices"][0]["message"]["content"])
    _, _, given = post(server, CHAT)
    assert given["choices"][0]["message"]["content"] == '{"procedures": 1}'
    for _ in range(2):  # a header fault applies to every request carrying it
        assert post(server, CHAT, {FAULT_HEADER: "server_error"})[0] == 500
    assert server.pending_faults == 0


def test_a_fault_for_one_request_kind_waits_for_that_kind(server):
    server.inject(Fault("server_error", only="extraction"))
    assert post(server, CHAT)[0] == 200  # a chat request passes it by
    extraction = {**CHAT, "messages": [{"role": "system", "content": '{"procedures": []}'}]}
    assert post(server, extraction)[0] == 500
    assert [(r.kind, r.fault) for r in server.requests] == [
        ("chat", None),
        ("extraction", "server_error"),
    ]


def test_slow_reply_waits_and_a_stopping_server_cuts_it_short():
    with OfflineServer() as s:
        s.inject(Fault("slow", 0.3))
        start = time.perf_counter()
        assert post(s, CHAT)[0] == 200
        assert time.perf_counter() - start >= 0.3
        s.inject(Fault("slow", 30))
        client = openai.OpenAI(base_url=s.base_url, api_key="k", max_retries=0, timeout=0.2)
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(**CHAT)
    # leaving the block stopped the server although a 30 s reply was still pending


def test_bad_routes_and_bodies(server):
    assert post(server, {"model": "m"})[0] == 400
    assert post(server, {"model": "m", "messages": []})[0] == 400
    # a message that is not an object: a 400 naming the shape, not a dropped connection
    status, _, body = post(server, {"model": "m", "messages": [1, "hi"]})
    assert status == 400 and "list of objects" in body["error"]["message"]
    req = urllib.request.Request(server.base_url + "/nowhere", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=5)
    assert err.value.code == 404
    with urllib.request.urlopen(server.base_url + "/models", timeout=5) as resp:
        assert json.loads(resp.read())["data"][0]["object"] == "model"


def test_chat_reply_follows_the_procedures_in_the_system_prompt(server):
    procs = [
        Procedure("Quantify the worst case", "investment", "Always quantify the worst case."),
        Procedure("End with a list", "next steps", "Always close with a numbered list.", 0.7),
    ]
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    reply = client.chat.completions.create(
        model="m",
        messages=[
            {"role": "system", "content": build_system_prompt(procs)},
            {"role": "user", "content": "I have ₹50,000."},
        ],
    )
    text = reply.choices[0].message.content
    assert "1. Following 'End with a list'." in text
    assert "2. Following 'Quantify the worst case'." in text  # in the prompt's order
    # and does what they ask: a next-steps list, a worst case with a number
    assert "Next steps:\n1. " in text
    assert "Worst case: a short-term debt fund can lose about 2% in a bad year, " in text
    assert "about ₹1,000 on ₹50,000." in text
    assert offline_model.listed_procedures(build_system_prompt([])) == []


@pytest.mark.parametrize(
    ("transcript", "expected"),
    [
        ("USER: hello\nASSISTANT: hi", []),
        ("USER: what is the worst case?", [("Quantify the worst case", 0.85)]),
        ("USER: hi\nASSISTANT: the worst case is a 2% loss", [("Quantify the worst case", 0.7)]),
        ("USER: I'm risk-averse", [("Lead with capital-protected options", 0.6)]),
    ],
)
def test_extraction_pool_confidence_follows_who_said_it(transcript, expected):
    got = offline_model.extract_procedures(transcript)
    assert len(got) == len(expected)
    for proc, (title, confidence) in zip(got, expected, strict=True):
        assert proc["title"].startswith(title)
        assert proc["confidence"] == confidence


def test_extraction_keeps_at_most_three_and_is_keyed_by_the_transcript():
    text = (
        "USER: worst case? give me a clear list. I'm risk-averse, my FD is maturing, "
        "salary and expenses, where to invest?"
    )
    got = offline_model.extract_procedures(text)
    assert len(got) == 3
    assert [p["confidence"] for p in got] == [0.85, 0.85, 0.6]
    assert got == offline_model.extract_procedures(text)


INVALID = [
    (lambda: Fault("explode"), "kind"),
    (lambda: Fault("slow", -1.0), "seconds"),
    (lambda: Fault("reply"), "content"),
    (lambda: Fault("truncate", content="x"), "content"),
    (lambda: Fault.parse("slow:soon"), FAULT_HEADER),
    (lambda: Fault("truncate", only="embedding"), "only"),
    (lambda: OfflineServer(port=-1), "port"),
    (lambda: OfflineServer(port=70000), "port"),
    (lambda: OfflineServer(port="80"), "port"),
]


@pytest.mark.parametrize(("make", "fragment"), INVALID)
def test_invalid_server_inputs(make, fragment):
    with pytest.raises(ParameterError, match=fragment):
        make()


def test_completion_is_a_pure_function_of_the_body():
    a = completion(CHAT, CHAT["messages"])
    b = completion(CHAT, CHAT["messages"])
    assert a["id"] == b["id"] and a["choices"] == b["choices"]


def _lines(proc: subprocess.Popen) -> queue.Queue:
    """The child's stdout lines, read by a thread ("" at end of file), so every wait for a
    line is ``get(timeout=...)``: bounded, however loaded the machine."""
    lines: queue.Queue = queue.Queue()

    def pump() -> None:
        for line in proc.stdout:
            lines.put(line)
        lines.put("")

    threading.Thread(target=pump, daemon=True).start()
    return lines


def test_command_line_server_answers_the_openai_client():
    """``--port 0``: the server binds a free port itself and prints its URL (no port picked
    here and released, which another process could take in between)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "simulators.llm_server", "--port", "0", "--quiet"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = _lines(proc).get(timeout=120)
        url = re.search(r"http://127\.0\.0\.1:(\d+)/v1", line)
        assert url and int(url.group(1)) > 0, line
        client = openai.OpenAI(base_url=url.group(0), api_key="k", timeout=60)
        reply = client.chat.completions.create(**CHAT)
        assert reply.choices[0].finish_reason == "stop"
    finally:
        proc.terminate()
        proc.wait(timeout=60)


LAYER_PROBE = """
import sys
def loaded(names):
    return sorted({m.split('.')[0] for m in sys.modules} & set(names))
import simulators.llm_server
print(loaded(['hydra', 'mlflow', 'matplotlib', 'openai', 'pydantic']))
import procmem_core.learn
print(loaded(['hydra', 'mlflow', 'matplotlib', 'omegaconf']))
"""


def test_layering_of_the_llm_modules():
    """The server needs no openai/pydantic/hydra/mlflow; learn needs no hydra/mlflow."""
    out = subprocess.run(
        [sys.executable, "-c", LAYER_PROBE], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.split("\n")[:2] == ["[]", "[]"]


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=60), budget=st.integers(-2, 40))
def test_truncation_keeps_a_prefix_of_exactly_the_budget(text, budget):
    cut = offline_model.truncate_to_tokens(text, budget)
    assert text.startswith(cut)
    assert offline_model.count_tokens(cut) == min(max(budget, 0), offline_model.count_tokens(text))
