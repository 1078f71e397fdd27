"""A live revision's new step from the model's reflection, through the offline model's HTTP
server on 127.0.0.1: the request, the answer, its replay from the record, a reply without
a step, the checker fallback and the config key."""

from __future__ import annotations

import json

import pytest

from experiments.live.graph_memory import GraphMemory
from experiments.live.reflect import REVISE_PROMPT, ReflectionStep
from experiments.live.revisions import LESSON
from experiments.live.session import Endpoint, TokenBudget
from experiments.live.tasks import Check
from experiments.live.traces import NullTracer
from experiments.run import compose_job
from experiments.tasks.live import settings_from_config
from procmem_core.errors import ParameterError
from procmem_core.learn import LLMConfig, make_client
from simulators.llm_server import Fault, OfflineServer
from simulators.offline_revision import directive

A, B = "procedure_quantify_risk", "procedure_close_with_steps"
LEARNED = [
    {"title": "Quantify risk", "trigger": "an investment question",
     "description": "State the worst case in rupees.", "confidence": 0.6},
    {"title": "Close with steps", "trigger": "what to do next",
     "description": "End with a numbered list.", "confidence": 0.6},
]  # fmt: skip
WORST = Check("regex", "worst[- ]case[^\\n]*\\d", ignore_case=True).describe()
SHORT = Check("max_words", 120).describe()


def record(memory: GraphMemory, index: int, key: str, failed: str = "") -> dict:
    """Session ``index``'s record: ``key`` followed, failing the check ``failed`` (or passing)."""
    checks = [[WORST, failed != WORST], [SHORT, failed != SHORT]]
    return {
        "index": index, "session_id": f"s{index:03d}", "top_key": key, "withheld": False,
        "shown_keys": [key], "outcome": int(not failed), "tokens": 10, "checks": checks,
        "served": [memory._revision(key)], "calls": [],
        "messages": [{"role": "user", "content": "How bad can it get?"},
                     {"role": "assistant", "content": f"reply {index}: it depends."}],
    }  # fmt: skip


def memory_on(server: OfflineServer, budget: TokenBudget) -> GraphMemory:
    config = LLMConfig(base_url=server.base_url, model="procmem-offline")
    memory = GraphMemory(0.0, seed=0, evolve_every=100, revise_every=5)
    memory.steps = ReflectionStep(Endpoint(make_client(config), config, None), NullTracer(), budget)
    memory.now = 0
    assert memory.add_learned(LEARNED) == [A, B]
    return memory


def play(memory: GraphMemory, records: list[dict]) -> None:
    for r in records:
        memory.apply_outcome(r)


def sessions(memory: GraphMemory) -> list[dict]:
    """A fails twice on the worst case, B once on the length; session 4 ends the step."""
    plan = [(A, WORST), (A, ""), (A, WORST), (A, ""), (B, SHORT)]
    return [record(memory, i, key, failed) for i, (key, failed) in enumerate(plan)]


def test_the_models_reflection_writes_the_step_and_a_replay_asks_nothing():
    with OfflineServer() as server:
        budget = TokenBudget(None)
        memory = memory_on(server, budget)
        try:
            records = sessions(memory)
            play(memory, records)
            steps = memory.bot.store.get(f"default/{A}").steps
        finally:
            memory.close()
        [asked] = [r for r in server.requests if r.kind == "revision"]
        body = asked.body
        assert body["response_format"] == {"type": "json_object"}
        assert body["messages"][0]["content"] == REVISE_PROMPT
        user = body["messages"][1]["content"]
        # the procedure, its two failed runs' last replies and what the check required
        assert "PROCEDURE: Quantify risk" in user and "1. " in user
        assert "FAILED RUN s000:\nLAST REPLY:\nreply 0: it depends." in user
        assert "FAILED RUN s002:" in user and "s001" not in user
        assert user.count(f"THE CHECK REQUIRED: {WORST}") == 2
        step = "Make the reply match the pattern worst[- ]case[^\\n]*\\d"
        assert steps[-1] == step and len(steps) == 3
        answer = records[4]["reflections"][f"{A}@1"]
        assert answer["step"] == step and answer["error"] is None
        what = answer["reflection"]["what_failed"]
        assert what == f"2 of the 2 failed runs' last replies failed {WORST}"
        [call] = records[4]["calls"]
        assert call["purpose"] == "revision"
        billed = call["prompt_tokens"] + call["completion_tokens"]
        assert records[4]["tokens"] == 10 + billed and budget.spent == billed
        # the journaled records replayed into a fresh memory: the same step, no call
        again = memory_on(server, TokenBudget(None))
        try:
            play(again, records)
            assert again.bot.store.get(f"default/{A}").steps == steps
        finally:
            again.close()
        assert sum(r.kind == "revision" for r in server.requests) == 1


def test_a_reflection_without_a_step_proposes_nothing_for_it_and_the_next_is_asked():
    with OfflineServer() as server:
        empty = json.dumps({"revision": {"what_failed": "unclear", "step": ""}})
        server.inject(Fault("reply", content=empty, only="revision"))
        memory = memory_on(server, TokenBudget(None))
        try:
            records = sessions(memory)
            play(memory, records)
            assert len(memory.bot.store.get(f"default/{A}").steps) == 2
            b_steps = memory.bot.store.get(f"default/{B}").steps
            rows = [r for r in memory.revisions.log if r["prior_revision"] is not None]
        finally:
            memory.close()
        assert [(r["key"], r["proposed_at"]) for r in rows] == [(B, 4)]
        assert b_steps[-1] == "Keep the reply brief: at most 120 words"
        memo = records[4]["reflections"]
        assert memo[f"{A}@1"]["step"] is None and "no step" in memo[f"{A}@1"]["error"]
        assert [r.kind for r in server.requests].count("revision") == 2


def test_the_checker_fallback_and_the_offline_directives():
    memory = GraphMemory(0.0, seed=0, evolve_every=100, revise_every=5)
    try:
        memory.now = 0
        memory.add_learned(LEARNED)
        play(memory, sessions(memory))
        assert memory.bot.store.get(f"default/{A}").steps[-1] == LESSON + WORST
    finally:
        memory.close()
    assert directive(SHORT) == "Keep the reply brief: at most 120 words"
    assert directive(Check("not_regex", "\\bTCS\\b").describe()) == (
        "Never write anything that matches the pattern \\bTCS\\b"
    )
    assert directive(Check("contains_any", ["SIP", "index"]).describe()) == (
        "Include at least one of: SIP, index"
    )
    assert directive("judge: vague") == "Make sure the reply passes: judge: vague"


@pytest.mark.parametrize("value", ["reflection", "checker"])
def test_the_revision_step_key_takes_its_two_values(value):
    cfg = compose_job("live", [f"live.revision_step={value}"])
    assert settings_from_config(cfg).revision_step == value


def test_an_unknown_revision_step_is_refused_naming_the_key():
    cfg = compose_job("live", ["live.revision_step=judge"])
    with pytest.raises(ParameterError, match=r"live\.revision_step") as err:
        settings_from_config(cfg)
    assert "judge" in str(err.value) and "checker" in str(err.value)
