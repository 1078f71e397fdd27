"""learn() through the real openai client against the offline server: success, validation, cache."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procmem_core.errors import ParameterError
from procmem_core.flat import Procedure, build_system_prompt
from procmem_core.learn import (
    EXTRACTION_PROMPT,
    LLMConfig,
    chat,
    learn,
    make_client,
    transcript_text,
)
from procmem_core.learn.extraction import ExtractionError, validate_reply
from procmem_core.learn.reply_cache import ReplyCache, request_key
from simulators.llm_server import Fault, OfflineServer

SESSION = [
    {"role": "user", "content": "I'm risk-averse. What's the worst case for a debt fund?"},
    {"role": "assistant", "content": "In a bad year a short-term debt fund can lose 1-2%."},
    {"role": "user", "content": "OK, give me a clear list of what I should do next."},
    {"role": "assistant", "content": "1. Keep an emergency fund. 2. Use a liquid fund."},
]


@pytest.fixture
def server():
    with OfflineServer() as s:
        yield s


def config_for(server: OfflineServer, **overrides) -> LLMConfig:
    return LLMConfig(base_url=server.base_url, model="procmem-offline", **overrides)


def test_learn_end_to_end_returns_procedures_with_tokens_and_latency(server):
    config = config_for(server, reasoning_effort="low")
    result = learn(SESSION, make_client(config), config)
    titles = [p.title for p in result.procedures]
    # both asked for by the user (0.85); a rule the assistant only showed comes after (0.70)
    assert set(titles[:2]) == {"End with a numbered action list", "Quantify the worst case"}
    assert len(titles) == 3
    assert all(isinstance(p, Procedure) for p in result.procedures)
    assert [p.confidence for p in result.procedures] == [0.85, 0.85, 0.70]
    assert all(p.metadata["source"] == "learn" for p in result.procedures)
    assert result.dropped == []
    (call,) = result.calls
    (seen,) = server.requests
    # the request the official client sent, as the server received it
    assert seen.kind == "extraction"
    assert seen.body["response_format"] == {"type": "json_object"}
    assert seen.body["reasoning_effort"] == "low"
    assert seen.body["max_tokens"] == 2000 and seen.body["temperature"] == 0.0
    assert seen.body["messages"][0]["content"] == EXTRACTION_PROMPT
    assert seen.body["messages"][1]["content"].endswith(transcript_text(SESSION))
    assert call.reasoning_tokens == 48 and call.completion_tokens > 48
    assert call.total_tokens == result.total_tokens > 0
    assert call.latency_s > 0 and not call.cached and call.finish_reason == "stop"
    assert json.loads(result.raw)["procedures"][0]["title"] == titles[0]


def test_learned_procedures_change_the_next_session(server):
    config = config_for(server)
    client = make_client(config)
    result = learn(SESSION, client, config)
    before = chat(build_system_prompt([]), SESSION[:1], client, config).content
    after = chat(build_system_prompt(result.procedures), SESSION[:1], client, config).content
    assert "Following" not in before
    for proc in result.procedures:
        assert f"Following '{proc.title}'" in after


def test_nothing_worth_keeping_gives_an_empty_list(server):
    config = config_for(server)
    result = learn([{"role": "user", "content": "hello"}], make_client(config), config)
    assert result.procedures == [] and result.dropped == []


def entry(title="Quantify the worst case", confidence=0.7, **changes):
    e = {"title": title, "trigger": "When asked", "description": "Always do it.", **changes}
    if confidence is not None:
        e["confidence"] = confidence
    return e


def reply(*entries) -> str:
    return json.dumps({"procedures": list(entries)})


FOUR = reply(*(entry(f"Rule {i}") for i in range(4)))

# (reply text, policy, expected kept titles or ExtractionError reason, dropped reason fragment)
MALFORMED = [
    (FOUR, "drop", ["Rule 0", "Rule 1", "Rule 2"], "over the limit of 3"),
    (FOUR, "reject", "too_many", None),
    (reply(entry(confidence=1.5), entry("B")), "drop", ["B"], "confidence"),
    (reply(entry(confidence=-0.1)), "reject", "invalid_entry", None),
    (reply(entry(confidence=None)), "drop", [], "confidence: Field required"),
    (reply(entry(confidence=float("nan"))), "drop", [], "confidence"),
    (reply(entry(confidence="high")), "drop", [], "confidence"),
    (reply(entry(confidence="0.7")), "drop", ["Quantify the worst case"], None),
    (reply(entry(title="   ")), "drop", [], "title"),
    (reply(entry(title="")), "reject", "invalid_entry", None),
    (reply(entry(title=123)), "drop", [], "title"),
    (reply({"title": "T", "trigger": "x", "confidence": 0.6}), "drop", [], "description"),
    (reply("just a string"), "drop", [], "invalid entry"),
    (reply(entry("A"), entry("a")), "drop", ["A"], "duplicate title"),
    (reply(entry("A"), entry("a")), "reject", "duplicate_title", None),
    (reply(entry(extra="ignored")), "reject", ["Quantify the worst case"], None),
    (
        reply(entry(confidence=0.0), entry("B", confidence=1)),
        "reject",
        ["Quantify the worst case", "B"],
        None,
    ),
    (reply(), "reject", [], None),
    ("```json\n" + reply(entry()) + "\n```", "reject", ["Quantify the worst case"], None),
    ("```\n" + reply(entry()) + "\n```  ", "reject", ["Quantify the worst case"], None),
    ('[{"title": "T"}]', "drop", "shape", None),
    ('{"procedures": {"title": "T"}}', "drop", "shape", None),
    ('{"rules": []}', "reject", "shape", None),
]


@pytest.mark.parametrize(("text", "policy", "expected", "dropped"), MALFORMED)
def test_malformed_replies_through_the_server(server, text, policy, expected, dropped):
    config = config_for(server, policy=policy)
    server.inject(Fault("reply", content=text))
    if isinstance(expected, str):
        with pytest.raises(ExtractionError) as err:
            learn(SESSION, make_client(config), config)
        assert err.value.reason == expected
        assert err.value.raw == text
        assert len(server.requests) == 1  # a well-formed JSON reply is never retried
        assert len(err.value.calls) == 1
        return
    result = learn(SESSION, make_client(config), config)
    assert [p.title for p in result.procedures] == expected
    if dropped is None:
        assert result.dropped == []
    else:
        assert len(result.dropped) >= 1
        assert all(dropped in d.reason for d in result.dropped)


def test_confidence_scale_edges_are_kept_exactly():
    got = validate_reply(reply(entry(confidence=0), entry("B", confidence=1.0)), "reject")
    assert [p.confidence for p in got.procedures] == [0.0, 1.0]


def test_cache_answers_identical_requests_without_calling_the_model(tmp_path):
    path = tmp_path / "replies.sqlite"
    with OfflineServer() as first:
        config = config_for(first)
        with ReplyCache(path) as cache:
            fresh = learn(SESSION, make_client(config), config, cache)
            assert (cache.hits, cache.misses, len(cache)) == (0, 1, 1)
    with OfflineServer() as second:  # another port: the URL is not part of the key
        config = config_for(second)
        with ReplyCache(path) as cache:
            again = learn(SESSION, make_client(config), config, cache)
            assert (cache.hits, cache.misses) == (1, 0)
        assert second.requests == []
    assert again.raw == fresh.raw
    assert again.procedures == fresh.procedures
    (call,) = again.calls
    assert call.cached and call.response_id == fresh.calls[0].response_id
    assert call.total_tokens == fresh.calls[0].total_tokens  # what it cost the first time


def test_cache_key_changes_with_every_request_field():
    base = {"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": 10}
    variants = [
        {**base, "model": "n"},
        {**base, "max_tokens": 11},
        {**base, "temperature": 0.5},
        {**base, "messages": [{"role": "user", "content": "y"}]},
        {**base, "response_format": {"type": "json_object"}},
    ]
    keys = {request_key(v) for v in variants}
    assert len(keys) == len(variants) and request_key(base) not in keys
    assert request_key(dict(reversed(list(base.items())))) == request_key(base)


def test_api_key_is_read_from_the_named_environment_variable(server, monkeypatch):
    config = config_for(server, api_key_env="PROCMEM_TEST_KEY")
    monkeypatch.delenv("PROCMEM_TEST_KEY", raising=False)
    with pytest.raises(ParameterError, match="PROCMEM_TEST_KEY"):
        make_client(config)
    monkeypatch.setenv("PROCMEM_TEST_KEY", "sk-test")
    client = make_client(config)
    assert client.api_key == "sk-test"
    assert learn(SESSION, client, config).procedures


BAD_CONFIG = [
    ({"base_url": "api.groq.com"}, "base_url"),
    ({"model": " "}, "model"),
    ({"api_key_env": "GROQ KEY"}, "api_key_env"),
    ({"temperature": 2.5}, "temperature"),
    ({"temperature": True}, "temperature"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"max_tokens": 100.0}, "max_tokens"),
    ({"chat_max_tokens": -1}, "chat_max_tokens"),
    ({"json_response": "yes"}, "json_response"),
    ({"reasoning_effort": "extreme"}, "reasoning_effort"),
    ({"timeout": 0}, "timeout"),
    ({"max_retries": -1}, "max_retries"),
    ({"retry_room": 1.0}, "retry_room"),
    ({"max_procedures": 0}, "max_procedures"),
    ({"policy": "repair"}, "policy"),
]


@pytest.mark.parametrize(("change", "field"), BAD_CONFIG)
def test_invalid_config_is_refused_naming_the_field(change, field):
    values = {"base_url": "http://127.0.0.1:1/v1", "model": "m", **change}
    with pytest.raises(ParameterError, match=field) as err:
        LLMConfig(**values)
    assert err.value.field == field


def test_unknown_config_keys_are_refused():
    with pytest.raises(ParameterError, match="unknown key") as err:
        LLMConfig.from_mapping({"base_url": "http://x/v1", "model": "m", "max_token": 5})
    assert err.value.field == "max_token"


def test_invalid_policy_in_validate_reply():
    with pytest.raises(ParameterError, match="policy"):
        validate_reply("{}", "lenient")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)
entries = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {"title": json_values, "trigger": json_values, "description": json_values},
        optional={"confidence": json_values},
    ),
    st.builds(entry, title=st.text(max_size=8), confidence=st.floats(-1, 2)),
)


@settings(max_examples=150, deadline=None)
@given(
    body=st.one_of(json_values, st.lists(entries, max_size=6).map(lambda e: {"procedures": e})),
    policy=st.sampled_from(["drop", "reject"]),
)
def test_any_json_reply_is_either_validated_or_an_extraction_error(body, policy):
    text = json.dumps(body)
    try:
        got = validate_reply(text, policy)
    except ExtractionError as exc:
        assert exc.raw == text
        return
    n = len(body["procedures"])
    assert len(got.procedures) + len(got.dropped) == n
    assert len(got.procedures) <= 3
    for proc in got.procedures:
        assert proc.title and proc.trigger and proc.description
        assert 0.0 <= proc.confidence <= 1.0
        Procedure(proc.title, proc.trigger, proc.description, proc.confidence)


def test_a_cache_path_holding_another_programs_database_is_refused_untouched(tmp_path):
    """A reply cache never writes into a file that is not one: an SQLite database with
    another program's table (or view) is refused byte for byte as it was, naming them; a
    cache file already made, and an empty file, open as before."""
    import sqlite3

    theirs = tmp_path / "theirs.db"
    con = sqlite3.connect(theirs)
    con.execute("CREATE TABLE invoices (id INTEGER)")
    con.execute("CREATE VIEW unpaid AS SELECT id FROM invoices")
    con.commit()
    con.close()
    before = theirs.read_bytes()
    with pytest.raises(ParameterError, match=r"another program's tables \(invoices, unpaid\)"):
        ReplyCache(theirs)
    assert theirs.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["theirs.db"]
    mine = tmp_path / "cache.db"
    ReplyCache(mine).close()
    ReplyCache(mine).close()  # its own file opens again
    (tmp_path / "empty.db").touch()
    ReplyCache(tmp_path / "empty.db").close()
