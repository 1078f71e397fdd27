"""The one module that talks to the ``openai`` client: requests, replies, failures.

- ``make_client``: an ``openai.OpenAI`` for an ``LLMConfig`` (the key read from the
  environment variable it names);
- ``complete``: one chat-completions request (through a ``ReplyCache`` when given) and its
  ``Reply`` (text and ``CallRecord``); ``chat``: one agent turn (the seed's ``chat``);
- ``complete_checked``: ``complete`` with its reply read by a check, retried once with
  more room when cut off or not JSON (``learn`` and the distill worker);
- ``LLMCallError``: a call that failed for good, with what failed, where, and how many
  retries were spent. Rate limits (429, honouring Retry-After), server errors (5xx),
  time-outs and lost connections are retried with backoff by the client itself
  (``max_retries``); other HTTP errors raise at once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from procmem_core.errors import ParameterError
from procmem_core.learn.config import CallRecord, LLMConfig
from procmem_core.learn.extraction import ExtractionError, InvalidJSONReply, LearnError
from procmem_core.learn.reply_cache import CachedReply, ReplyCache

if TYPE_CHECKING:  # openai loads on the first call, so the engine imports without it
    import openai
    from openai import OpenAI

T = TypeVar("T")

RETRIED_STATUSES = (408, 409, 429)
"""HTTP statuses the openai client retries (with 5xx, time-outs and lost connections)."""


def make_client(config: LLMConfig) -> OpenAI:
    """An ``openai.OpenAI`` client for ``config``; the key is read from ``api_key_env``."""
    from openai import OpenAI

    if config.api_key_env is None:
        key = "no-key-needed"
    else:
        key = os.environ.get(config.api_key_env, "")
        if not key:
            raise ParameterError(
                "api_key_env",
                config.api_key_env,
                "the environment variable is not set or empty; export the API key in it",
            )
    return OpenAI(
        base_url=config.base_url,
        api_key=key,
        max_retries=config.max_retries,
        timeout=config.timeout,
    )


class LLMCallError(LearnError):
    """A chat-completions call failed for good (after the client's own retries, if any)."""

    def __init__(
        self,
        kind: str,
        message: str,
        status: int | None,
        code: str | None,
        raw: str | None = None,
    ) -> None:
        self.kind = kind
        self.status = status
        self.code = code
        self.raw = raw  # the cut-off generation a provider sent back with a 400, if any
        self.calls: list[CallRecord] = []  # calls that completed before this one failed
        super().__init__(message)


def _call_error(exc: openai.APIError, config: LLMConfig, purpose: str) -> LLMCallError:
    import openai

    status = getattr(exc, "status_code", None)
    code = exc.code if isinstance(exc.code, str) else None
    if isinstance(exc, openai.APITimeoutError):
        kind = "timeout"
    elif isinstance(exc, openai.APIConnectionError):
        kind = "connection"
    elif isinstance(exc, openai.RateLimitError):
        kind = "rate_limit"
    elif isinstance(exc, openai.InternalServerError):
        kind = "server_error"
    else:
        kind = code or type(exc).__name__
    retried = (
        f"after {config.max_retries} client retries with backoff"
        if isinstance(exc, openai.APIConnectionError)  # time-outs included
        or (status is not None and (status in RETRIED_STATUSES or status >= 500))
        else "not retried"
    )
    where = f"{config.base_url} (model {config.model!r})"
    body = getattr(exc, "body", None)
    failed = body.get("failed_generation") if isinstance(body, dict) else None
    return LLMCallError(
        kind,
        f"{purpose} call to {where} failed {retried}: {kind}"
        f"{f' (HTTP {status})' if status else ''}: {exc.message}",
        status,
        code,
        failed if isinstance(failed, str) else None,
    )


@dataclass(frozen=True)
class Reply:
    """A model reply's text and its call record."""

    content: str
    call: CallRecord


def complete(
    client: OpenAI,
    config: LLMConfig,
    messages: list[dict],
    *,
    purpose: str,
    max_tokens: int,
    temperature: float,
    reasoning_effort: str | None = None,
    json_response: bool = False,
    cache: ReplyCache | None = None,
    attempt: int = 1,
) -> Reply:
    """One chat-completions request (through ``cache`` when given): exactly ``model``,
    ``messages``, ``temperature``, ``max_tokens``, plus ``response_format`` and
    ``reasoning_effort`` only when asked for."""
    request: dict[str, Any] = {
        "model": config.model,
        "messages": messages,
        "temperature": temperature,
        "max_tokens": max_tokens,
    }
    if json_response:
        request["response_format"] = {"type": "json_object"}
    if reasoning_effort is not None:
        request["reasoning_effort"] = reasoning_effort
    start = time.perf_counter()
    hit = cache.get(request) if cache is not None else None
    cached = hit is not None
    if hit is None:
        hit = _send(client, config, request, purpose)
        if cache is not None:
            cache.put(request, hit)
    call = CallRecord(
        purpose=purpose,
        attempt=attempt,
        max_tokens=max_tokens,
        prompt_tokens=hit.prompt_tokens,
        completion_tokens=hit.completion_tokens,
        reasoning_tokens=hit.reasoning_tokens,
        latency_s=time.perf_counter() - start,
        finish_reason=hit.finish_reason,
        cached=cached,
        response_id=hit.response_id,
    )
    return Reply(content=hit.content, call=call)


def _send(client: OpenAI, config: LLMConfig, request: dict[str, Any], purpose: str) -> CachedReply:
    """Send ``request`` to the model; its first choice and token usage as a ``CachedReply``."""
    import openai

    try:
        response = client.chat.completions.create(**request)
    except openai.APIError as exc:
        raise _call_error(exc, config, purpose) from exc
    if not response.choices:
        raise LLMCallError(
            "empty_reply",
            f"{purpose} call to {config.base_url} (model {config.model!r}) returned no choices",
            None,
            None,
        )
    choice = response.choices[0]
    usage = response.usage
    details = getattr(usage, "completion_tokens_details", None) if usage else None
    prompt, completion = _usage_counts(usage)
    return CachedReply(
        content=choice.message.content or "",
        finish_reason=choice.finish_reason,
        prompt_tokens=prompt,
        completion_tokens=completion,
        reasoning_tokens=(getattr(details, "reasoning_tokens", None) or 0),
        response_id=response.id,
        model=response.model,
    )


def _usage_counts(usage: Any) -> tuple[int, int]:
    """The prompt and completion tokens a reply's ``usage`` reports. A count that is null
    or absent (some OpenAI-compatible servers send only ``total_tokens``, or nulls) is 0,
    and a missing completion count is ``total_tokens`` less the prompt's; no ``usage``
    at all reports (0, 0)."""
    prompt = getattr(usage, "prompt_tokens", None) or 0
    completion = getattr(usage, "completion_tokens", None)
    if completion is None:
        total = getattr(usage, "total_tokens", None) or 0
        completion = max(total - prompt, 0)
    return prompt, completion


def complete_checked(
    client: OpenAI,
    config: LLMConfig,
    request: list[dict],
    *,
    purpose: str,
    check: Callable[[str], T],
    cache: ReplyCache | None = None,
) -> tuple[Reply, T, list[CallRecord]]:
    """``complete`` at ``config.max_tokens`` with the reply read by ``check``: a reply cut
    off (``finish_reason="length"``, or HTTP 400 ``json_validate_failed`` as Groq sends) or
    not JSON (``InvalidJSONReply``) is retried once with ``retry_room`` times the max
    tokens, then raises ``ExtractionError`` keeping every raw reply. Returns the reply,
    what ``check`` made of it and the record of every call."""
    calls: list[CallRecord] = []
    attempts: list[str] = []
    budget = config.max_tokens
    for attempt in (1, 2):
        done, why = _attempt(
            client, config, request, purpose, cache, attempt, budget, calls, attempts
        )
        if done is None:
            reason = "truncated"
        else:
            try:
                return done, check(done.content), calls
            except InvalidJSONReply as exc:
                reason, why = "invalid_json", str(exc)
            except ExtractionError as exc:
                exc.calls, exc.attempts = list(calls), list(attempts)
                raise
        budget = int(budget * config.retry_room)
    raise ExtractionError(
        reason,
        f"{why}; gave up after one retry with more room",
        attempts[-1],
        attempts=attempts,
        calls=calls,
    )


def _attempt(
    client: OpenAI,
    config: LLMConfig,
    request: list[dict],
    purpose: str,
    cache: ReplyCache | None,
    attempt: int,
    budget: int,
    calls: list[CallRecord],
    attempts: list[str],
) -> tuple[Reply | None, str]:
    """One call with ``budget`` max tokens: the reply, or None and why it was cut off.
    Appends the call to ``calls`` and its raw text to ``attempts``; other failures raise
    with the calls made before them."""
    try:
        done = complete(
            client,
            config,
            request,
            purpose=purpose,
            max_tokens=budget,
            temperature=config.temperature,
            reasoning_effort=config.reasoning_effort,
            json_response=config.json_response,
            cache=cache,
            attempt=attempt,
        )
    except LLMCallError as exc:
        if not (exc.status == 400 and exc.code == "json_validate_failed"):
            exc.calls = list(calls)
            raise
        attempts.append(exc.raw if exc.raw is not None else str(exc))
        return None, f"HTTP 400 json_validate_failed at max_tokens={budget}"
    calls.append(done.call)
    attempts.append(done.content)
    if done.call.finish_reason == "length":
        return None, f"reply cut off at max_tokens={budget}"
    return done, ""


def transcript_text(messages: Sequence[dict]) -> str:
    """The seed's transcript format: one ``ROLE: content`` line per message."""
    return "\n".join(f"{m['role'].upper()}: {m['content']}" for m in messages)


def chat(
    system_prompt: str,
    messages: Sequence[dict],
    client: OpenAI,
    config: LLMConfig,
    cache: ReplyCache | None = None,
) -> Reply:
    """One agent turn: ``system_prompt`` then ``messages`` (the seed's ``chat``).

    Sends the chat options (``chat_temperature``, ``chat_max_tokens``,
    ``chat_reasoning_effort``): by default the seed's exact arguments, temperature 0,
    max_tokens 800 and no reasoning effort, whatever the extraction call uses."""
    full = [{"role": "system", "content": system_prompt}, *messages]
    return complete(
        client, config, full, purpose="chat", max_tokens=config.chat_max_tokens,
        temperature=config.chat_temperature, reasoning_effort=config.chat_reasoning_effort,
        cache=cache,
    )  # fmt: skip
