"""Learning procedures from a finished session through any OpenAI-compatible model.

The notebook seed's ``learn`` step: a model reads the transcript of a session and writes
down at most three procedures (rules or workflows for how the agent behaves, never facts
about the user) as ``{"procedures": [{title, trigger, description, confidence}]}``.

- ``LLMConfig``: endpoint, model, the *name* of the environment variable holding the API
  key, temperature, max tokens (reasoning models count their reasoning inside it: the
  default 2000 leaves room, as the seed does for gpt-oss), JSON response format, optional
  reasoning effort, time-out, client retries, validation policy. Checked on construction.
- ``learn``: one extraction call; a reply cut off (``finish_reason="length"``, or HTTP 400
  ``json_validate_failed`` as Groq sends) or not JSON is retried once with
  ``retry_room`` times the max tokens, then raises ``ExtractionError`` keeping the raw
  replies. Entries are validated under the policy of ``procmem_core.extraction``.
- Rate limits (429, honouring Retry-After), server errors (5xx), time-outs and lost
  connections are retried with backoff by the ``openai`` client itself
  (``max_retries``); when it gives up, ``LLMCallError`` says what failed, where, and how
  many retries were spent. Other HTTP errors (400, 401, ...) raise at once.
- Every call's tokens and latency come back in ``CallRecord``s, cached or not.
- ``procmem_core.candidates.to_candidates``: extracted procedures into a
  ``ProcedureStore`` as candidates.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import openai
from openai import OpenAI

from procmem_core.errors import ParameterError
from procmem_core.extraction import (
    DroppedEntry,
    ExtractedProcedure,
    ExtractionError,
    InvalidJSONReply,
    LearnError,
    validate_reply,
)
from procmem_core.flat import Procedure
from procmem_core.llm_config import CallRecord, LLMConfig
from procmem_core.reply_cache import CachedReply, ReplyCache

__all__ = [
    "EXTRACTION_PROMPT",
    "CallRecord",
    "ChatReply",
    "ExtractionError",
    "LLMCallError",
    "LLMConfig",
    "LearnError",
    "LearnResult",
    "chat",
    "learn",
    "make_client",
    "transcript_text",
]

EXTRACTION_PROMPT = """You keep the procedural memory of FinCoach, an assistant agent.
Read the transcript of a finished session and write down the procedures the agent should
carry into its future sessions.
A procedure is a rule or a workflow for HOW THE AGENT behaves, written as a directive to
the agent ("Always ...", "When X, do Y"). A fact about the user (income, savings, risk
appetite, plans) is never a procedure.
Reply with exactly one JSON object and nothing else:
{"procedures": [{"title": "a short label",
                 "trigger": "the situation in which the procedure applies",
                 "description": "the directive, addressed to the agent",
                 "confidence": 0.6}]}
Confidence: 0.60 for behaviour seen once, 0.70 for behaviour clearly shown, 0.85 for
behaviour the user explicitly asked for.
List at most 3 procedures. If nothing is worth keeping, reply {"procedures": []}."""
"""The extraction prompt: the seed's substance in the project's own words."""

EXTRACTION_REQUEST = "Extract reusable procedures from this session:\n\n"
RETRIED_STATUSES = (408, 409, 429)
"""HTTP statuses the openai client retries (with 5xx, time-outs and lost connections)."""


def make_client(config: LLMConfig) -> OpenAI:
    """An ``openai.OpenAI`` client for ``config``; the key is read from ``api_key_env``."""
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
class Completion:
    content: str
    call: CallRecord


def complete(
    client: OpenAI,
    config: LLMConfig,
    messages: list[dict],
    *,
    purpose: str,
    max_tokens: int,
    json_response: bool = False,
    cache: ReplyCache | None = None,
    attempt: int = 1,
) -> Completion:
    """One chat-completions request (through ``cache`` when given)."""
    request: dict[str, Any] = {
        "model": config.model,
        "messages": messages,
        "temperature": config.temperature,
        "max_tokens": max_tokens,
    }
    if json_response:
        request["response_format"] = {"type": "json_object"}
    if config.reasoning_effort is not None:
        request["reasoning_effort"] = config.reasoning_effort
    start = time.perf_counter()
    hit = cache.get(request) if cache is not None else None
    if hit is None:
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
        hit = CachedReply(
            content=choice.message.content or "",
            finish_reason=choice.finish_reason,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            reasoning_tokens=(getattr(details, "reasoning_tokens", None) or 0),
            response_id=response.id,
            model=response.model,
        )
        if cache is not None:
            cache.put(request, hit)
        cached = False
    else:
        cached = True
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
    return Completion(hit.content, call)


def transcript_text(messages: Sequence[dict]) -> str:
    """The seed's transcript format: one ``ROLE: content`` line per message."""
    return "\n".join(f"{m['role'].upper()}: {m['content']}" for m in messages)


@dataclass
class ChatReply:
    """A chat reply's text and its call record."""

    content: str
    call: CallRecord


def chat(
    system_prompt: str,
    messages: Sequence[dict],
    client: OpenAI,
    config: LLMConfig,
    cache: ReplyCache | None = None,
) -> ChatReply:
    """One agent turn: ``system_prompt`` then ``messages`` (the seed's ``chat``)."""
    full = [{"role": "system", "content": system_prompt}, *messages]
    done = complete(
        client, config, full, purpose="chat", max_tokens=config.chat_max_tokens, cache=cache
    )
    return ChatReply(done.content, done.call)


@dataclass
class LearnResult:
    """What ``learn`` found, what it dropped, and what the calls cost."""

    procedures: list[Procedure]
    dropped: list[DroppedEntry]
    calls: list[CallRecord]
    raw: str
    extracted: list[ExtractedProcedure] = field(default_factory=list)

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def completion_tokens(self) -> int:
        return sum(c.completion_tokens for c in self.calls)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def latency_s(self) -> float:
        return sum(c.latency_s for c in self.calls)


def _is_cut_off(exc: LLMCallError) -> bool:
    return exc.status == 400 and exc.code == "json_validate_failed"


def learn(
    messages: Sequence[dict],
    client: OpenAI,
    config: LLMConfig,
    cache: ReplyCache | None = None,
    prompt: str = EXTRACTION_PROMPT,
) -> LearnResult:
    """Extract procedures from a finished session's ``messages`` (see the module docstring).

    Returns flat ``Procedure``s with the confidence the model stated (``metadata`` records
    the source and the model), the dropped entries, and the call records.
    """
    request = [
        {"role": "system", "content": prompt},
        {"role": "user", "content": EXTRACTION_REQUEST + transcript_text(messages)},
    ]
    calls: list[CallRecord] = []
    attempts: list[str] = []
    budget = config.max_tokens
    for attempt in (1, 2):
        try:
            done = complete(
                client,
                config,
                request,
                purpose="extraction",
                max_tokens=budget,
                json_response=config.json_response,
                cache=cache,
                attempt=attempt,
            )
        except LLMCallError as exc:
            if not _is_cut_off(exc):
                exc.calls = list(calls)
                raise
            attempts.append(exc.raw if exc.raw is not None else str(exc))
            reason, why = "truncated", f"HTTP 400 json_validate_failed at max_tokens={budget}"
        else:
            calls.append(done.call)
            attempts.append(done.content)
            if done.call.finish_reason == "length":
                reason, why = "truncated", f"reply cut off at max_tokens={budget}"
            else:
                try:
                    checked = validate_reply(done.content, config.policy, config.max_procedures)
                except InvalidJSONReply as exc:
                    reason, why = "invalid_json", str(exc)
                except ExtractionError as exc:
                    exc.calls, exc.attempts = list(calls), list(attempts)
                    raise
                else:
                    return LearnResult(
                        procedures=[_procedure(p, config) for p in checked.procedures],
                        dropped=checked.dropped,
                        calls=calls,
                        raw=done.content,
                        extracted=checked.procedures,
                    )
        budget = int(budget * config.retry_room)
    raise ExtractionError(
        reason,
        f"{why}; gave up after one retry with more room",
        attempts[-1],
        attempts=attempts,
        calls=calls,
    )


def _procedure(p: ExtractedProcedure, config: LLMConfig) -> Procedure:
    return Procedure(
        p.title,
        p.trigger,
        p.description,
        confidence=p.confidence,
        metadata={"source": "learn", "model": config.model},
    )
