"""``python -m experiments.analyze`` end to end on one log: its files, its MLflow run, and
the same lifts as the engine's estimator on the same arrays; the explore scenario's
export analyzed back to the scenario's own estimates."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from experiments.analyze.__main__ import main
from experiments.analyze.read import read_log
from procmem_core.logs import estimate_lifts
from simulators.scenarios.explore import ExploreScenario
from simulators.session_log import LogWorld, log_columns, simulate

RUNS = {
    "key": ["a"] * 26,
    "revision": ["1"] * 20 + ["2"] * 6,
    "ok": [True] * 20 + [False] * 6,
    "time": list(range(26)),
}
REVISIONS = {
    "key": ["a", "a"],
    "revision": ["1", "2"],
    "prior_revision": ["", "1"],
    "proposed_at": [0, 19],
    "verdict": ["accepted", "reverted"],
}


@pytest.mark.slow
def test_cli_writes_files_and_one_mlflow_run(tmp_path, tracking_store, capsys):
    world = LogWorld((0.5, 0.4, 0.7), (0.15, 0.0, -0.1), explore_rate=0.2, users=80,
                     user_sd=0.1, missing=0.1, delay=2.0)  # fmt: skip
    d = simulate(world, np.random.default_rng(5), 6000)
    log = tmp_path / "log"
    log.mkdir()
    pd.DataFrame(log_columns(world, d)).to_csv(log / "sessions.csv", index=False)
    pd.DataFrame(RUNS).to_csv(log / "runs.csv", index=False)
    pd.DataFrame(REVISIONS).to_json(log / "revisions.jsonl", orient="records", lines=True)
    assert main([str(log), "--out", str(tmp_path / "out")]) == 0
    out = tmp_path / "out"
    files = {"lifts.csv", "gate_replay.csv", "rule_replay.csv", "world.json",
             "prescriptions.csv", "report.md", "index.html"}  # fmt: skip
    assert files <= {p.name for p in out.iterdir()}
    gates = pd.read_csv(out / "gate_replay.csv")
    # 6 failures after a perfect prior: every gate reverts (SPRT from run 3, min_runs)
    assert gates["sprt_verdict"].tolist() == ["reverted"] and gates["sprt_runs"][0] == 3
    assert gates["margin_verdict"].tolist() == ["reverted"] and gates["margin_runs"][0] == 5
    assert gates["two_sample_verdict"][0] in ("reverted", "pending")
    world = json.loads((out / "world.json").read_text())
    assert world["rates"]["family"].startswith("beta-binomial")
    assert world["lifts"]["family"].startswith("normal")
    assert set(world["lifts"]["shrunk"]) == {"procedure-000", "procedure-001", "procedure-002"}
    assert world["users"]["user_sd"]["se"] > 0
    # the users' sessions per procedure and arm (rated): the explore rate's design effect
    frame = pd.read_csv(log / "sessions.csv", dtype={"top_key": str}, keep_default_na=False)
    rated = frame[(frame["outcome"] != "") & (frame["top_key"] != "")]
    n = rated.groupby(["top_key", "withheld", "user_id"]).size().to_numpy(float)
    size = world["users"]["cluster_size"]
    assert size["se"] is None and abs(size["value"] - (n**2).sum() / n.sum()) < 1e-9
    assert abs(world["ratings"]["missing_rate"]["value"] - 0.1) < 4 * 0.004
    assert set(world["checks"]["checks"]) == {
        "withheld_share",
        "success_shown",
        "success_withheld",
        "dispersion_shown",
    }
    found = pd.read_csv(out / "prescriptions.csv")
    assert list(found["prescription"]) == ["explore rate", "flat rule", "gate"]
    assert "Prescriptions for this deployment" in (out / "report.md").read_text()
    assert "design effect of users seen repeatedly" in (out / "report.md").read_text()
    rules = pd.read_csv(out / "rule_replay.csv")
    assert set(rules["rule"]) == {"seed", "designed"} and len(rules) == 6
    lifts = pd.read_csv(out / "lifts.csv")
    direct = estimate_lifts(read_log(log).sessions).columns
    for col in ("lift", "se", "ci_low", "ci_high", "cs_low", "cs_high", "p_holm", "srm_p"):
        assert np.allclose(lifts[col], direct[col], rtol=1e-12), col
    assert list(lifts["key"]) == ["procedure-000", "procedure-001", "procedure-002"]
    assert lifts["effect"].tolist() == [True, False, True]
    report = (out / "report.md").read_text()
    assert "missing completely at random" in report and "clustered by user" in report
    import mlflow

    client = mlflow.tracking.MlflowClient(f"sqlite:///{tracking_store}")
    exp = client.get_experiment_by_name("analyze")
    (run,) = client.search_runs([exp.experiment_id])
    assert run.info.status == "FINISHED"
    assert run.data.metrics["lifts_effects"] == 2.0
    assert run.data.params["schema_version"] == "1"
    names = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"lifts.csv", "report.md", "index.html"} <= names
    assert "MLflow run" in capsys.readouterr().out


def test_log_with_no_withheld_session_says_what_it_would_take(tmp_path):
    world = LogWorld((0.5, 0.6), (0.1, 0.1), explore_rate=0.1, logged_rate=0.0)
    cols = log_columns(world, simulate(world, np.random.default_rng(2), 300))
    cols["withheld"][:] = False
    (tmp_path / "log").mkdir()
    pd.DataFrame(cols).to_parquet(tmp_path / "log" / "sessions.parquet")
    args = [
        str(tmp_path / "log"),
        "--out",
        str(tmp_path / "out"),
        "--no-track",
        "--no-rule-design",
        "--no-prescribe",
    ]
    assert main(args) == 0
    assert pd.read_csv(tmp_path / "out" / "lifts.csv").empty
    report = (tmp_path / "out" / "report.md").read_text()
    assert "cannot be estimated" in report and "the planner needs" in report
    world = json.loads((tmp_path / "out" / "world.json").read_text())
    assert "lifts" not in world and 0.5 < world["rates"]["mean"]["value"] < 0.8
    # two procedures cannot show how the rates spread: the SE is unknown, written null
    assert world["rates"]["concentration"]["se"] is None or world["rates"]["mean"]["se"] > 0


@pytest.mark.parametrize("users", [1, 40])
def test_explore_scenario_export_analyzes_back_to_its_estimates(tmp_path, users):
    sc = ExploreScenario(sessions=400, users=users, replications=12, export_log=8)
    result = sc.run(3)
    log = tmp_path / "log"
    log.mkdir()
    result.tables["sessions"].to_parquet(log / "sessions.parquet")
    lifts = estimate_lifts(read_log(log).sessions).columns
    est = result.tables["estimates"]
    dim = est[est["estimator"] == "dim"].set_index("replication")
    assert list(lifts["key"]) == [f"explore-{r:04d}" for r in range(8)]
    assert np.allclose(lifts["lift"], dim["estimate"][:8], equal_nan=True)
    assert np.isfinite(lifts["ci_low"]).all() and np.isfinite(lifts["ci_high"]).all()
    if users == 1:  # one user per replication: nothing to cluster over, Newcombe's interval
        assert np.allclose(lifts["ci_low"], dim["ci_low"][:8])
        assert np.allclose(lifts["ci_high"], dim["ci_high"][:8])
    truth = result.tables["sessions_truth"]
    assert np.allclose(truth["true_lift"], dim["true_lift"][:8])


def test_export_is_a_config_switch(compose_preset):
    from experiments.build import build_scenario

    cfg = compose_preset("quickstart", ["case=explore_seed", "scenario.export_log=3"])
    assert build_scenario(cfg).export_log == 3
    cfg = compose_preset("quickstart", ["case=explore_seed"])
    assert build_scenario(cfg).export_log == 0


def test_reads_an_mlflow_runs_exported_log(tmp_path, tracking_store):
    """A scenario job's ``tables/`` artifacts (``export_log``) are a log: analyzed by run id."""
    from experiments.analyze import analyze
    from experiments.tracking import Tracker

    result = ExploreScenario(sessions=300, users=20, replications=6, export_log=4).run(5)
    folder = tmp_path / "artifacts"
    (folder / "tables").mkdir(parents=True)
    result.tables["sessions"].to_parquet(folder / "tables" / "sessions.parquet")
    result.tables["sessions_truth"].to_parquet(folder / "tables" / "sessions_truth.parquet")
    tracker = Tracker("explore")
    run_id = tracker.start_run("explore export", {})
    tracker.log_artifacts(run_id, folder)
    tracker.finish(run_id)
    out = tmp_path / "out"
    analyze(f"runs:/{run_id}", out, track_run=False, design=False, prescribe=False)
    lifts = pd.read_csv(out / "lifts.csv")
    direct = estimate_lifts(read_log(folder / "tables").sessions).columns
    assert list(lifts["key"]) == list(direct["key"]) and np.allclose(lifts["lift"], direct["lift"])
    from procmem_core.logs import LogError

    with pytest.raises(LogError, match=r"runs:/nope.*an MLflow run with a log folder"):
        read_log("runs:/nope")
