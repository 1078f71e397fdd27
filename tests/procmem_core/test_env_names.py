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
