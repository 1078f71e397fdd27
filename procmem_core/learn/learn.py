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
from procmem_core.learn.client import complete_checked, transcript_text
from procmem_core.learn.config import CallRecord, LLMConfig
from procmem_core.learn.extraction import (
    DroppedEntry,
    ExtractedProcedure,
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
    done, checked, calls = complete_checked(
        client,
        config,
        request,
        purpose="extraction",
        check=lambda text: validate_reply(text, config.policy, config.max_procedures),
        cache=cache,
    )
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
