"""What a model call is configured with (``LLMConfig``) and what it cost (``CallRecord``).

Plain data with validation, no client: ``learn.py`` is the one module that talks to the
``openai`` client. The fields mirror ``conf/llm/*.yaml``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from procmem_core.errors import ParameterError, check_int, is_number
from procmem_core.learn.extraction import VALIDATION_POLICIES
from procmem_core.learn.prompts import PROMPTS

REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class LLMConfig:
    """How to reach the model and how to use its replies (``conf/llm/*.yaml``).

    ``temperature``, ``max_tokens``, ``json_response``, ``reasoning_effort`` and ``prompt``
    (a name in ``learn.PROMPTS``: ``procmem`` or the seed's ``seed``) are the extraction
    call's; ``chat_temperature``, ``chat_max_tokens`` and ``chat_reasoning_effort`` the
    agent turns', by default the seed's ``chat`` exactly (0, 800, none sent).
    """

    base_url: str
    model: str
    api_key_env: str | None = None  # None: the endpoint needs no key (the offline server)
    temperature: float = 0.0
    max_tokens: int = 2000
    chat_max_tokens: int = 800
    chat_temperature: float = 0.0
    chat_reasoning_effort: str | None = None
    json_response: bool = True
    reasoning_effort: str | None = None
    prompt: str = "procmem"
    timeout: float = 60.0
    max_retries: int = 2
    retry_room: float = 2.0
    max_procedures: int = 3
    policy: str = "drop"

    def __post_init__(self) -> None:
        if not isinstance(self.base_url, str) or not re.match(r"^https?://\S+$", self.base_url):
            raise ParameterError("base_url", self.base_url, "expected an http(s):// URL")
        if not isinstance(self.model, str) or not self.model.strip():
            raise ParameterError("model", self.model, "expected a non-empty model name")
        if self.api_key_env is not None and not (
            isinstance(self.api_key_env, str) and _ENV_NAME.match(self.api_key_env)
        ):
            raise ParameterError(
                "api_key_env", self.api_key_env, "expected an environment variable name or None"
            )
        for name in ("temperature", "chat_temperature"):
            value = getattr(self, name)
            if not is_number(value) or not 0.0 <= value <= 2.0:
                raise ParameterError(name, value, "expected a number in [0, 2]")
        check_int("max_tokens", self.max_tokens, minimum=1)
        check_int("chat_max_tokens", self.chat_max_tokens, minimum=1)
        if not isinstance(self.json_response, bool):
            raise ParameterError("json_response", self.json_response, "expected true or false")
        for name in ("reasoning_effort", "chat_reasoning_effort"):
            value = getattr(self, name)
            if value is not None and value not in REASONING_EFFORTS:
                raise ParameterError(
                    name, value, f"expected None or one of {list(REASONING_EFFORTS)}"
                )
        if self.prompt not in PROMPTS:
            raise ParameterError("prompt", self.prompt, f"expected one of {list(PROMPTS)}")
        if not is_number(self.timeout) or not self.timeout > 0:
            raise ParameterError("timeout", self.timeout, "expected seconds > 0")
        check_int("max_retries", self.max_retries, minimum=0, maximum=10)
        if not is_number(self.retry_room) or not self.retry_room > 1:
            raise ParameterError("retry_room", self.retry_room, "expected a factor > 1")
        check_int("max_procedures", self.max_procedures, minimum=1, maximum=64)
        if self.policy not in VALIDATION_POLICIES:
            raise ParameterError("policy", self.policy, f"expected one of {VALIDATION_POLICIES}")

    @classmethod
    def from_mapping(cls, values: dict[str, Any]) -> LLMConfig:
        """Build from a plain mapping (a resolved config node); unknown keys are an error."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(values) - known)
        if unknown:
            raise ParameterError(
                unknown[0], values[unknown[0]], f"unknown key; allowed: {sorted(known)}"
            )
        return cls(**values)


@dataclass(frozen=True, kw_only=True)
class CallRecord:
    """Tokens and latency of one chat-completions call (or cache hit)."""

    purpose: str  # "chat" or "extraction"
    attempt: int
    max_tokens: int
    prompt_tokens: int
    completion_tokens: int
    reasoning_tokens: int
    latency_s: float
    finish_reason: str | None
    cached: bool
    response_id: str | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens
