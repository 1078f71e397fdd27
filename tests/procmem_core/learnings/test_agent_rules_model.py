"""Issue 25 item 7: the bot's rules about itself are read by a model through learn's client
(a real loopback server: the offline model), with the regex as the offline fallback."""

from __future__ import annotations

import json

import pytest

from procmem_core.learn import LLMConfig, make_client
from procmem_core.learn.extraction import ExtractionError
from procmem_core.learnings import LearningsQueue, LearningsSettings, file_session, self_rules
from procmem_core.learnings.agent_rules import (
    AGENT_RULES_PROMPT,
    model_self_rules,
    rules_request,
    validate_rules,
)
from procmem_core.learnings.extraction import AGENT_RULES_MARKER
from procmem_core.memory import MemoryStore, Principal
from simulators.llm_server import Fault, OfflineServer

APP = Principal("support-app", "writer")
VIEWER = Principal("dashboard", "viewer")
TALK = [
    {"role": "user", "content": "Keep it short please"},
    {"role": "assistant", "content": "Sure. I always answer in three bullet points."},
    {"role": "user", "content": "And the fees?"},
    {"role": "assistant", "content": "Fees are 1%. I never hide a fee."},
]


@pytest.fixture
def server():
    with OfflineServer() as s:
        yield s


def _client(server):
    config = LLMConfig(base_url=server.base_url, model="procmem-offline")
    return make_client(config), config


def _queue():
    return LearningsQueue(MemoryStore(), LearningsSettings(agent_learnings=True))


def test_the_model_reads_the_rules_and_the_offline_model_agrees_with_the_regex(server):
    client, config = _client(server)
    rules, calls = model_self_rules(TALK, client, config)
    assert [(r.rule, r.quotes) for r in rules] == [(s.rule, s.quotes) for s in self_rules(TALK)]
    assert [r.rule for r in rules] == [
        "I always answer in three bullet points.",
        "I never hide a fee.",
    ]
    assert rules[1].quotes == ("Keep it short please", "And the fees?")
    assert [c.purpose for c in calls] == ["agent_rules"]
    assert [r.kind for r in server.requests] == ["agent_rules"]
    assert AGENT_RULES_MARKER in AGENT_RULES_PROMPT


def test_file_session_goes_through_the_client_when_one_is_given(server):
    client, config = _client(server)
    said = {"agent_rules": [{"rule": "I always cite the fund factsheet", "turn": 3}]}
    server.inject(Fault("reply", content=json.dumps(said), only="agent_rules"))
    q = _queue()
    filed = file_session(q, TALK, principal=APP, agent="triage", user_id="u1", session_id="s1",
                         client=client, config=config)  # fmt: skip
    assert [c.text for c in filed] == ["I always cite the fund factsheet"]  # the model's, not
    assert not any("factsheet" in s.rule for s in self_rules(TALK))  # the regex's reading
    (c,) = q.list(principal=VIEWER, source_kind="assistant_turn")
    rows = q.supporter_rows(c.candidate_id, principal=VIEWER)
    assert rows[0].quotes == ("Keep it short please", "And the fees?")
    offline = file_session(_queue(), TALK, principal=APP, agent="triage", user_id="u1",
                           session_id="s1")  # fmt: skip
    assert [c.text for c in offline] == [s.rule for s in self_rules(TALK)]  # the fallback


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ('{"rules": []}', "shape"),
        ('{"agent_rules": [{"rule": "I always x", "turn": 0}]}', "invalid_entry"),  # a user turn
        ('{"agent_rules": [{"rule": "", "turn": 1}]}', "invalid_entry"),
        ('{"agent_rules": [{"rule": "I always x", "turn": 9}]}', "invalid_entry"),
    ],
)
def test_a_bad_reply_is_refused_naming_the_entry(reply, reason):
    with pytest.raises(ExtractionError) as err:
        validate_rules(reply, TALK)
    assert err.value.reason == reason


def test_a_reply_that_is_not_json_is_retried_once(server):
    client, config = _client(server)
    server.inject(Fault("invalid_json", only="agent_rules"))
    rules, calls = model_self_rules(TALK, client, config)
    assert len(calls) == 2 and len(rules) == 2


def test_the_request_numbers_every_message():
    (system, user) = rules_request(TALK)
    assert system["content"] == AGENT_RULES_PROMPT
    assert "[1] ASSISTANT: Sure. I always answer" in user["content"]
    assert "[2] USER: And the fees?" in user["content"]


def test_a_user_message_over_the_quote_cap_is_quoted_clipped_not_refused():
    """A user who pasted an invoice (5,270 characters, over MAX_NOTE = 4,000) made
    file_session raise ParameterError on quotes, so the session's bot rule was never
    filed; the regex and the model reading now quote the message clipped to MAX_NOTE."""
    from procmem_core.limits import MAX_NOTE

    pasted = "Here is my invoice: " + "line item 42.00 EUR; " * 250
    talk = [
        {"role": "user", "content": pasted},
        {"role": "user", "content": "please refund it"},
        {"role": "assistant", "content": "Sure. I always confirm the amount first."},
    ]
    clipped = pasted[: MAX_NOTE - 1] + "…"
    (stated,) = self_rules(talk)
    assert stated.quotes == (clipped, "please refund it")
    reply = json.dumps({"agent_rules": [{"rule": "I always confirm the amount first.", "turn": 2}]})
    assert [r.quotes for r in validate_rules(reply, talk)] == [stated.quotes]
    q = _queue()
    (filed,) = file_session(q, talk, principal=APP, agent="triage", user_id="u1", session_id="s1")
    assert filed.rationale == (clipped, "please refund it") and len(clipped) == MAX_NOTE
    assert filed.text == "I always confirm the amount first."
