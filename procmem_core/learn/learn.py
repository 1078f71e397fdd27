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
- ``learn.candidates.to_candidates``: extracted procedures into a ``ProcedureStore`` as
  candidates. The client, the requests and their failures: ``learn.client``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from openai import OpenAI

from procmem_core.flat import Procedure
from procmem_core.learn.client import LLMCallError, complete, transcript_text
from procmem_core.learn.config import CallRecord, LLMConfig
from procmem_core.learn.extraction import (
    DroppedEntry,
    ExtractedProcedure,
    ExtractionError,
    InvalidJSONReply,
    validate_reply,
)
from procmem_core.learn.prompts import (
    EXTRACTION_PROMPT,
    EXTRACTION_REQUEST,
    PROCEDURE_PROMPT,
    PROMPTS,
)
from procmem_core.learn.reply_cache import ReplyCache

__all__ = ["EXTRACTION_PROMPT", "PROCEDURE_PROMPT", "PROMPTS", "LearnResult", "learn"]


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
    prompt: str | None = None,
) -> LearnResult:
    """Extract procedures from a finished session's ``messages`` (see the module docstring).

    ``prompt``: the system prompt text; None takes ``PROMPTS[config.prompt]``. Returns
    flat ``Procedure``s with the confidence the model stated (``metadata`` records the
    source and the model), the dropped entries, and the call records.
    """
    prompt = PROMPTS[config.prompt] if prompt is None else prompt
    request = [
        {"role": "system", "content": prompt},
        {"role": "user", "content": EXTRACTION_REQUEST + transcript_text(messages)},
    ]
    calls: list[CallRecord] = []
    attempts: list[str] = []
    budget = config.max_tokens
    for attempt in (1, 2):
        outcome = _attempt(client, config, request, cache, attempt, budget, calls, attempts)
        if isinstance(outcome, LearnResult):
            return outcome
        reason, why = outcome
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
    cache: ReplyCache | None,
    attempt: int,
    budget: int,
    calls: list[CallRecord],
    attempts: list[str],
) -> LearnResult | tuple[str, str]:
    """One extraction call with ``budget`` max tokens: its result, or ``(reason, why)`` when
    the reply was cut off or not JSON (worth a retry with more room). Appends the call to
    ``calls`` and the raw reply to ``attempts``; any other failure raises with both."""
    try:
        done = complete(
            client,
            config,
            request,
            purpose="extraction",
            max_tokens=budget,
            temperature=config.temperature,
            reasoning_effort=config.reasoning_effort,
            json_response=config.json_response,
            cache=cache,
            attempt=attempt,
        )
    except LLMCallError as exc:
        if not _is_cut_off(exc):
            exc.calls = list(calls)
            raise
        attempts.append(exc.raw if exc.raw is not None else str(exc))
        return "truncated", f"HTTP 400 json_validate_failed at max_tokens={budget}"
    calls.append(done.call)
    attempts.append(done.content)
    if done.call.finish_reason == "length":
        return "truncated", f"reply cut off at max_tokens={budget}"
    try:
        checked = validate_reply(done.content, config.policy, config.max_procedures)
    except InvalidJSONReply as exc:
        return "invalid_json", str(exc)
    except ExtractionError as exc:
        exc.calls, exc.attempts = list(calls), list(attempts)
        raise
    return LearnResult(
        procedures=[_procedure(p, config) for p in checked.procedures],
        dropped=checked.dropped,
        calls=calls,
        raw=done.content,
        extracted=checked.procedures,
    )


def _procedure(p: ExtractedProcedure, config: LLMConfig) -> Procedure:
    return Procedure(
        title=p.title,
        trigger=p.trigger,
        description=p.description,
        confidence=p.confidence,
        metadata={"source": "learn", "model": config.model},
    )
