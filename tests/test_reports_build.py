"""A small sweep logged straight through the MLflow client, following the tracking contract.

It runs the real simulators (few replications) and logs each job as a child run of one
parent: params are the flattened config (``gate.alpha``, ``scenario.p_prior``, ...),
tags ``procmem.scenario``/``procmem.config_hash``/``procmem.seed``, metrics, and
``tables/<name>.parquet``. Used to test the reading side and the report without Hydra;
the end-to-end test (tests/test_reports_sweep.py) uses a real sweep instead.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

from procmem_core.flat import ConfidenceRule
from procmem_core.gates import SPRTGate
from simulators.scenarios.confidence import ConfidenceScenario
from simulators.scenarios.explore import ExploreScenario
from simulators.scenarios.fate import ProcedureFateScenario
from simulators.scenarios.gate import GateScenario

RULE = {"initial": 0.6, "floor": 0.0, "ceiling": 1.0, "threshold": 0.55, "limit": 6}


def _jobs():
    for alpha in (0.05, 0.1):
        for ledger in (None, 30):
            gate = {"name": "sprt", "min_drop": 0.15, "alpha": alpha, "beta": 0.2,
                    "max_runs": 50, "min_runs": 3, "at_cap": "llr", "prior": "plugin"}
            scen = {"name": "gate", "p_prior": 0.8, "ledger_size": ledger, "replications": 600}
            sc = GateScenario(
                SPRTGate(alpha=alpha), p_prior=0.8, ledger_size=ledger, replications=600,
                drops=(0.0, 0.05, 0.1, 0.15, 0.2),
            )
            yield "gate", {"gate": gate, "scenario": scen, "rule": RULE}, sc
    for reward in (0.08, 0.12):
        for penalty in (0.1, 0.15):
            rule = RULE | {"reward": reward, "penalty": penalty}
            scen = {"name": "confidence", "sessions": 30, "replications": 300}
            sc = ConfidenceScenario(
                rule=ConfidenceRule(reward=reward, penalty=penalty), sessions=30,
                replications=300,
            )
            yield "confidence", {"scenario": scen, "rule": rule}, sc
    for p in (0.5, 0.8):
        scen = {"name": "fate", "p": p, "sessions": 20, "replications": 2000}
        rule = RULE | {"reward": 0.08, "penalty": 0.15}
        yield "fate", {"scenario": scen, "rule": rule}, ProcedureFateScenario(
            p=p, sessions=20, replications=2000
        )
    for rate in (0.1, 0.3):
        for sessions in (200, 800):
            scen = {"name": "explore", "explore_rate": rate, "sessions": sessions,
                    "replications": 60}
            yield "explore", {"scenario": scen, "rule": RULE}, ExploreScenario(
                explore_rate=rate, sessions=sessions, replications=60
            )


def flatten(data: dict, prefix: str = "") -> dict[str, str]:
    out = {}
    for k, v in data.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = str(v)
    return out


def log_fixture_sweep(uri: str, experiment: str = "fixture", fail_one: bool = False) -> str:
    """Log the sweep; return the parent run id."""
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    exp_id = exp.experiment_id if exp else client.create_experiment(experiment)
    parent = client.create_run(exp_id, tags={"procmem.role": "parent"}, run_name="sweep")
    pid = parent.info.run_id
    for i, (scenario, config, sc) in enumerate(_jobs()):
        params = flatten(config) | {"seed": "0"}
        digest = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:16]
        tags = {"mlflow.parentRunId": pid, "procmem.scenario": scenario,
                "procmem.config_hash": digest, "procmem.seed": "0"}
        run = client.create_run(exp_id, tags=tags, run_name=f"job-{i}")
        rid = run.info.run_id
        result = sc.run(i)
        client.log_batch(
            rid,
            metrics=[Metric(k, float(v), 0, 0) for k, v in result.metrics.items()],
            params=[Param(k, v) for k, v in params.items()],
            tags=[RunTag(k, v) for k, v in tags.items()],
        )
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "tables"
            folder.mkdir()
            for name, table in result.tables.items():
                table.to_parquet(folder / f"{name}.parquet")
            client.log_artifacts(rid, str(folder), "tables")
        client.set_terminated(rid, "FAILED" if fail_one and i == 0 else "FINISHED")
    client.set_terminated(pid, "FINISHED")
    return pid
