"""The llm_replay task: the seed's two-session flow, its artifacts, metrics, cache and errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from experiments.tasks.llm_replay import SESSION_1, SESSION_2, run_task
from procmem_core.errors import ParameterError
from procmem_core.flat import BASE_PROMPT, PROCEDURES_HEADING
from procmem_core.learn.extraction import ExtractionError, LearnError
from simulators.llm_server import Fault, OfflineServer

CONF = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists()) / "conf"


def replay_config(llm: str = "offline", **overrides):
    """The preset's own files (llm group + experiment body), as Hydra would merge them."""
    preset = OmegaConf.load(CONF / "experiment" / "llm_replay.yaml")
    body = {k: v for k, v in preset.items() if k != "defaults"}
    cfg = OmegaConf.merge(
        body,
        {"llm": OmegaConf.load(CONF / "llm" / f"{llm}.yaml")},
        {"rule": {"threshold": 0.55, "limit": 6}},
    )
    for key, value in overrides.items():
        OmegaConf.update(cfg, key, value, force_add=True)
    return cfg


def read(out: Path, name: str) -> str:
    return (out / "artifacts" / name).read_text(encoding="utf-8")


def test_preset_matches_the_seed_session_texts():
    cfg = replay_config()
    assert tuple(cfg.replay.session_1) == SESSION_1
    assert cfg.replay.session_2 == SESSION_2
    assert cfg.llm.endpoint == "offline" and cfg.llm.max_tokens >= 2000


def test_offline_replay_writes_every_artifact_and_metric(tmp_path):
    result = run_task(replay_config(), tmp_path)
    assert read(tmp_path, "system_prompt_1.txt") == BASE_PROMPT
    session_1 = json.loads(read(tmp_path, "session_1.json"))
    assert [m["role"] for m in session_1] == ["user", "assistant"] * 2
    assert session_1[0]["content"] == SESSION_1[0]
    procedures = json.loads(read(tmp_path, "procedures.json"))
    titles = [p["title"] for p in procedures["procedures"]]
    assert len(titles) == 3 and procedures["dropped"] == []
    candidates = json.loads(read(tmp_path, "candidates.json"))
    assert [c["name"] for c in candidates] == titles
    assert {c["status"] for c in candidates} == {"candidate"}
    prompt_2 = read(tmp_path, "system_prompt_2.txt")
    assert prompt_2.startswith(BASE_PROMPT) and PROCEDURES_HEADING in prompt_2
    session_2 = json.loads(read(tmp_path, "session_2.json"))
    assert session_2[0]["content"] == SESSION_2
    for title in titles:
        assert title in prompt_2
        assert f"Following '{title}'" in session_2[1]["content"]
    assert "USER: " + SESSION_2 in read(tmp_path, "session_2.txt")
    m = result.metrics
    assert (m["n_procedures"], m["n_dropped"], m["n_shown_session_2"]) == (3, 0, 3)
    assert (m["failed"], m["failed_stage"], m["n_calls"], m["n_cached_calls"]) == (0, 0, 4, 0)
    calls = result.tables["calls"]
    assert list(calls["purpose"]) == ["chat", "chat", "extraction", "chat"]
    assert m["tokens_total"] == calls["total_tokens"].sum() > 0
    # the extraction call reasons with low effort; chat sends the seed's arguments and no
    # reasoning effort, so the offline model reasons only once
    assert m["tokens_reasoning"] == 48
    assert m["tokens_learn"] == calls.loc[2, "total_tokens"]
    assert m["latency_s_total"] >= m["latency_s_learn"] > 0
    assert not (tmp_path / "artifacts" / "error.json").exists()


def test_cached_rerun_costs_nothing_and_gives_the_same_text(tmp_path):
    cache = str(tmp_path / "replies.sqlite")
    first = run_task(replay_config(**{"llm.cache": cache}), tmp_path / "a")
    again = run_task(replay_config(**{"llm.cache": cache}), tmp_path / "b")
    assert first.metrics["n_cached_calls"] == 0 and first.metrics["tokens_total"] > 0
    assert again.metrics["n_cached_calls"] == again.metrics["n_calls"] == 4
    assert again.metrics["tokens_total"] == 0
    for name in ("session_1.txt", "procedures.json", "system_prompt_2.txt", "session_2.txt"):
        assert read(tmp_path / "a", name) == read(tmp_path / "b", name)


def remote(server: OfflineServer, **overrides):
    return replay_config(**{"llm.endpoint": "remote", "llm.base_url": server.base_url, **overrides})


def test_any_endpoint_by_configuration_and_an_error_is_recorded(tmp_path):
    with OfflineServer() as server:
        server.inject(*[Fault("truncate", only="extraction")] * 2)
        result = run_task(remote(server, **{"replay.on_error": "record"}), tmp_path)
        assert [r.kind for r in server.requests] == ["chat", "chat", "extraction", "extraction"]
    error = json.loads(read(tmp_path, "error.json"))
    assert error["stage"] == "learn" and error["reason"] == "truncated"
    assert len(error["attempts"]) == 2 and error["raw"] == error["attempts"][1]
    assert len(json.loads(read(tmp_path, "session_1.json"))) == 4  # kept
    assert not (tmp_path / "artifacts" / "system_prompt_2.txt").exists()
    m = result.metrics
    assert (m["failed"], m["failed_stage"], m["n_calls"], m["n_truncated_replies"]) == (1, 2, 4, 2)


def test_on_error_raise_reraises_after_recording(tmp_path):
    with OfflineServer() as server:
        server.inject(Fault("reply", content="[]", only="extraction"))
        with pytest.raises(ExtractionError, match="shape"):
            run_task(remote(server, **{"replay.on_error": "raise"}), tmp_path)
    assert json.loads(read(tmp_path, "error.json"))["raw"] == "[]"


def test_a_chat_failure_in_session_2_keeps_the_learned_procedures(tmp_path):
    with OfflineServer() as server:
        passing = Fault("slow", 0.0, only="chat")  # a slow reply of no delay: a normal one
        server.inject(passing, passing, Fault("bad_request", only="chat"))
        result = run_task(remote(server, **{"replay.on_error": "record"}), tmp_path)
    assert (result.metrics["failed_stage"], result.metrics["n_procedures"]) == (3, 3)
    error = json.loads(read(tmp_path, "error.json"))
    assert (error["type"], error["status"], error["stage"]) == ("LLMCallError", 400, "session_2")
    assert len(json.loads(read(tmp_path, "procedures.json"))["procedures"]) == 3
    assert PROCEDURES_HEADING in read(tmp_path, "system_prompt_2.txt")
    assert not (tmp_path / "artifacts" / "session_2.json").exists()


BAD = [
    ({"llm.endpoint": "cloud"}, "llm.endpoint"),
    ({"llm.endpoint": "remote"}, "llm.base_url"),
    ({"llm.base_url": "http://127.0.0.1:9/v1"}, "llm.base_url"),
    ({"llm.temperature": 3.0}, "llm.temperature"),
    ({"llm.max_tokens": 0}, "llm.max_tokens"),
    ({"llm.policy": "repair"}, "llm.policy"),
    ({"llm.max_token": 10}, "llm.max_token"),
    ({"llm.cache": ""}, "llm.cache"),
    ({"replay.on_error": "ignore"}, "replay.on_error"),
    ({"replay.session_1": []}, "replay.session_1"),
    ({"replay.session_2": " "}, "replay.session_2"),
    ({"rule.threshold": 1.5}, "rule.threshold"),
    ({"rule.limit": 0}, "rule.limit"),
]


@pytest.mark.parametrize(("overrides", "fragment"), BAD)
def test_invalid_replay_config_is_refused_before_any_work(tmp_path, overrides, fragment):
    with pytest.raises(ParameterError, match=fragment):
        run_task(replay_config(**overrides), tmp_path)
    assert not (tmp_path / "artifacts").exists()


def test_missing_api_key_is_refused_before_any_call(tmp_path, monkeypatch):
    monkeypatch.delenv("PROCMEM_NO_SUCH_KEY", raising=False)
    with OfflineServer() as server:
        with pytest.raises(ParameterError, match="PROCMEM_NO_SUCH_KEY"):
            run_task(remote(server, **{"llm.api_key_env": "PROCMEM_NO_SUCH_KEY"}), tmp_path)
        assert server.requests == []


def test_the_groq_preset_is_the_seeds_endpoint():
    llm = replay_config("groq").llm
    assert (llm.base_url, llm.model, llm.api_key_env) == (
        "https://api.groq.com/openai/v1",
        "openai/gpt-oss-120b",
        "GROQ_API_KEY",
    )
    assert (llm.reasoning_effort, llm.max_tokens) == ("low", 2000)


def compose(*overrides: str):
    """The job config ``experiment=llm_replay`` runs, HydraConfig set as during a run."""
    from experiments.run import compose_job

    return compose_job("llm_replay", overrides)


def test_preset_composes_with_the_config_tree_and_runs(tmp_path):
    from experiments.build import validate

    cfg = compose("llm.reasoning_effort=null", "rule.limit=2")
    assert validate(cfg) is None  # a task, not a scenario
    result = run_task(cfg, tmp_path)
    assert (result.metrics["tokens_reasoning"], result.metrics["n_shown_session_2"]) == (0, 2)
    groq = compose("llm=groq").llm
    assert groq.model == "openai/gpt-oss-120b" and groq.endpoint == "remote"
    # any endpoint from the command line, with no '+' (every key exists in every llm option)
    other = compose("llm.endpoint=remote", "llm.base_url=http://127.0.0.1:9/v1", "llm.cache=x")
    assert (other.llm.base_url, other.llm.cache) == ("http://127.0.0.1:9/v1", "x")


def test_the_seed_prompt_and_the_assistants_advice_give_the_seeds_observed_outcome(tmp_path):
    cfg = replay_config(**{"llm.prompt": "seed", "llm.offline_extraction": "assistant_advice"})
    result = run_task(cfg, tmp_path)
    titles = [p["title"] for p in json.loads(read(tmp_path, "procedures.json"))["procedures"]]
    assert set(titles) == {
        "Verify emergency fund before new investments",
        "Allocate maturing FD for risk-averse users",
        "Annual fund monitoring and rebalancing",
    }
    assert "worst" not in read(tmp_path, "system_prompt_2.txt").lower()  # what the seed saw
    assert result.metrics["n_shown_session_2"] == 3


SEED_TITLES = {
    "Verify emergency fund before new investments",
    "Allocate maturing FD for risk-averse users",
    "Annual fund monitoring and rebalancing",
}


def test_the_default_replay_reproduces_the_seeds_observation(tmp_path):
    """Issue 25 item 7: by default the model turns its own advice into rules."""
    cfg = replay_config()
    assert cfg.llm.offline_extraction == "assistant_advice"
    run_task(cfg, tmp_path)
    titles = [p["title"] for p in json.loads(read(tmp_path, "procedures.json"))["procedures"]]
    assert set(titles) == SEED_TITLES
    assert "worst" not in read(tmp_path, "system_prompt_2.txt").lower()
    null = replay_config(**{"llm.offline_extraction": None})
    run_task(null, tmp_path / "null")
    assert read(tmp_path / "null", "system_prompt_2.txt") == read(tmp_path, "system_prompt_2.txt")


def test_user_requests_is_the_named_alternative(tmp_path):
    run_task(replay_config(**{"llm.offline_extraction": "user_requests"}), tmp_path)
    titles = [p["title"] for p in json.loads(read(tmp_path, "procedures.json"))["procedures"]]
    assert "Quantify the worst case" in titles and not set(titles) >= SEED_TITLES
    assert "worst case" in read(tmp_path, "system_prompt_2.txt").lower()


def test_a_title_collision_is_counted_and_both_procedures_are_kept(tmp_path):
    reply = json.dumps(
        {"procedures": [
            {"title": "Quantify the worst case", "trigger": "t", "description": "d.",
             "confidence": 0.7},
            {"title": "Quantify the worst-case!", "trigger": "t", "description": "e.",
             "confidence": 0.7},
            {"title": "आपातकालीन निधि", "trigger": "t", "description": "f.", "confidence": 0.7},
        ]}
    )  # fmt: skip
    with OfflineServer() as server:
        server.inject(Fault("reply", content=reply, only="extraction"))
        result = run_task(remote(server), tmp_path)
    candidates = json.loads(read(tmp_path, "candidates.json"))
    assert [c["ref"] for c in candidates] == [
        "default/procedure_quantify_the_worst_case",
        "default/procedure_quantify_the_worst_case_2",
        "default/procedure_आपातकालीन_निधि",
    ]
    m = result.metrics
    assert (m["failed"], m["n_candidates"], m["n_key_collisions"]) == (0, 3, 1)


def test_a_procedure_the_store_refuses_is_a_failed_candidates_stage(tmp_path, monkeypatch):
    from procmem_core.errors import ParameterError as StoreRefusal
    from procmem_core.graph import ProcedureStore

    real_add = ProcedureStore.add

    def refusing(self, name, *args, **kwargs):
        if name == "Quantify the worst case":
            raise StoreRefusal("name", name, "refused by this test")
        return real_add(self, name, *args, **kwargs)

    monkeypatch.setattr(ProcedureStore, "add", refusing)
    overrides = {"replay.on_error": "record", "llm.offline_extraction": "user_requests"}
    result = run_task(replay_config(**overrides), tmp_path)
    m = result.metrics
    assert (m["failed"], m["failed_stage"], m["n_candidate_failures"]) == (1, 4, 1)
    assert m["n_candidates"] == 2
    error = json.loads(read(tmp_path, "error.json"))
    assert error["stage"] == "candidates" and error["type"] == "CandidateError"
    assert error["failures"][0]["title"] == "Quantify the worst case"
    assert len(json.loads(read(tmp_path, "candidates.json"))) == 2  # the others are kept
    with pytest.raises(LearnError, match="could not be stored"):
        run_task(replay_config(**{"llm.offline_extraction": "user_requests"}), tmp_path / "raised")
