"""Issue 25 item 5: the seed's setting names (``LOOM_*``) beside procmem's (``PROCMEM_*``);
both set to different values is refused naming both."""

from __future__ import annotations

import pytest

from procmem_core.env import EnvConflict, read_env, seed_name
from procmem_core.errors import ParameterError
from procmem_core.graph import ProcedureStore
from procmem_core.learnings import LearningsSettings
from procmem_core.reflections import DistillSettings

STRIKE, SEED_STRIKE = "PROCMEM_PROCEDURE_STRIKE_LIMIT", "LOOM_PROCEDURE_STRIKE_LIMIT"


def test_the_seed_strike_limit_name_is_read(monkeypatch):
    monkeypatch.delenv(STRIKE, raising=False)
    monkeypatch.setenv(SEED_STRIKE, "7")
    assert ProcedureStore().strike_limit == 7
    monkeypatch.setenv(STRIKE, "7")  # both, the same value
    assert ProcedureStore().strike_limit == 7
    monkeypatch.setenv(STRIKE, " ")  # blank is not set
    assert ProcedureStore().strike_limit == 7


def test_two_strike_limits_that_differ_are_refused_naming_both(monkeypatch):
    monkeypatch.setenv(STRIKE, "2")
    monkeypatch.setenv(SEED_STRIKE, "7")
    with pytest.raises(EnvConflict) as err:
        ProcedureStore()
    assert f"{STRIKE}='2'" in str(err.value)
    assert f"{SEED_STRIKE}='7'" in str(err.value)


def test_a_bad_seed_strike_limit_names_the_seed_variable(monkeypatch):
    monkeypatch.delenv(STRIKE, raising=False)
    monkeypatch.setenv(SEED_STRIKE, "-1")
    with pytest.raises(ParameterError, match=SEED_STRIKE):
        ProcedureStore()


def test_the_seed_distill_names_are_read():
    env = {"LOOM_REFLECTION_DISTILL_MAX_PAIRS": "4", "LOOM_REFLECTION_DISTILL_ENABLED": "1"}
    got = DistillSettings.from_env(env)
    assert (got.max_pairs, got.enabled) == (4, True)
    both = {**env, "PROCMEM_REFLECTION_DISTILL_ENABLED": "true"}  # the same flag
    assert DistillSettings.from_env(both).enabled is True
    with pytest.raises(EnvConflict, match="PROCMEM_REFLECTION_DISTILL_MAX_PAIRS='5'"):
        DistillSettings.from_env({**env, "PROCMEM_REFLECTION_DISTILL_MAX_PAIRS": "5"})


def test_the_seed_agent_learnings_name_is_read():
    seed = "LOOM_MEMORY_EXTRACT_AGENT_LEARNINGS"
    assert LearningsSettings.from_env({seed: "on"}).agent_learnings is True
    assert LearningsSettings.from_env({seed: "on", f"PROCMEM_{seed[5:]}": "1"}).agent_learnings
    with pytest.raises(EnvConflict) as err:
        LearningsSettings.from_env({seed: "true", "PROCMEM_MEMORY_EXTRACT_AGENT_LEARNINGS": "0"})
    assert seed in str(err.value) and "PROCMEM_MEMORY_EXTRACT_AGENT_LEARNINGS" in str(err.value)


def test_read_env_maps_names_and_quotes_a_short_prefix():
    assert seed_name("PROCMEM_X") == "LOOM_X"
    with pytest.raises(ParameterError, match="name='X'"):
        seed_name("X")
    assert read_env({}, "PROCMEM_X", lambda n, r: r) is None
    with pytest.raises(EnvConflict) as err:
        read_env({"PROCMEM_X": "a" * 5000, "LOOM_X": "b"}, "PROCMEM_X", lambda n, r: r)
    assert len(str(err.value)) < 400


def test_a_queue_built_without_settings_reads_the_seed_agent_learnings_name(monkeypatch):
    """The seed turns extraction of bot rules on with LOOM_MEMORY_EXTRACT_AGENT_LEARNINGS
    (docs/learnings.md: off by default, env ... or the seed's name), as the procedure
    store reads LOOM_PROCEDURE_STRIKE_LIMIT when built without a strike limit; a
    LearningsQueue() built without settings ignored the variable and filed nothing."""
    from procmem_core.learnings import LearningsQueue
    from procmem_core.memory import Principal

    bot = Principal("bot-token", role="writer", agent="triage-bot")
    monkeypatch.delenv("PROCMEM_MEMORY_EXTRACT_AGENT_LEARNINGS", raising=False)
    monkeypatch.setenv("LOOM_MEMORY_EXTRACT_AGENT_LEARNINGS", "true")
    queue = LearningsQueue()
    assert queue.settings.agent_learnings is True
    filed = queue.file_agent_rule(
        "always cite the policy section", principal=bot, agent="triage-bot", user_id="u1",
        session_id="s1", quotes=["always cite the policy section"],
    )  # fmt: skip
    assert filed is not None and filed.agent == "triage-bot"
    assert LearningsQueue(settings=LearningsSettings()).settings.agent_learnings is False
    monkeypatch.setenv("PROCMEM_MEMORY_EXTRACT_AGENT_LEARNINGS", "0")
    with pytest.raises(EnvConflict):
        LearningsQueue()


def test_a_distill_worker_built_without_settings_reads_the_seed_names(monkeypatch):
    """LOOM_REFLECTION_DISTILL_* set the worker a caller builds without settings, as the
    strike limit's seed name sets a store's; a DistillWorker(memory) ignored them."""
    from procmem_core.memory import MemoryStore
    from procmem_core.reflections import DistillWorker

    for name in ("ENABLED", "MAX_PAIRS", "SIMILARITY_FLOOR"):
        monkeypatch.delenv(f"PROCMEM_REFLECTION_DISTILL_{name}", raising=False)
    monkeypatch.setenv("LOOM_REFLECTION_DISTILL_MAX_PAIRS", "4")
    monkeypatch.setenv("LOOM_REFLECTION_DISTILL_SIMILARITY_FLOOR", "0.7")
    worker = DistillWorker(MemoryStore())
    assert (worker.settings.max_pairs, worker.settings.similarity_floor) == (4, 0.7)
    assert DistillWorker(MemoryStore(), settings=DistillSettings()).settings.max_pairs == 10
    monkeypatch.setenv("LOOM_REFLECTION_DISTILL_ENABLED", "true")  # enabled: needs a model
    with pytest.raises(ParameterError, match="config"):
        DistillWorker(MemoryStore())


def test_a_blank_setting_is_not_set_under_either_name(monkeypatch):
    """An exported but empty variable is not set, for every setting as for the strike
    limit (a blank LOOM_MEMORY_EXTRACT_AGENT_LEARNINGS raised 'expected true/false')."""
    blank = {"LOOM_MEMORY_EXTRACT_AGENT_LEARNINGS": "", "PROCMEM_REFLECTION_DISTILL_MAX_PAIRS": " "}
    assert LearningsSettings.from_env(blank).agent_learnings is False
    assert DistillSettings.from_env(blank).max_pairs == 10
    both = {"LOOM_REFLECTION_DISTILL_MAX_PAIRS": "4", "PROCMEM_REFLECTION_DISTILL_MAX_PAIRS": ""}
    assert DistillSettings.from_env(both).max_pairs == 4
