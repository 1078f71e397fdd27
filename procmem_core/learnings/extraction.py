"""Extraction's one kind of candidate: the rules a bot states about its own behaviour.

Seed: "With assistant-turn learnings on (..., off by default), a rule a bot states about
its own behaviour in a conversation becomes an assistant_turn candidate for that agent,
never a memory. The candidate row holds the rule and no user's words. Each session that
states the rule adds a row to loom.learnings_supporters with that user's own quotes."

``self_rules`` is a deterministic stand-in for the model's reading of a session: an
assistant clause (at the start of a line or after ``. ! ? : ;``) that starts with "I
always", "I never", "I will always", "I will never" or "I make sure to" is a rule about
itself; the user's quotes are that user's
messages before it in the session. ``file_session`` files every such rule through
``LearningsQueue.file_agent_rule`` (which does nothing while the setting is off) and
writes nothing else: no memory record comes from a bot's rule.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from procmem_core.errors import ParameterError
from procmem_core.learnings.queue import LearningsQueue
from procmem_core.learnings.records import Learning
from procmem_core.memory import Principal

_RULE = re.compile(
    r"(?:^|(?<=[.!?:;]\s))"  # the start of a line or of a clause
    r"(I (?:always|never|will always|will never|make sure to)\b[^.!?\n]*[.!?]?)",
    re.IGNORECASE | re.MULTILINE,
)


@dataclass(frozen=True, kw_only=True)
class AgentRuleStatement:
    """A rule the assistant stated about itself, and the user's own words before it."""

    rule: str
    quotes: tuple[str, ...]


def self_rules(messages: Sequence[dict]) -> list[AgentRuleStatement]:
    """Every rule the assistant states about itself in ``messages`` (see the module)."""
    found: list[AgentRuleStatement] = []
    said: list[str] = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "role" not in m:
            raise ParameterError(f"messages[{i}]", m, "expected {'role': ..., 'content': ...}")
        text = str(m.get("content") or "")
        if m["role"] == "user" and text.strip():
            said.append(text.strip())
        elif m["role"] == "assistant" and said:
            for hit in _RULE.finditer(text):
                found.append(AgentRuleStatement(rule=hit.group(1).strip(), quotes=tuple(said)))
    return found


def file_session(
    queue: LearningsQueue,
    messages: Sequence[dict],
    *,
    principal: Principal,
    agent: str | None,
    user_id: str | None,
    session_id: str,
    namespace: str = "default",
) -> list[Learning]:
    """File the session's bot rules as ``assistant_turn`` candidates (none while the
    setting is off, or when the call acts as no agent); returns the candidates filed."""
    filed = []
    for statement in self_rules(messages):
        got = queue.file_agent_rule(
            statement.rule,
            principal=principal,
            agent=agent,
            user_id=user_id,
            session_id=session_id,
            quotes=statement.quotes,
            namespace=namespace,
        )
        if got is not None:
            filed.append(got)
    return filed
