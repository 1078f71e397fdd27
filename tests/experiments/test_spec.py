"""A job's config read once (issue 24 item 2): ``experiments.spec.build_spec`` turns a
composed config into a validated, frozen ``JobSpec``, and ``experiments.job`` reads only
the spec after it is built."""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from experiments import spec as spec_module
from experiments.identity import flatten
from experiments.job import run_job
from experiments.run import compose_job
from experiments.spec import JobContext, build_spec
from procmem_core.errors import ParameterError
from simulators import SCENARIOS
from simulators.parallel import available_cores

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())


def test_a_spec_holds_the_scenario_identity_seed_name_tags_and_target():
    overrides = ["case=gate_sprt", "gate.alpha=0.1", "scenario.replications=2000"]
    cfg = compose_job("quickstart", overrides)
    ctx = JobContext(out_dir=Path("."), job_num=4, overrides=overrides, concurrent_jobs=1)
    spec = build_spec(cfg, ctx)
    assert (spec.task, spec.label, spec.seed, spec.resume) == ("scenario", "gate", 0, False)
    assert isinstance(spec.scenario, SCENARIOS.get("gate", "scenario.name"))
    assert spec.scenario.gate.alpha == 0.1 and spec.scenario.replications == 2000
    assert spec.scenario.ledger_size is None and spec.scenario.drops == (0.0, 0.05, 0.1, 0.15, 0.2)
    assert spec.task_module is None and spec.task_config is None
    # the gate scenario reads the gate, cost_gate and feedback groups, and nothing else
    assert spec.groups == ("cost_gate", "feedback", "gate")
    assert set(spec.identity) == {"task", "seed", "scenario", "cost_gate", "feedback", "gate"}
    assert spec.identity["gate"]["alpha"] == 0.1 and spec.identity["cost_gate"] is None
    # the hash and the seed, computed here from their definitions
    text = json.dumps(dict(spec.identity), sort_keys=True, separators=(",", ":"), default=str)
    assert spec.config_hash == hashlib.sha256(text.encode()).hexdigest()[:16]
    words = [int(spec.config_hash[i : i + 8], 16) for i in (0, 8)]
    state = np.random.SeedSequence([0, *words]).generate_state(2, dtype=np.uint32)
    assert spec.job_seed == ((int(state[0]) << 32) | int(state[1])) & ((1 << 63) - 1)
    assert dict(spec.params) == flatten(dict(spec.identity) | {"resume": False})
    assert spec.params["gate.alpha"] == "0.1" and spec.params["scenario.ledger_size"] == "None"
    # a single run is named for the values given on the command line (case is no param)
    assert spec.name == "gate: alpha 0.1, replications 2000"
    assert spec.tags["procmem.role"] == "single" and spec.tags["procmem.job_num"] == "4"
    assert spec.tags["procmem.config_hash"] == spec.config_hash
    assert spec.tags["procmem.job_seed"] == str(spec.job_seed)
    assert spec.tags["procmem.seed"] == "0" and spec.tags["procmem.preset"] == "quickstart"
    assert spec.tags["procmem.overrides"] == " ".join(overrides)
    assert spec.tags["procmem.ledger_size"] == "p0 known"
    assert "mlflow.parentRunId" not in spec.tags
    assert spec.tracking == spec_module.TrackingTarget("quickstart", None, None, False)
    assert (spec.workers, spec.progress) == (available_cores(), str(cfg.progress))
    assert spec.budget.seconds == 24 * 3600.0
    assert spec.config["gate"]["alpha"] == 0.1 and "hydra" not in spec.config


def test_a_sweep_job_spec_names_its_parent_and_the_keys_that_vary():
    added = ["++tracking.parent=p123", "++tracking.vary=[gate:gate.alpha]", "++tracking.uri=x"]
    overrides = ["case=gate_sprt", "gate.alpha=0.1", *added]
    ctx = JobContext(out_dir=Path("."), multirun=True, overrides=overrides, concurrent_jobs=2)
    spec = build_spec(compose_job("quickstart", overrides), ctx)
    assert spec.tracking == spec_module.TrackingTarget("quickstart", "x", "p123", False)
    assert spec.tags["mlflow.parentRunId"] == "p123" and spec.tags["procmem.role"] == "child"
    assert spec.tags["procmem.overrides"] == "case=gate_sprt gate.alpha=0.1"  # not the added
    assert spec.name == "gate: alpha 0.1" and spec.progress == "off"


def test_a_spec_is_frozen():
    spec = build_spec(compose_job("quickstart", ["case=fate_seed"]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.job_seed = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.params["seed"] = "1"  # type: ignore[index]
    with pytest.raises(TypeError):
        spec.tags["procmem.seed"] = "1"  # type: ignore[index]


def test_a_task_spec_gives_the_task_its_config_read_only():
    spec = build_spec(compose_job("seed_demo", []))
    assert (spec.task, spec.label, spec.scenario) == ("seed_demo", "seed_demo", None)
    assert spec.task_module.__name__ == "experiments.tasks.seed_demo"
    assert spec.groups == () and set(spec.identity) == {"task", "seed"}
    assert spec.task_config.task == "seed_demo"
    with pytest.raises(Exception, match="read-only"):
        spec.task_config.seed = 3


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("gate.alpha=1.5", "gate.alpha"),
        ("scenario.replications=0", "scenario.replications"),
        ("rule.reward=-0.1", "rule.reward"),
        ("budget.hours=-1", "budget.hours"),
        ("workers=0", "workers"),
    ],
)
def test_a_bad_value_is_refused_while_building_the_spec_naming_its_key(override, key):
    with pytest.raises(ParameterError) as caught:
        build_spec(compose_job("quickstart", ["case=gate_sprt", override]))
    assert caught.value.field == key
    assert str(caught.value).startswith(f"{key}=")


def test_a_sweep_job_without_its_parent_is_refused_naming_the_key():
    ctx = JobContext(out_dir=Path("."), multirun=True, overrides=["case=gate_sprt"])
    with pytest.raises(ParameterError) as caught:
        build_spec(compose_job("quickstart", ["case=gate_sprt"]), ctx)
    assert caught.value.field == "tracking.parent"
    assert "SweepTracking" in caught.value.allowed


def test_a_refused_job_touches_no_store(tmp_path):
    db = tmp_path / "mlflow.db"
    cfg = compose_job(
        "quickstart", ["case=gate_sprt", "gate.alpha=1.5", f"tracking.uri=sqlite:///{db}"]
    )
    with pytest.raises(ParameterError, match=r"gate\.alpha"):
        run_job(cfg, JobContext(out_dir=tmp_path / "job"))
    assert not db.exists() and not (tmp_path / "job").exists()


def test_the_run_logs_what_the_spec_says(tmp_path, tracking_store):
    overrides = ["case=fate_seed", "scenario.replications=300"]
    cfg = compose_job("quickstart", overrides)
    ctx = JobContext(out_dir=tmp_path / "job", overrides=overrides)
    spec = build_spec(cfg, ctx)
    outcome = run_job(cfg, ctx)
    run = MlflowClient(f"sqlite:///{tracking_store}").get_run(outcome.run_id)
    assert outcome.config_hash == spec.config_hash and run.info.run_name == spec.name
    assert run.data.params == dict(spec.params)
    assert dict(spec.tags).items() <= run.data.tags.items()
    again = spec.scenario.run(spec.job_seed).metrics  # the very numbers the run logged
    assert {k: float(v) for k, v in again.items()} == run.data.metrics


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def test_the_run_path_reads_the_spec_not_the_config():
    """``experiments/job.py``: ``run_job`` hands ``cfg`` to ``build_spec`` once, first
    thing, and no other function of the module takes or reads a config; the module asks
    ``experiments.build`` and ``experiments.identity`` nothing (no second derivation)."""
    tree = ast.parse((ROOT / "experiments" / "job.py").read_text(encoding="utf-8"))
    functions = {f.name: f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)}
    run_job_def = functions.pop("run_job")
    uses = [n for n in ast.walk(run_job_def) if isinstance(n, ast.Name) and n.id == "cfg"]
    calls = [
        c
        for c in ast.walk(run_job_def)
        if isinstance(c, ast.Call) and getattr(c.func, "id", None) == "build_spec"
    ]
    assert len(uses) == 1 and len(calls) == 1 and calls[0].args[0] is uses[0]
    body = [s for s in run_job_def.body if not isinstance(s, ast.Expr)]  # past the docstring
    after = body[next(i for i, s in enumerate(body) if "build_spec" in ast.unparse(s)) + 1 :]
    assert all("cfg" not in _names(s) for s in after)
    for name, function in functions.items():
        args = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
        assert "cfg" not in args and "cfg" not in _names(function), name
        assert "DictConfig" not in ast.unparse(function), name
    # the module's one use of OmegaConf: writing the spec's config as config.yaml
    omegaconf = [
        n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and _names(n) == {"OmegaConf"}
    ]
    assert [n.attr for n in omegaconf] == ["to_yaml"]
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not {"experiments.build", "experiments.identity"} & imported
    assert "run_spec" in functions and "spec" in {a.arg for a in functions["run_spec"].args.args}
