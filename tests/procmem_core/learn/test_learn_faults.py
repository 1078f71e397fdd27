"""Every fault of the offline server, met by the real openai client and its real retries."""

from __future__ import annotations

import time

import pytest

from procmem_core.learn import LLMCallError, LLMConfig, chat, learn, make_client
from procmem_core.learn.extraction import ExtractionError
from simulators.llm_server import Fault, OfflineServer

SESSION = [
    {"role": "user", "content": "What's the worst case? Give me a clear list of what to do next."},
    {"role": "assistant", "content": "The worst case is a 2% loss. Next steps: 1. ... 2. ..."},
]


@pytest.fixture
def server():
    with OfflineServer() as s:
        yield s


def run(server: OfflineServer, *faults: Fault | str, **overrides):
    config = LLMConfig(base_url=server.base_url, model="procmem-offline", **overrides)
    server.inject(*faults)
    return learn(SESSION, make_client(config), config)


def test_truncated_reply_is_retried_once_with_more_room(server):
    result = run(server, "truncate")
    assert [r.max_tokens for r in server.requests] == [2000, 4000]
    assert [(c.attempt, c.finish_reason) for c in result.calls] == [(1, "length"), (2, "stop")]
    assert result.procedures  # the second reply was whole
    assert result.total_tokens == sum(c.total_tokens for c in result.calls)


def test_budget_too_small_for_reasoning_is_retried_with_double_room(server):
    # 48 low-effort reasoning tokens leave 12 visible ones: the JSON is cut off
    result = run(server, reasoning_effort="low", max_tokens=60, retry_room=8.0)
    assert [r.max_tokens for r in server.requests] == [60, 480]
    assert result.calls[0].finish_reason == "length" and result.procedures


def test_truncated_twice_raises_keeping_both_raw_replies(server):
    with pytest.raises(ExtractionError, match="truncated") as err:
        run(server, "truncate", "truncate")
    exc = err.value
    assert exc.reason == "truncated"
    assert len(exc.attempts) == 2 and exc.raw == exc.attempts[-1]
    assert exc.raw.startswith('{"procedures"') and len(exc.calls) == 2
    assert len(server.requests) == 2


@pytest.mark.parametrize("second", [None, "invalid_json"])
def test_invalid_json_is_retried_once_then_raises(server, second):
    faults = ["invalid_json"] + ([second] if second else [])
    if second is None:
        result = run(server, *faults)
        assert len(result.calls) == 2 and result.procedures
        return
    with pytest.raises(ExtractionError) as err:
        run(server, *faults)
    assert err.value.reason == "invalid_json"
    assert err.value.raw.startswith("Sure!")
    assert len(server.requests) == 2


def test_groq_style_400_for_cut_off_json_is_retried_with_more_room(server):
    result = run(server, "json_validate_failed")
    assert [(r.status, r.max_tokens) for r in server.requests] == [(400, 2000), (200, 4000)]
    assert result.procedures and len(result.calls) == 1
    with pytest.raises(ExtractionError, match="json_validate_failed") as err:
        run(server, "json_validate_failed", "json_validate_failed")
    assert err.value.raw.startswith('{"procedures"')  # Groq's failed_generation is kept


def test_bad_request_is_not_retried(server):
    with pytest.raises(LLMCallError, match="not retried") as err:
        run(server, "bad_request")
    assert (err.value.status, err.value.code) == (400, "invalid_request")
    assert len(server.requests) == 1


def test_rate_limit_honours_retry_after_then_succeeds(server):
    start = time.perf_counter()
    result = run(server, Fault("rate_limit", 0.3))
    assert time.perf_counter() - start >= 0.3  # the client waited as told
    assert [r.status for r in server.requests] == [429, 200]
    assert result.procedures
    assert result.calls[0].latency_s >= 0.3  # the wait is part of the call's latency


def test_rate_limit_that_persists_raises_after_the_client_retries(server):
    with pytest.raises(LLMCallError, match="after 1 client retries") as err:
        run(server, *[Fault("rate_limit", 0.05)] * 2, max_retries=1)
    assert err.value.kind == "rate_limit" and err.value.status == 429
    assert len(server.requests) == 2
    assert server.base_url in str(err.value)


def test_server_error_is_retried_with_backoff(server):
    result = run(server, "server_error")
    assert [r.status for r in server.requests] == [500, 200]
    assert result.procedures
    with pytest.raises(LLMCallError) as err:
        run(server, "server_error", "server_error", max_retries=1)
    assert err.value.kind == "server_error" and err.value.status == 500


def test_slow_reply_inside_the_timeout_is_just_slow(server):
    result = run(server, Fault("slow", 0.3), timeout=5.0)
    assert result.calls[0].latency_s >= 0.3 and len(server.requests) == 1


def test_slow_reply_past_the_timeout_is_retried_then_raises(server):
    # The slow reply waits on the server's stop event (cut short when the server stops),
    # far past the client's 1 s timeout; the retry's normal reply has that whole second,
    # hundreds of times what it needs even on a loaded machine.
    result = run(server, Fault("slow", 600.0), timeout=1.0, max_retries=1)
    assert len(server.requests) == 2 and result.procedures  # the retry was answered
    with pytest.raises(LLMCallError, match="timeout") as err:
        run(server, Fault("slow", 600.0), Fault("slow", 600.0), timeout=1.0, max_retries=1)
    assert err.value.kind == "timeout" and err.value.status is None


def test_a_failing_chat_call_reports_the_calls_already_made(server):
    config = LLMConfig(base_url=server.base_url, model="procmem-offline", max_retries=0)
    client = make_client(config)
    server.inject("truncate", "server_error")
    with pytest.raises(LLMCallError) as err:
        learn(SESSION, client, config)
    assert [c.finish_reason for c in err.value.calls] == ["length"]
    server.inject("truncate")
    cut = chat("You are FinCoach.", SESSION[:1], client, config)
    assert cut.call.finish_reason == "length"  # a chat reply is returned as it came


def test_a_reply_without_choices_is_a_clear_error(server):
    with pytest.raises(LLMCallError, match="returned no choices") as err:
        run(server, "no_choices")
    assert err.value.kind == "empty_reply"
