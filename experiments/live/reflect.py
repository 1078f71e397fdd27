"""Where a live revision's new step comes from: the model's reflection, or the checker.

``live.revision_step`` (``REVISION_STEPS``):

- ``reflection`` (default): the extractor model is sent the procedure (title, steps), its
  failed runs' last replies and what the check required of each (``revision_request``,
  at most ``MAX_RUNS`` runs, the latest, each reply cut at ``MAX_REPLY`` characters) and
  asked, in JSON mode, for the seed's reflection ("a lesson about a run (what_worked,
  what_failed, lessons)", loom-procedures.txt) plus one new ``step``
  (``REVISE_PROMPT``). The call goes through the real ``openai`` client as extraction's
  do (``complete_checked``: a reply cut off or not JSON is retried once with more room);
  a reply without a step, or a call that fails for good, proposes nothing for that
  procedure (the error is kept) and the next eligible one is asked.
- ``checker``: the check the failed runs failed most often, as the step
  ``Make sure the reply passes: <check>`` (no model call).

The call is made while a finished session is applied (in session order), so it does not
depend on ``live.concurrency``. Its answer, calls and billed tokens are written into that
session's record (``reflections``, keyed ``<key>@<revision>``; ``calls``; ``tokens``),
which is journaled, so a resume replays the answer without a call. Its tokens are charged
to the budget (not checked: the session is already done; the next call checks). With a
tracer, the call is a trace of its own (root span ``revision``, type LLM) in the MLflow
session of the session that asked for it (an ended trace takes no new spans), without
the ``procmem.session_id`` tag, so ``traces:/`` reads only the sessions.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from experiments.live.revisions import Candidate
from procmem_core.learn import LearnError
from procmem_core.learn.client import complete_checked
from procmem_core.learn.extraction import ExtractionError, reply_field

REVISION_STEPS = ("reflection", "checker")
MAX_RUNS = 5
MAX_REPLY = 1200
REVISE_PROMPT = """You keep the procedures of an assistant agent: numbered steps it follows.
A procedure's recent runs FAILED a check on the agent's last reply. Reflect on those runs
(what worked, what failed, the lessons) and write ONE new step to add at the end of the
procedure so that the next runs pass.
Reply with exactly one JSON object and nothing else:
{"revision": {"what_worked": "what the runs did right",
              "what_failed": "what the failed replies did wrong",
              "lessons": ["a directive to the agent, one per lesson"],
              "step": "the one new step, an imperative sentence"}}
Base every statement on the replies and the checks shown."""
REVISE_REQUEST = "Reflect on these failed runs and write one new step.\n\n"


class RevisionReflection(BaseModel):
    """The model's reply, validated: ``{"revision": {..., "step": "..."}}``."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True, frozen=True)

    what_worked: str = ""
    what_failed: str = ""
    lessons: list[str] = []
    step: str


def validate_revision(raw: str) -> RevisionReflection:
    """Parse one reply; ``InvalidJSONReply`` when it is not JSON (retried), else
    ``ExtractionError`` ("shape", "invalid_entry" or "empty" for a blank step)."""
    try:
        got = RevisionReflection.model_validate(reply_field(raw, "revision", dict))
    except ValidationError as exc:
        raise ExtractionError("invalid_entry", f"revision: {exc.errors()[0]['msg']}", raw) from None
    if not got.step:
        raise ExtractionError("empty", "the reflection wrote no step", raw)
    return got


def revision_request(candidate: Candidate) -> list[dict]:
    """The chat messages of one reflection call (module doc)."""
    steps = "\n".join(f"{i}. {s}" for i, s in enumerate(candidate.steps, 1))
    blocks = []
    for run in candidate.failures[-MAX_RUNS:]:
        required = "\n".join(f"THE CHECK REQUIRED: {c}" for c in run.missed)
        blocks.append(
            f"FAILED RUN {run.session_id}:\nLAST REPLY:\n{run.reply[:MAX_REPLY]}\n{required}"
        )
    body = f"PROCEDURE: {candidate.title}\nSTEPS:\n{steps}\n\n" + "\n\n".join(blocks)
    return [
        {"role": "system", "content": REVISE_PROMPT},
        {"role": "user", "content": REVISE_REQUEST + body},
    ]


class CheckerStep:
    """``live.revision_step=checker``: the checker's lesson, no model call."""

    mode = "checker"

    def step(self, candidate: Candidate, record: dict[str, Any]) -> str | None:
        return candidate.checker_step()


class ReflectionStep:
    """``live.revision_step=reflection``: the model's step (module doc)."""

    mode = "reflection"

    def __init__(self, endpoint: Any, tracer: Any, budget: Any) -> None:
        self.endpoint = endpoint
        self.tracer = tracer
        self.budget = budget

    def step(self, candidate: Candidate, record: dict[str, Any]) -> str | None:
        """The new step for ``candidate`` (None: no step), replayed from ``record`` when
        it holds the answer, else asked of the model and written into ``record``."""
        memo = record.setdefault("reflections", {})
        ident = f"{candidate.key}@{candidate.revision}"
        if ident not in memo:
            memo[ident] = self._ask(candidate, record)
        return memo[ident]["step"]

    def _ask(self, candidate: Candidate, record: dict[str, Any]) -> dict[str, Any]:
        messages = revision_request(candidate)
        e = self.endpoint
        attrs = {"key": candidate.key, "revision": candidate.revision}
        with self.tracer.revision(record["session_id"], attrs) as span:
            span.set_inputs({"messages": messages})
            try:
                _, got, calls = complete_checked(
                    e.client, e.config, messages, purpose="revision",
                    check=validate_revision, cache=e.cache,
                )  # fmt: skip
                answer = {"step": got.step, "reflection": got.model_dump(), "error": None}
            except LearnError as exc:
                calls = list(getattr(exc, "calls", []))
                answer = {"step": None, "reflection": None, "error": f"{exc}"[:500]}
            span.set_outputs(answer)
        self.budget.charge(calls)
        record["calls"] = [*record.get("calls", []), *(dataclasses.asdict(c) for c in calls)]
        record["tokens"] = int(record.get("tokens", 0)) + sum(
            c.total_tokens for c in calls if not c.cached
        )
        return answer
