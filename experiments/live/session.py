"""One live session: the pack, the user turns, the score and, on its turn, an extraction.

``run_session`` runs in a worker thread: it reads the memory's pack for the plan
(``memory.pack_session``; no one changes the memory while a round runs), sends each
user turn with the seed's chat settings (``procmem_core.learn.chat``), scores the last
reply with the task's checkers or, for a task with a ``judge`` rubric, with the judge
model (``judge_reply``), and, when the plan says so, extracts procedures from the
transcript (``procmem_core.learn.learn``). It returns the session's journal record; the
loop applies it to the memory in session order. The ``TokenBudget`` is checked before
every call and charged after it. ``preflight`` asks an endpoint for ``GET /models`` before
the first session.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from typing import Any

import openai

from experiments.live.tasks import Task, passed
from procmem_core.errors import ParameterError, ProcmemError
from procmem_core.learn import CallRecord, LLMConfig, chat, learn, make_client, transcript_text
from procmem_core.learn.client import complete
from procmem_core.learn.extraction import ExtractionError, LearnError, reply_json
from procmem_core.learn.reply_cache import ReplyCache

JUDGE_PROMPT = (
    "You judge one reply of an assistant against a rubric. Answer with exactly one JSON "
    'object and nothing else: {"pass": true or false, "reason": "<one sentence>"}.'
)
"""The judge's system prompt; its user message is ``RUBRIC:`` then ``REPLY:``."""


PREFLIGHT_SECONDS = 5.0
"""How long ``preflight`` waits for ``GET /models``."""


class JudgeError(LearnError):
    """The judge's answer is not a verdict ``{"pass": bool}``: the session cannot be scored."""


class BudgetStop(ProcmemError):
    """The token budget was spent before this call."""


class TokenBudget:
    """Billed tokens (cache hits are free) against ``limit`` (None: no limit); thread-safe."""

    def __init__(self, limit: int | None, spent: int = 0) -> None:
        self.limit = limit
        self.spent = spent
        self._lock = threading.Lock()

    def check(self) -> None:
        """Raise ``BudgetStop`` when the budget is spent."""
        with self._lock:
            if self.limit is not None and self.spent >= self.limit:
                raise BudgetStop(f"live.budget.tokens={self.limit} spent ({self.spent} billed)")

    def charge(self, calls: list[CallRecord]) -> None:
        with self._lock:
            self.spent += sum(billed(c) for c in calls if not c.cached)


def billed(call: CallRecord) -> int:
    """The tokens a call is charged: its reported usage; a call that reports none (an
    endpoint without ``usage`` gives 0 and 0) its ``max_tokens``, the most its reply could
    bill, so a budget still stops such an endpoint (its prompt's share is not known)."""
    return call.total_tokens or call.max_tokens


@dataclass
class Endpoint:
    """A client, its ``LLMConfig`` and the reply cache (or None)."""

    client: Any
    config: LLMConfig
    cache: ReplyCache | None


@dataclass(frozen=True)
class Plan:
    """What the loop decided for session ``index`` before it runs."""

    index: int
    session_id: str
    round: int
    task: Task
    withhold: bool
    extract: bool


def judge_reply(task: Task, reply: str, judge: Endpoint) -> tuple[bool, str, CallRecord]:
    """The judge model's verdict on ``reply`` under the task's rubric (JSON mode)."""
    messages = [
        {"role": "system", "content": JUDGE_PROMPT},
        {"role": "user", "content": f"RUBRIC:\n{task.judge}\n\nREPLY:\n{reply}"},
    ]
    c = judge.config
    answer = complete(
        judge.client, c, messages, purpose="judge", max_tokens=c.max_tokens,
        temperature=c.temperature, reasoning_effort=c.reasoning_effort,
        json_response=c.json_response, cache=judge.cache,
    )  # fmt: skip
    try:
        verdict = reply_json(answer.content)  # a Markdown fence allowed, as everywhere
        ok = verdict["pass"]
        if not isinstance(ok, bool):
            raise TypeError(ok)
    except (ExtractionError, KeyError, TypeError):
        raise JudgeError(
            f"the judge (model {c.model!r} at {c.base_url}) answered {answer.content[:200]!r}, "
            'not one JSON object {"pass": true or false, "reason": ...}'
        ) from None
    return ok, str(verdict.get("reason", "")), answer.call


def _call_attrs(call: CallRecord) -> dict[str, Any]:
    return {
        "prompt_tokens": call.prompt_tokens,
        "completion_tokens": call.completion_tokens,
        "cached": call.cached,
        "finish_reason": str(call.finish_reason),
    }


def run_session(
    plan: Plan,
    memory: Any,
    agent: Endpoint,
    extractor: Endpoint,
    judge: Endpoint,
    budget: TokenBudget,
    tracer: Any,
) -> dict[str, Any]:
    """Run one session (see the module doc); its journal record."""
    calls: list[CallRecord] = []
    task = plan.task
    with tracer.session(plan.session_id, {"task_id": task.id, "index": plan.index}) as root:
        root.set_inputs({"task_id": task.id, "user_turns": list(task.user_turns)})
        with tracer.span("prompt_build", "PARSER", {}) as span:
            pack, served = memory.pack_session(plan)
            span.set_attributes(
                {"system_prompt": pack.prompt, "shown_keys": list(pack.shown_keys),
                 "top_key": pack.top_key, "withheld": pack.withheld,
                 "withheld_keys": [pack.top_key] if pack.withheld else []}
            )  # fmt: skip
        messages: list[dict] = []
        for turn, text in enumerate(task.user_turns, 1):
            budget.check()
            messages.append({"role": "user", "content": text})
            with tracer.span(f"chat_turn_{turn}", "CHAT_MODEL", {}) as span:
                span.set_inputs({"system": pack.prompt, "messages": list(messages)})
                reply = chat(pack.prompt, messages, agent.client, agent.config, agent.cache)
                span.set_outputs(reply.content)
                span.set_attributes(_call_attrs(reply.call))
            calls.append(reply.call)
            budget.charge([reply.call])
            messages.append({"role": "assistant", "content": reply.content})
        last = messages[-1]["content"]
        checks: list[tuple[str, bool]] = []
        if task.judge is not None:
            budget.check()
            with tracer.span("judge", "EVALUATOR", {"rubric": task.judge}) as span:
                ok, reason, call = judge_reply(task, last, judge)
                span.set_outputs({"pass": ok, "reason": reason})
            calls.append(call)
            budget.charge([call])
            rationale = f"judge: {reason}"
            checks = [(f"judge: {task.judge}", ok)]  # the rubric, what a revision must meet
        else:
            with tracer.span("checker", "EVALUATOR", {}) as span:
                checks = task.check(last)
                ok = passed(checks)
                span.set_outputs({"pass": ok, "checks": [[d, r] for d, r in checks]})
            rationale = "; ".join(f"{d}: {'pass' if r else 'FAIL'}" for d, r in checks)
        learned, learn_error = None, None
        if plan.extract:
            budget.check()
            with tracer.span(
                "extraction", "LLM", {"transcript": transcript_text(messages)}
            ) as span:
                try:
                    result = learn(messages, extractor.client, extractor.config, extractor.cache)
                    learned = [_procedure_dict(p) for p in result.procedures]
                    extraction_calls = result.calls
                except ExtractionError as exc:
                    learn_error = f"{exc.reason}: {exc}"[:500]
                    extraction_calls = list(exc.calls)
                span.set_outputs({"procedures": learned, "error": learn_error})
            calls.extend(extraction_calls)
            budget.charge(extraction_calls)
        root.set_outputs({"outcome": int(ok), "reply": last})
        trace_id = root.trace_id
    tracer.feedback(trace_id, ok, task.judge is not None, rationale)
    return {
        "index": plan.index,
        "session_id": plan.session_id,
        "round": plan.round,
        "task_id": task.id,
        "top_key": pack.top_key,
        "withheld": pack.withheld,
        "shown_keys": list(pack.shown_keys),
        "served": list(served),
        "outcome": int(ok),
        "checks": [[d, r] for d, r in checks],
        "rationale": rationale,
        "messages": messages,
        "learned": learned,
        "learn_error": learn_error,
        "calls": [dataclasses.asdict(c) for c in calls],
        "tokens": sum(c.total_tokens for c in calls if not c.cached),
        "trace_id": trace_id,
    }


def _procedure_dict(p: Any) -> dict[str, Any]:
    return {
        "title": p.title,
        "trigger": p.trigger,
        "description": p.description,
        "confidence": p.confidence,
    }


def preflight(config: LLMConfig) -> Any:
    """A client for ``config`` whose endpoint answered ``GET /v1/models`` in seconds.

    A missing key raises naming its variable (``make_client``); no answer, an error
    status or an answer that is not a model list raises naming the URL; a refused key
    (HTTP 401 or 403) names the variable. An endpoint without the models route (404) or
    busy (429) is let through: chat completions are all the loop needs, and they retry."""
    client = make_client(config)
    quick = client.with_options(max_retries=0, timeout=PREFLIGHT_SECONDS)
    url = ("llm.base_url", config.base_url)
    try:
        body = quick.models.with_raw_response.list().http_response.json()
    except openai.APIConnectionError as exc:
        raise ParameterError(
            *url, f"an OpenAI-compatible endpoint that answers; GET /models failed: {exc}"
        ) from None
    except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
        raise ParameterError(
            "llm.api_key_env", config.api_key_env,
            f"a key the endpoint accepts (HTTP {exc.status_code})",
        ) from None  # fmt: skip
    except (openai.NotFoundError, openai.RateLimitError):
        return client
    except openai.APIStatusError as exc:
        raise ParameterError(
            *url, f"an OpenAI-compatible endpoint; GET /models answered HTTP {exc.status_code}"
        ) from None
    except ValueError:  # not JSON: a web page, say
        body = None
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise ParameterError(
            *url, "an OpenAI-compatible endpoint; GET /models answered no model list "
            "(is the URL's /v1 missing?)",
        )  # fmt: skip
    return client
