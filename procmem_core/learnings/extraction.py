"""Extraction's one kind of candidate: the rules a bot states about its own behaviour.

Seed: "With assistant-turn learnings on (..., off by default), a rule a bot states about
its own behaviour in a conversation becomes an assistant_turn candidate for that agent,
never a memory. The candidate row holds the rule and no user's words. Each session that
states the rule adds a row to loom.learnings_supporters with that user's own quotes."

The seed's reading goes through a model: ``file_session(..., client=, config=)`` asks
learn's client (``learnings.agent_rules``). Without a client (offline), ``self_rules`` is
the deterministic fallback: an assistant clause (at the start of a line or after
``. ! ? : ;``) that starts with "I always", "I never", "I will always", "I will never" or
"I make sure to" is a rule about itself; the user's quotes are that user's messages
before it in the session (``user_quotes``: each clipped to ``MAX_NOTE`` characters, the
supporter row's cap on a quote, so a pasted document does not refuse the session).
``file_session`` files every such rule through ``LearningsQueue.file_agent_rule`` (which
does nothing while the setting is off) and writes nothing else: no memory record comes
from a bot's rule.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from procmem_core.errors import ParameterError
from procmem_core.limits import MAX_NOTE

_RULE = re.compile(
    r"(?:^|(?<=[.!?:;]\s))"  # the start of a line or of a clause
    r"(I (?:always|never|will always|will never|make sure to)\b[^.!?\n]*[.!?]?)",
    re.IGNORECASE | re.MULTILINE,
)


AGENT_RULES_MARKER = '{"agent_rules":'
"""What the model call's system prompt asks for (``agent_rules.AGENT_RULES_PROMPT``)."""


@dataclass(frozen=True, kw_only=True)
class AgentRuleStatement:
    """A rule the assistant stated about itself, and the user's own words before it."""

    rule: str
    quotes: tuple[str, ...]


def check_messages(messages: Sequence[dict]) -> None:
    """Every message a ``{'role': ..., 'content': ...}`` mapping."""
    if isinstance(messages, str) or not isinstance(messages, Sequence):
        raise ParameterError("messages", messages, "expected a list of chat messages")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "role" not in m:
            raise ParameterError(f"messages[{i}]", m, "expected {'role': ..., 'content': ...}")


def rule_clauses(text: str) -> list[str]:
    """The clauses of one assistant message that state a rule about itself (the regex)."""
    return [hit.group(1).strip() for hit in _RULE.finditer(text)]


def user_quotes(messages: Sequence[dict], turn: int) -> tuple[str, ...]:
    """The user's quotes for a rule stated at message ``turn``: every non-blank user message
    before it, stripped, each clipped to ``MAX_NOTE`` characters (its last one "…")."""
    quotes = []
    for m in messages[:turn]:
        text = str(m.get("content") or "").strip()
        if m["role"] == "user" and text:
            quotes.append(text if len(text) <= MAX_NOTE else text[: MAX_NOTE - 1] + "…")
    return tuple(quotes)


def self_rules(messages: Sequence[dict]) -> list[AgentRuleStatement]:
    """Every rule the assistant states about itself in ``messages`` (the offline fallback;
    see the module)."""
    check_messages(messages)
    found: list[AgentRuleStatement] = []
    for turn, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        quotes = user_quotes(messages, turn)
        if quotes:
            text = str(m.get("content") or "")
            found += [AgentRuleStatement(rule=r, quotes=quotes) for r in rule_clauses(text)]
    return found
