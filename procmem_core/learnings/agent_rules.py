"""The bot's rules about itself, read by a model (seed: "Extraction files one kind of
candidate itself ... a rule a bot states about its own behaviour in a conversation becomes
an assistant_turn candidate").

The seed's extraction is a model reading the session; procmem sends it through learn's
client (``procmem_core.learn.client.complete_checked``: the same ``LLMConfig``, retries,
reply cache and failures as ``learn``). The request numbers the session's messages
(``[i] ROLE: text``); the reply is ``{"agent_rules": [{"rule": ..., "turn": i}]}``, ``turn``
the number of the assistant message that states the rule. The user's quotes of a rule are
that user's messages before its turn, as in the offline fallback
(``extraction.self_rules``, the regex used when no client is given).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from procmem_core.errors import ParameterError
from procmem_core.learnings.extraction import (
    AgentRuleStatement,
    check_messages,
    self_rules,
    user_quotes,
)
from procmem_core.learnings.queue import LearningsQueue
from procmem_core.learnings.records import Learning
from procmem_core.limits import MAX_NOTE
from procmem_core.memory import Principal

if TYPE_CHECKING:  # learn (openai, pydantic) loads only when a model reads a session
    from procmem_core.learn.config import CallRecord, LLMConfig
    from procmem_core.learn.reply_cache import ReplyCache

AGENT_RULES_PROMPT = """You read a conversation between a user and an assistant bot.
List every rule the assistant states about its OWN behaviour ("I always ...", "I never ...",
"I make sure to ..."): not advice to the user, not the user's requests.
Reply with exactly one JSON object and nothing else:
{"agent_rules": [{"rule": "the rule, in the assistant's words", "turn": 3}]}
where turn is the [number] of the assistant message that states the rule.
Reply {"agent_rules": []} when the assistant states no rule about itself."""
AGENT_RULES_REQUEST = "The conversation:\n\n"


def rules_request(messages: Sequence[dict]) -> list[dict]:
    """The chat messages of one call: the prompt, then the numbered session."""
    check_messages(messages)
    body = "\n".join(
        f"[{i}] {str(m['role']).upper()}: {m.get('content') or ''}" for i, m in enumerate(messages)
    )
    return [
        {"role": "system", "content": AGENT_RULES_PROMPT},
        {"role": "user", "content": AGENT_RULES_REQUEST + body},
    ]


def validate_rules(raw: str, messages: Sequence[dict]) -> list[AgentRuleStatement]:
    """The rules of one reply; ``InvalidJSONReply`` when it is not JSON (retried), else
    ``ExtractionError`` ("shape" or "invalid_entry", naming the entry)."""
    from procmem_core.learn.extraction import ExtractionError, reply_field

    found = []
    for j, entry in enumerate(reply_field(raw, "agent_rules", list)):
        rule = entry.get("rule") if isinstance(entry, dict) else None
        turn = entry.get("turn") if isinstance(entry, dict) else None
        ok_turn = isinstance(turn, int) and not isinstance(turn, bool)
        if ok_turn and 0 <= turn < len(messages) and messages[turn]["role"] == "assistant":
            quotes = user_quotes(messages, turn)
        else:
            quotes = ()
        if not isinstance(rule, str) or not rule.strip() or len(rule) > MAX_NOTE or not quotes:
            raise ExtractionError(
                "invalid_entry",
                f"agent_rules[{j}]: expected a rule (1..{MAX_NOTE} characters) and the turn of "
                "an assistant message after a user message",
                raw,
            )
        found.append(AgentRuleStatement(rule=rule.strip(), quotes=quotes))
    return found


def model_self_rules(
    messages: Sequence[dict], client: Any, config: LLMConfig, cache: ReplyCache | None = None
) -> tuple[list[AgentRuleStatement], list[CallRecord]]:
    """The rules the model reads in ``messages`` and the record of every call; raises
    ``LLMCallError`` or ``ExtractionError`` as ``learn`` does."""
    from procmem_core.learn.client import complete_checked

    _, rules, calls = complete_checked(
        client,
        config,
        rules_request(messages),
        purpose="agent_rules",
        check=lambda raw: validate_rules(raw, messages),
        cache=cache,
    )
    return rules, calls


def file_session(
    queue: LearningsQueue,
    messages: Sequence[dict],
    *,
    principal: Principal,
    agent: str | None,
    user_id: str | None,
    session_id: str,
    namespace: str = "default",
    client: Any = None,
    config: Any = None,
    cache: Any = None,
) -> list[Learning]:
    """File the session's bot rules as ``assistant_turn`` candidates (none while the
    setting is off, or when the call acts as no bot: "-", "*"); returns the candidates filed.
    With a ``client`` and its ``LLMConfig`` the model reads the rules
    (``agent_rules.model_self_rules``); without, the regex does (``self_rules``)."""
    if client is not None:
        if config is None:
            raise ParameterError("config", config, "the LLMConfig of the client")
        statements, _ = model_self_rules(messages, client, config, cache)
    else:
        statements = self_rules(messages)
    filed = []
    for statement in statements:
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
