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
            gate = {
                "name": "sprt",
                "min_drop": 0.15,
                "alpha": alpha,
                "beta": 0.2,
                "max_runs": 50,
                "min_runs": 3,
                "at_cap": "llr",
                "prior": "plugin",
            }
            scen = {"name": "gate", "p_prior": 0.8, "ledger_size": ledger, "replications": 300}
            sc = GateScenario(
                SPRTGate(alpha=alpha),
                p_prior=0.8,
                ledger_size=ledger,
                replications=300,
                drops=(0.0, 0.05, 0.1, 0.15, 0.2),
            )
            yield "gate", {"gate": gate, "scenario": scen, "rule": RULE}, sc
    for reward in (0.08, 0.12):
        for penalty in (0.1, 0.15):
            rule = RULE | {"reward": reward, "penalty": penalty}
            scen = {"name": "confidence", "sessions": 30, "replications": 150}
            sc = ConfidenceScenario(
                rule=ConfidenceRule(reward=reward, penalty=penalty),
                sessions=30,
                replications=150,
            )
            yield "confidence", {"scenario": scen, "rule": rule}, sc
    for p in (0.5, 0.8):
        scen = {"name": "fate", "p": p, "sessions": 20, "replications": 1000}
        rule = RULE | {"reward": 0.08, "penalty": 0.15}
        yield (
            "fate",
            {"scenario": scen, "rule": rule},
            ProcedureFateScenario(p=p, sessions=20, replications=1000),
        )
    for rate in (0.1, 0.3):
        for sessions in (200, 800):
            scen = {
                "name": "explore",
                "explore_rate": rate,
                "sessions": sessions,
                "replications": 40,
            }
            yield (
                "explore",
                {"scenario": scen, "rule": RULE},
                ExploreScenario(explore_rate=rate, sessions=sessions, replications=40),
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
        tags = {
            "mlflow.parentRunId": pid,
            "procmem.scenario": scenario,
            "procmem.config_hash": digest,
            "procmem.seed": "0",
        }
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


# ---------------------------------------------------------------- tests

import re  # noqa: E402

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from reports.__main__ import main  # noqa: E402
from reports.errors import NoSweepError  # noqa: E402
from reports.gate_section import gate_section  # noqa: E402
from reports.gate_tables import gate_runs  # noqa: E402
from reports.recommend import GateTargets  # noqa: E402
from reports.source import load_sweep  # noqa: E402
from reports.summary import sweep_section  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    pid = log_fixture_sweep(uri, fail_one=True)
    from mlflow.tracking import MlflowClient

    MlflowClient(uri).create_experiment("empty")
    return uri, pid


@pytest.fixture(scope="module")
def sweep(store):
    uri, _ = store
    return load_sweep("fixture", uri=uri)


def test_cli_report_from_logged_sweep(store, tmp_path, monkeypatch, capsys):
    uri, pid = store
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert main(["fixture", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert out.out.strip() == str(tmp_path / "index.html")
    md = (tmp_path / "report.md").read_text()
    titles = re.findall(r"^## (.+)$", md, flags=re.M)
    assert titles == [
        "Revision gates: which gate to use",
        "Confidence rule: which reward, penalty and threshold",
        "One procedure's fate under the flat rule",
        "Explore rate: how much to withhold",
        "Withheld vs shown: the A/B table",
        "Simulation against exact answers",
        "What this sweep ran",
    ]
    assert "No swept gate meets the targets" in md
    for title in titles:  # each section opens with one answering sentence
        answer = md.split(f"## {title}\n\n", 1)[1].split("\n", 1)[0]
        assert answer.endswith(".") and len(answer) > 40
        assert f"[{title}] {answer}" in out.err
    pngs = sorted(tmp_path.glob("*.png"))
    assert len(pngs) >= 8
    for f in pngs:
        data = f.read_bytes()
        assert data.startswith(PNG) and len(data) > 5000
        assert f"({f.name})" in md
    html = (tmp_path / "index.html").read_text()
    assert html.count("data:image/png;base64,") == len(pngs)
    assert ".png'" not in html  # self-contained: no image files referenced
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert len(summary) == 14 and summary["run_id"].is_unique
    assert {"gate.alpha", "rule.reward", "false_revert_rate", "false_revert_rate_se"} <= set(
        summary.columns
    )
    from mlflow.tracking import MlflowClient

    logged = {a.path for a in MlflowClient(uri).list_artifacts(pid, "report")}
    assert {"report/index.html", "report/report.md", "report/summary.csv"} <= logged
    assert {f"report/{f.name}" for f in pngs} <= logged


def test_failed_child_is_listed_but_left_out(sweep):
    assert (sweep.runs["status"] == "FAILED").sum() == 1
    assert "1 job(s) FAILED" in sweep_section(sweep).answer
    gates = gate_runs(sweep)
    assert len(gates.rows) == 3  # the failed job was the first gate run
    assert "alpha=0.05" in set(gates.rows["config"])


def test_gate_targets_change_the_pick(sweep):
    # with the default targets nothing is feasible (the CLI test's report says so);
    # looser targets make the fastest configuration the pick
    loose = gate_section(sweep, GateTargets(0.5, 0.5))
    assert loose.answer.startswith("Use alpha=")


ERRORS = [
    (["nope"], "experiment='nope' does not exist"),
    (["empty"], "experiment='empty' has no runs"),
    (["fixture", "--run", "0" * 32], "does not exist"),
    (["fixture", "--max-false-revert", "0"], "false_revert=0.0"),
    (["fixture", "--target-sessions", "0"], "target_sessions=0"),
]


@pytest.mark.parametrize(("argv", "fragment"), ERRORS)
def test_cli_clear_errors(store, monkeypatch, capsys, argv, fragment):
    uri, _ = store
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert main([*argv, "--no-log"]) == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("experiment", "run", "fragment"),
    [
        ("nope", None, "does not exist"),
        ("empty", None, "has no runs"),
        ("fixture", "f" * 32, "does not exist"),
    ],
)
def test_load_sweep_errors(store, experiment, run, fragment):
    uri, _ = store
    with pytest.raises(NoSweepError, match=re.escape(fragment)):
        load_sweep(experiment, run, uri)
