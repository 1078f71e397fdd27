"""The config tree: every preset composes and builds; every bad value is refused by name."""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import pytest
import yaml
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf

from experiments.build import build_scenario, tasks, validate
from experiments.callbacks import sweep_params
from experiments.run import compose_job as compose_config
from procmem_core.errors import ParameterError
from procmem_core.flat import DEFAULT_FILTER, DEFAULT_RULE, ConfidenceRule, PromptFilter
from procmem_core.gates import GATES, MarginGate, SPRTGate
from simulators import SCENARIOS

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())

PRESETS = (
    "quickstart", "gate_tuning", "explore_tradeoff", "confidence_sweep", "loop", "seed_demo",
    "learnings_review", "reflections_study",
)  # fmt: skip


def preset_variants(preset: str) -> list[list[str]]:
    """The sweep's two corners (every swept key at its first, then at its last value);
    for quickstart, whose sweep is a list of cases, every case."""
    params = {k: str(v).split(",") for k, v in sweep_params(compose_config(preset)).items()}
    if preset == "quickstart":
        return [[f"case={case}"] for case in params["case"]]
    return [[f"{k}={v[0]}" for k, v in params.items()], [f"{k}={v[-1]}" for k, v in params.items()]]


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_composes_and_its_jobs_build(preset):
    variants = preset_variants(preset)
    assert variants[0], f"{preset} has no hydra.sweeper.params"
    names = set()
    for overrides in variants:
        cfg = compose_config(preset, overrides)
        scenario = validate(cfg)
        assert cfg.tracking.experiment == preset
        if cfg.task == "scenario":
            assert type(scenario) is SCENARIOS[cfg.scenario.name]
            names.add(cfg.scenario.name)
        else:
            assert scenario is None and cfg.task in tasks()
    if preset == "quickstart":
        assert names == set(SCENARIOS), "quickstart covers every scenario family"


def test_groups_reach_the_engine_objects():
    cfg = compose_config(
        "gate_tuning",
        ["gate.alpha=0.01", "gate.at_cap=revert", "feedback=noisy", "scenario.drops=[0.0,0.3]"],
    )
    scenario = build_scenario(cfg)
    assert scenario.gate == SPRTGate(alpha=0.01, at_cap="revert")
    assert scenario.feedback.channel("flips").false_negative == pytest.approx(0.10)
    assert scenario.feedback.channel("missing").missing == pytest.approx(0.3)
    assert scenario.feedback.delay == 2
    assert tuple(scenario.drops)[:2] == (0.0, 0.3)
    margin = build_scenario(compose_config("gate_tuning", ["gate=margin"]))
    assert margin.gate == MarginGate()
    conf = build_scenario(compose_config("confidence_sweep", ["rule.threshold=0.45"]))
    assert conf.rule == DEFAULT_RULE and conf.threshold == 0.45 and conf.limit == 6


def test_explore_group_overrides_the_scenario_only_when_selected():
    base = build_scenario(compose_config("quickstart", ["case=explore_seed"]))
    chosen = build_scenario(compose_config("quickstart", ["case=explore_hajek"]))
    assert (base.estimator, chosen.estimator) == ("dim", "ipw")
    swept = build_scenario(compose_config("explore_tradeoff", ["explore.explore_rate=0.3"]))
    assert swept.explore_rate == 0.3


GATE_DEFAULTS = sorted(p.stem for p in (ROOT / "conf" / "gate").glob("*.yaml") if p.stem in GATES)
"""The gate files that are a gate's own defaults (``conf/gate/<name>.yaml``; ``sdk.yaml``
is a variant of ``sprt``)."""


@pytest.mark.parametrize("name", GATE_DEFAULTS)
def test_schema_defaults_are_the_engine_defaults(name):
    """``conf/gate/<name>.yaml``, composed, builds the class's default gate (compared with
    the class, not with literals)."""
    cfg = OmegaConf.to_container(compose_config("gate_tuning", [f"gate={name}"]).gate)
    assert cfg.pop("name") == name
    assert GATES[name](**cfg) == GATES[name]()


def test_the_seed_rule_file_is_the_engine_default_rule_and_filter():
    cfg = OmegaConf.to_container(compose_config("gate_tuning").rule)
    assert cfg.pop("name") == DEFAULT_RULE.name
    assert PromptFilter(cfg.pop("threshold"), cfg.pop("limit")) == DEFAULT_FILTER
    assert ConfidenceRule(**cfg) == DEFAULT_RULE


INVALID = [
    (["gate.alpha=1.5"], ParameterError, "gate.alpha=1.5"),
    (["gate.alpha=0"], ParameterError, "gate.alpha=0"),
    (["gate.alpha=0.6", "gate.beta=0.5"], ParameterError, "alpha + beta"),
    (["gate.name=bogus"], ParameterError,
     "gate.name='bogus' is not allowed: a registered gate: one of"),
    (["gate.at_cap=maybe"], ParameterError, "gate.at_cap='maybe'"),
    (["gate.max_runs=2", "gate.min_runs=3"], ParameterError, "gate."),
    (["rule.reward=-0.1"], ParameterError, "rule.reward=-0.1"),
    (["rule.penalty=-1"], ParameterError, "rule.penalty=-1"),
    (["rule.threshold=1.5"], ParameterError, "rule.threshold=1.5"),
    (["rule.limit=0"], ParameterError, "rule.limit=0"),
    (["users.base_rate=2"], ParameterError, "users.base_rate=2"),
    (["case=confidence_noisy", "feedback.missing.missing=1.0"], ParameterError,
     "feedback.missing.missing=1.0"),
    (["scenario.p_prior=1.5"], ParameterError, "scenario.p_prior=1.5"),
    (["scenario.replications=0"], ParameterError, "scenario.replications=0"),
    (["case=explore_hajek", "explore.explore_rate=1.5"], ParameterError,
     "explore.explore_rate=1.5"),
    (["case=loop_seed", "explore.explore_rate=-0.1"], ParameterError,
     "explore.explore_rate=-0.1"),
    (["task=nope"], ParameterError,
     "task='nope' is not allowed: one of ('live', 'llm_replay', 'scenario'"),
    (["seed=-1"], ParameterError, "seed=-1"),
    (["progress=sometimes"], ParameterError, "progress='sometimes'"),
    (["scenario.replications=1000000000000"], ParameterError,
     "scenario.replications=1000000000000 is not allowed: a run within the budget"),
    (["budget.memory_fraction=2"], ParameterError, "budget.memory_fraction=2"),
    (["budget.hours=0"], ParameterError, "budget.hours=0"),
    (["gate.alpha=abc"], HydraException, "full_key: gate.alpha"),
    (["rule.limit=1.5"], HydraException, "could not be converted to Integer"),
    (["scenario.bogus=1"], HydraException, "Key 'bogus' not in 'GateScenarioConf'"),
    (["gate=bogus"], HydraException, "Available options"),
]  # fmt: skip


@functools.cache
def base_config(case: str | None) -> DictConfig:
    return compose_config("quickstart", [f"case={case}"])


def with_overrides(overrides: list[str], through_hydra: bool) -> DictConfig:
    """Compose through Hydra (the rows about types, unknown keys and group options), or
    set the values on a copy of a composed config: the same typed nodes, much faster."""
    if through_hydra:
        return compose_config("quickstart", ["case=gate_sprt", *overrides])
    case = next((o.split("=")[1] for o in overrides if o.startswith("case=")), "gate_sprt")
    cfg = copy.deepcopy(base_config(case))
    for o in overrides:
        key, value = o.split("=", 1)
        if key != "case":
            OmegaConf.update(cfg, key, yaml.safe_load(value), merge=False)
    return cfg


@pytest.mark.parametrize(("overrides", "error", "fragment"), INVALID)
def test_invalid_values_are_refused_naming_key_value_and_allowed(overrides, error, fragment):
    with pytest.raises(error) as info:
        validate(with_overrides(overrides, through_hydra=error is HydraException))
    message = f"{info.value}\n{info.value.__cause__}"  # Hydra wraps OmegaConf's error
    assert fragment in message
    if error is ParameterError:
        assert "is not allowed:" in message


def test_a_task_checks_its_own_keys_before_any_run():
    with pytest.raises(ParameterError, match=r"llm\.temperature=-1 is not allowed"):
        validate(compose_config("llm_replay", ["llm.temperature=-1"]))


def test_launcher_options_compose(monkeypatch):
    local = compose_config("quickstart").hydra.launcher
    assert local._target_.endswith("ProcessLauncher") and local.n_jobs == 2
    pytest.importorskip(
        "hydra_plugins.hydra_ray_launcher", reason="the `ray` extra is not installed"
    )
    monkeypatch.setenv("RAY_ADDRESS", "ray://head:10001")
    ray = compose_config("quickstart", ["hydra/launcher=ray_cluster"]).hydra.launcher
    assert ray._target_.endswith("RayLauncher") and ray.ray.init.address == "ray://head:10001"
    monkeypatch.delenv("RAY_ADDRESS")
    assert (
        compose_config("quickstart", ["hydra/launcher=ray_cluster"]).hydra.launcher.ray.init.address
        is None
    )
