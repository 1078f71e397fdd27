"""The live loop: rounds of sessions, bounded concurrency, in-order memory updates, budget.

Sessions run in rounds of ``extract_every``. Every session of a round sees the memory as
it was when the round started; up to ``concurrency`` of them run at once (threads), and
their records are applied to the memory in session order once the round is done, then
journaled. The last session of each round also extracts procedures from its transcript,
so the memory learns once a round. Session ``i``'s task and withholding draw come from
``numpy.random.default_rng([seed, i])``, so with a deterministic endpoint the sessions,
the memory and the logs do not depend on ``concurrency`` or on a kill and resume.

Stopping: when the token budget is spent (``TokenBudget``) or a call fails for good, the
round's sessions that finished before the first one that did not are applied and kept
(journaled as ``partial``, so a resume runs that round again), and ``LiveStopped``
is raised with the reason.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from experiments.live.journal import Journal
from experiments.live.session import (
    JUDGE_PROMPT,
    BudgetStop,
    Endpoint,
    Plan,
    TokenBudget,
    run_session,
)
from experiments.live.tasks import Task
from procmem_core.errors import ParameterError, ProcmemError
from procmem_core.learn import CallRecord

PROMPT_TOKENS_PER_PROCEDURE = 40
EXTRACTION_PROMPT_TOKENS = 450
JUDGE_REPLY_TOKENS = 40
"""Token estimates of one shown procedure, of the extraction prompt (with its JSON) and
of the judge's answer (one JSON object with a one-sentence reason)."""


class LiveStopped(ProcmemError):
    """The loop stopped before its last session (budget spent, or a call failed for good);
    the sessions before it are kept."""


@dataclass(frozen=True)
class LoopSettings:
    """The loop's knobs (``live`` config group; checked by ``experiments.tasks.live``)."""

    sessions: int
    explore_rate: float
    extract_every: int
    concurrency: int
    seed: int
    agent: str = "fincoach"
    budget_tokens: int | None = None

    def session_id(self, index: int) -> str:
        """Session ``index``'s id: ``<agent>-<seed>-<index, at least 5 digits>``."""
        return f"{self.agent}-{self.seed}-{index:05d}"

    def plan(self, tasks: Sequence[Task], index: int) -> Plan:
        """Session ``index``'s task, withholding draw, round and whether it extracts."""
        rng = np.random.default_rng([self.seed, index])
        task = tasks[int(rng.integers(len(tasks)))]
        withhold = bool(rng.random() < self.explore_rate)
        return Plan(
            index=index,
            session_id=self.session_id(index),
            round=index // self.extract_every,
            task=task,
            withhold=withhold,
            extract=(index + 1) % self.extract_every == 0 or index + 1 == self.sessions,
        )


def _tokens(text: str) -> int:
    return round(len(text.split()) * 4 / 3) + 4


def estimate_tokens(
    settings: LoopSettings, tasks: Sequence[Task], base_prompt: str, limit: int, reply: int
) -> int:
    """Tokens the run is expected to bill: for the average task, each turn sends the
    system prompt (the base prompt and ``limit`` procedures), the conversation so far and
    gets ``reply`` tokens back; a task with a ``judge`` rubric adds the judge's call
    (``JUDGE_PROMPT``, the rubric and the last reply in, ``JUDGE_REPLY_TOKENS`` out); one
    extraction a round reads the transcript."""
    system = _tokens(base_prompt) + limit * PROMPT_TOKENS_PER_PROCEDURE
    per_task, transcripts = [], []
    for task in tasks:
        history, total = 0, 0
        for turn in task.user_turns:
            history += _tokens(turn)
            total += system + history + reply
            history += reply
        if task.judge is not None:
            total += _tokens(JUDGE_PROMPT) + _tokens(task.judge) + reply + JUDGE_REPLY_TOKENS
        per_task.append(total)
        transcripts.append(history)
    rounds = -(-settings.sessions // settings.extract_every)
    chat = settings.sessions * float(np.mean(per_task))
    extraction = rounds * (EXTRACTION_PROMPT_TOKENS + float(np.mean(transcripts)) + reply)
    return round(chat + extraction)


@dataclass
class LiveLoop:
    """One live run's loop; ``run`` returns every session record in order."""

    settings: LoopSettings
    tasks: Sequence[Task]
    memory: Any  # FlatMemory or GraphMemory
    agent: Endpoint
    extractor: Endpoint
    judge: Endpoint
    journal: Journal
    tracer: Any
    on_round: Callable[[list[dict]], None] = lambda records: None
    identity: str = ""
    """The run's resume identity (``tasks.live.resume_identity``), kept on every journal
    record: a resume under another config is refused."""
    records: list[dict] = field(default_factory=list)
    confidence_path: list[dict] = field(default_factory=list)
    resumed: int = 0

    def apply(self, record: dict) -> None:
        """One session's record into the memory (outcome, then what it learned)."""
        self.memory.apply_outcome(record)
        if record.get("learned"):
            record["added"] = self.memory.add_learned(record["learned"])
        for key, value in self.memory.confidences().items():
            self.confidence_path.append({"time": record["index"], "key": key, "confidence": value})
        self.records.append(record)

    def restore(self, resume: bool) -> int:
        """Apply the journal's complete rounds (``resume``) or start it empty; the first
        session index still to run."""
        if not resume:
            self.journal.reset()
            return 0
        for record in self.journal.done(self.settings.extract_every, self.settings.sessions):
            self._check_journaled(record)
            self.apply(record)
        self.resumed = len(self.records)
        return self.resumed

    def _check_journaled(self, record: dict) -> None:
        """Refuse a journal record that is not the session this config plans at its index
        (another seed, agent, task file, explore rate or round size wrote the journal):
        applying it would mix two runs' sessions in one log."""
        plan = self.settings.plan(self.tasks, record["index"])
        extracted = record.get("learned") is not None or record.get("learn_error") is not None
        kind = self.memory.kind  # a journal written before records named it: not checked
        config = record.get("config", self.identity)  # likewise
        found = (record["session_id"], record["task_id"], record.get("explore_rate"), extracted,
                 record.get("memory", kind), config)  # fmt: skip
        expected = (plan.session_id, plan.task.id, self.settings.explore_rate, plan.extract, kind,
                    self.identity)  # fmt: skip
        if found != expected:
            raise ParameterError(
                "live.journal", str(self.journal.path),
                f"a journal this config wrote (resume=true): its session {record['index']} "
                f"has (session_id, task_id, explore_rate, extracted, memory, config) = "
                f"{found}, this config plans {expected} (config: the config hash without "
                "live.budget, live.concurrency and live.journal, which a resume may change); "
                "resume with the config that wrote it, or without resume",
            )  # fmt: skip

    def run(self, budget: TokenBudget, resume: bool = False) -> list[dict]:
        """Run every round not yet journaled; raises ``LiveStopped`` after keeping what
        finished when the budget is spent or a call fails for good."""
        start = self.restore(resume)
        if self.records:  # the resumed sessions' steps, so this run's history has every one
            self.on_round(list(self.records))
        # the restored sessions' calls as the budget charged them (session.billed), not
        # their reported tokens: an endpoint without usage reports 0
        budget.charge([CallRecord(**c) for r in self.records for c in r["calls"]])
        size = self.settings.extract_every
        with cf.ThreadPoolExecutor(max_workers=self.settings.concurrency) as pool:
            for first in range(start, self.settings.sessions, size):
                last = min(first + size, self.settings.sessions)
                plans = [self.settings.plan(self.tasks, i) for i in range(first, last)]
                self._round(pool, plans, budget)
        return self.records

    def _round(self, pool: cf.Executor, plans: list[Plan], budget: TokenBudget) -> None:
        futures = [
            pool.submit(
                run_session, p, self.memory, self.agent, self.extractor, self.judge, budget,
                self.tracer,
            )
            for p in plans
        ]  # fmt: skip
        done, failure = [], None
        for future in futures:
            try:
                record = future.result()
            except Exception as exc:
                failure = failure or exc
                continue
            if failure is None:
                done.append(record)
        for record in done:
            record["explore_rate"] = self.settings.explore_rate
            record["memory"] = self.memory.kind
            if self.identity:
                record["config"] = self.identity
            record["partial"] = failure is not None
            self.apply(record)
        self.journal.append(done)
        self.on_round(done)
        if failure is not None:
            why = "budget" if isinstance(failure, BudgetStop) else type(failure).__name__
            raise LiveStopped(
                f"stopped after {len(self.records)} of {self.settings.sessions} sessions "
                f"({why}): {failure}"
            ) from failure
