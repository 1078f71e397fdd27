"""A deterministic stand-in for a chat model, used by the offline server (``llm_server``).

The kinds of request, told apart by the system prompt (``request_kind``):

- extraction (the system prompt asks for ``{"procedures": ...}`` JSON): the reply is
  well-formed procedure JSON drawn from ``PROCEDURE_POOL``, by one of two behaviours
  (``EXTRACTION_MODES``, a parameter of the model and of the server):

  - ``"user_requests"`` (default): what the user asked for first. A pool entry is picked
    when its cues occur in the transcript; its confidence follows the extraction prompt's
    scale: 0.85 when a *user* line asks for it, 0.70 when an *assistant* line already
    shows it, 0.60 when it is only suggested by the context.
  - ``"assistant_advice"``: what the notebook seed observed the real model do ("They
    read like the assistant's own advice turned into rules"; the user's two requests
    did not become procedures): only entries whose advice cues occur in *assistant*
    lines, at 0.70, whatever the user asked.

  At most three are returned, highest confidence first, ties broken by a hash of
  (transcript, title), so the choice is keyed by the transcript. No cue, no procedure:
  ``{"procedures": []}``.
- distill (the system prompt asks for ``{"reflection": ...}`` JSON): the line-by-line
  comparison of ``offline_distill``;
- revision (the system prompt asks for ``{"revision": ...}`` JSON, the graph live loop's
  reflection on a procedure's failed runs): the new step of ``offline_revision``;
- chat: a short FinCoach-style reply that visibly follows every procedure listed under
  ``LEARNED OPERATIONAL PROCEDURES`` in the system prompt (one line per procedure, naming it).

Token counts use ``count_tokens`` (words and punctuation marks), a stand-in for a real
tokenizer that is exact and reproducible. With a ``reasoning_effort`` the model spends
``REASONING_TOKENS[effort]`` hidden tokens first, counted inside ``max_tokens`` as
gpt-oss does (notebook seed); a reply that does not fit is cut off with
``finish_reason="length"``.

This is a simulator of the protocol and of plausible behaviour, not a claim about what a
real model would extract.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

import simulators.offline_agent as offline_agent
import simulators.offline_distill as offline_distill
import simulators.offline_revision as offline_revision
from procmem_core.errors import ParameterError
from procmem_core.flat import PROCEDURES_HEADING
from procmem_core.graph.pack import PACK_HEADING
from procmem_core.learnings.extraction import AGENT_RULES_MARKER, rule_clauses

TOKEN_PATTERN = re.compile(r"\w+|[^\w\s]")
REASONING_TOKENS = {"minimal": 16, "low": 48, "medium": 192, "high": 768}
MESSAGE_OVERHEAD_TOKENS = 4


def count_tokens(text: str) -> int:
    """Number of words and punctuation marks in ``text``."""
    return len(TOKEN_PATTERN.findall(text))


def truncate_to_tokens(text: str, budget: int) -> str:
    """The prefix of ``text`` holding its first ``budget`` tokens (empty for budget <= 0)."""
    if budget <= 0:
        return ""
    matches = list(TOKEN_PATTERN.finditer(text))
    if budget >= len(matches):
        return text
    return text[: matches[budget - 1].end()]


@dataclass(frozen=True)
class PoolProcedure:
    """One procedure the offline model can extract, with the cues that select it."""

    title: str
    trigger: str
    description: str
    user_cues: tuple[str, ...] = ()
    agent_cues: tuple[str, ...] = ()
    context_cues: tuple[str, ...] = ()
    advice_cues: tuple[str, ...] = ()  # the "assistant_advice" mode's cues


PROCEDURE_POOL: tuple[PoolProcedure, ...] = (
    PoolProcedure(
        "Quantify the worst case",
        "When the user asks about an investment",
        "Always quantify the worst-case scenario before the user asks.",
        user_cues=("worst case", "worst-case"),
        agent_cues=("worst case", "worst-case"),
    ),
    PoolProcedure(
        "End with a numbered action list",
        "When the user asks what to do next",
        "Always close with a short numbered list of next steps.",
        user_cues=("clear list", "list of what", "what i should do next", "next steps"),
        agent_cues=("next steps",),
    ),
    PoolProcedure(
        "Verify emergency fund before new investments",
        "User mentions new funds becoming available or wants to invest",
        "Always check that the user holds 3-6 months of expenses in cash equivalents "
        "before allocating new money to investment products.",
        agent_cues=("emergency fund",),
        context_cues=("expenses", "salary"),
        advice_cues=("emergency fund",),
    ),
    PoolProcedure(
        "Lead with capital-protected options for risk-averse users",
        "The user says they are risk-averse",
        "When the user is risk-averse, present capital-protected options first and "
        "state the lock-in period of each.",
        agent_cues=("low-risk", "low risk", "capital-protected"),
        context_cues=("risk-averse", "risk averse"),
    ),
    PoolProcedure(
        "Compare options for a maturing FD",
        "The user has a fixed deposit maturing or matured",
        "When an FD matures, compare at least three options on liquidity, risk and tax "
        "before recommending one.",
        context_cues=(" fd ", "fixed deposit", "matur"),
    ),
    PoolProcedure(
        "Ask for the investment horizon",
        "The user wants to invest without stating when they need the money",
        "Ask when the money will be needed before suggesting any product.",
        context_cues=("invest",),
    ),
    PoolProcedure(
        "Never name individual stocks",
        "The user asks which stock or share to buy",
        "Never name individual companies or stocks; point to diversified funds instead.",
        user_cues=("which stock", "which shares", "stock tip", "stocks to buy"),
        context_cues=(" stock", " shares"),
    ),
    PoolProcedure(
        "Keep answers brief",
        "The user asks for a short answer or an explanation",
        "Answer in at most 120 words; leave out background the user did not ask for.",
        user_cues=("briefly", "keep it brief", "in a few words", "too long"),
    ),
    PoolProcedure(
        "Allocate maturing FD for risk-averse users",
        "User is risk-averse and has a maturing fixed-deposit",
        "Park 60-70% of the maturing amount in a liquid fund for liquidity, allocate the "
        "remaining 30-40% to a short-term high-quality debt fund, and set up a monthly SIP "
        "of 5-10k into the same debt fund.",
        advice_cues=("liquid fund",),
    ),
    PoolProcedure(
        "Annual fund monitoring and rebalancing",
        "User has ongoing investments in debt funds",
        "Review the debt fund's credit rating, expense ratio and performance annually; "
        "rebalance or adjust SIP amounts if the user's risk tolerance or goals change.",
        advice_cues=("debt fund",),
    ),
)
"""The last two are the seed's own session-2 procedures (its observed outcome)."""

MAX_EXTRACTED = 3
EXTRACTION_MODES = ("user_requests", "assistant_advice")


def is_extraction_request(messages: list[dict]) -> bool:
    """An extraction request: a system message that asks for ``procedures`` JSON."""
    return any(m.get("role") == "system" and '"procedures"' in _text(m) for m in messages)


def _text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _lines_by_role(transcript: str) -> tuple[str, str, str]:
    """(user lines, assistant lines, all) of a ``ROLE: content`` transcript, lower-cased."""
    user, agent = [], []
    current = None
    for line in transcript.splitlines():
        head = line.split(":", 1)[0].strip().upper()
        if head in ("USER", "ASSISTANT"):
            current = head
        if current == "USER":
            user.append(line)
        elif current == "ASSISTANT":
            agent.append(line)
    low = transcript.lower()
    return "\n".join(user).lower(), "\n".join(agent).lower(), f" {low} "


def check_extraction(mode: str) -> str:
    if mode not in EXTRACTION_MODES:
        raise ParameterError("extraction", mode, f"expected one of {list(EXTRACTION_MODES)}")
    return mode


def _confidence(entry: PoolProcedure, mode: str, user: str, agent: str, everything: str):
    if mode == "assistant_advice":
        return 0.70 if any(c in agent for c in entry.advice_cues) else None
    if any(c in user for c in entry.user_cues):
        return 0.85
    if any(c in agent for c in entry.agent_cues):
        return 0.70
    if any(c in everything for c in entry.context_cues):
        return 0.60
    return None


def extract_procedures(transcript: str, extraction: str = "user_requests") -> list[dict]:
    """The procedures the offline model extracts from ``transcript`` (at most three), by
    the ``extraction`` behaviour (see the module doc)."""
    mode = check_extraction(extraction)
    user, agent, everything = _lines_by_role(transcript)
    chosen = []
    for entry in PROCEDURE_POOL:
        confidence = _confidence(entry, mode, user, agent, everything)
        if confidence is None:
            continue
        tie = hashlib.sha256(f"{transcript}\x00{entry.title}".encode()).hexdigest()
        chosen.append((-confidence, tie, entry, confidence))
    chosen.sort(key=lambda row: (row[0], row[1]))
    return [
        {
            "title": e.title,
            "trigger": e.trigger,
            "description": e.description,
            "confidence": c,
        }
        for _, _, e, c in chosen[:MAX_EXTRACTED]
    ]


GRAPH_ITEM = re.compile(r"^\d+\. (.+?)(?: \(unproven\))? \[procedure_\S*, [a-z_]+\]$")
GRAPH_STEP = re.compile(r"^\s+\d+\) (.+)$")


def listed_procedures(system_prompt: str) -> list[tuple[str, str]]:
    """(title, description) of each procedure ``build_system_prompt`` listed, or (title,
    its steps joined) of each a graph pack (``ContextPacker``) listed."""
    if PACK_HEADING in system_prompt:
        return _graph_procedures(system_prompt.split(PACK_HEADING, 1)[1])
    if PROCEDURES_HEADING not in system_prompt:
        return []
    block = system_prompt.split(PROCEDURES_HEADING, 1)[1]
    found: list[tuple[str, str]] = []
    title, desc_lines = None, []
    for line in block.splitlines():
        head = re.match(r"^(\d+)\. (.+)$", line)
        if head:
            if title is not None:
                found.append((title, " ".join(desc_lines).strip()))
            title, desc_lines = head.group(2).strip(), []
        elif title is not None and line.strip() and not line.strip().startswith("Trigger:"):
            desc_lines.append(line.strip())
    if title is not None:
        found.append((title, " ".join(desc_lines).strip()))
    return found


def _graph_procedures(block: str) -> list[tuple[str, str]]:
    found: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        head = GRAPH_ITEM.match(line)
        step = GRAPH_STEP.match(line)
        if head:
            found.append((head.group(1).strip(), []))
        elif step and found:
            found[-1][1].append(step.group(1).strip())
    return [(title, " ".join(steps)) for title, steps in found]


def chat_reply(messages: list[dict]) -> str:
    """A short reply to the last user message that follows the listed procedures.

    Each listed procedure gets one short line naming it; what the procedures ask for
    (``offline_agent.procedure_actions``) shapes the rest, so a procedure in the prompt
    changes what a checker sees (``offline_agent`` has the details)."""
    system = "\n".join(_text(m) for m in messages if m.get("role") == "system")
    users = [_text(m) for m in messages if m.get("role") == "user"]
    last = users[-1] if users else ""
    amount = re.search(r"₹\s?[\d,]+", last)
    subject = f"your {amount.group(0).replace(' ', '')}" if amount else "your money"
    procedures = listed_procedures(system)
    actions = offline_agent.procedure_actions(procedures)
    lines = [offline_agent.EMERGENCY_LINE] if "emergency_fund" in actions else []
    lines.append(f"Here is how I would approach {subject}.")
    if not procedures:
        lines.append(
            "Keep an emergency fund first; for money you may need soon, a liquid fund or "
            "a short-term debt fund is a low-risk place to start."
        )
    for i, (title, _) in enumerate(procedures, 1):
        lines.append(f"{i}. Following '{title}'.")
    lines.extend(offline_agent.topic_lines(last, actions))
    return "\n".join(lines)


def is_judge_request(messages: list[dict]) -> bool:
    """A judge request: a system message that asks for ``pass`` JSON (the live loop's)."""
    return any(m.get("role") == "system" and '"pass"' in _text(m) for m in messages)


def judge_reply(messages: list[dict]) -> str:
    """The offline judge's verdict: the reply passes when every phrase the rubric quotes
    in double quotes occurs in it (case aside); a rubric quoting none passes any reply."""
    text = "\n".join(_text(m) for m in messages if m.get("role") == "user")
    rubric, _, reply = text.partition("REPLY:")
    phrases = re.findall(r'"([^"]+)"', rubric)
    missing = [p for p in phrases if p.lower() not in reply.lower()]
    reason = f"missing {missing}" if missing else "every quoted phrase is there"
    return json.dumps({"pass": not missing, "reason": reason}, ensure_ascii=False)


def request_kind(messages: list[dict]) -> str:
    """``"distill"`` (``offline_distill``), ``"revision"`` (``offline_revision``),
    ``"agent_rules"``, ``"extraction"``, ``"judge"`` or ``"chat"``."""
    if offline_distill.is_distill_request(messages):
        return "distill"
    if offline_revision.is_revision_request(messages):
        return "revision"
    if is_agent_rules_request(messages):
        return "agent_rules"
    if is_extraction_request(messages):
        return "extraction"
    return "judge" if is_judge_request(messages) else "chat"


_TURN = re.compile(r"^\[(\d+)\] (USER|ASSISTANT|SYSTEM|TOOL): ", re.MULTILINE)


def is_agent_rules_request(messages: list[dict]) -> bool:
    """A system message asking for ``{"agent_rules": ...}`` JSON."""
    return any(m.get("role") == "system" and AGENT_RULES_MARKER in _text(m) for m in messages)


def agent_rules_reply(messages: list[dict]) -> str:
    """The bot's rules about itself in a numbered session (``learnings.agent_rules``), read
    with the engine's own clause rule (``learnings.extraction.rule_clauses``): each
    assistant message's rule clauses, with its number as the turn."""
    text = "\n".join(_text(m) for m in messages if m.get("role") == "user")
    heads = list(_TURN.finditer(text))
    rules = []
    for k, head in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(text)
        if head.group(2) == "ASSISTANT":
            body = text[head.end() : end]
            rules += [{"rule": r, "turn": int(head.group(1))} for r in rule_clauses(body)]
    return json.dumps({"agent_rules": rules}, ensure_ascii=False)


def reply_content(messages: list[dict], extraction: str = "user_requests") -> str:
    """The full (untruncated) reply text for a chat-completions request."""
    if offline_distill.is_distill_request(messages):
        return offline_distill.reply(messages)
    if offline_revision.is_revision_request(messages):
        return offline_revision.reply(messages)
    if is_agent_rules_request(messages):
        return agent_rules_reply(messages)
    if is_judge_request(messages) and not is_extraction_request(messages):
        return judge_reply(messages)
    if is_extraction_request(messages):
        transcript = "\n".join(_text(m) for m in messages if m.get("role") == "user")
        found = extract_procedures(transcript, extraction)
        return json.dumps({"procedures": found}, ensure_ascii=False)
    return chat_reply(messages)


def prompt_tokens(messages: list[dict]) -> int:
    """Prompt tokens: each message's content plus a fixed per-message overhead."""
    return sum(count_tokens(_text(m)) + MESSAGE_OVERHEAD_TOKENS for m in messages)
