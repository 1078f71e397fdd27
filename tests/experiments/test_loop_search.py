"""The loop_search preset (issue 29, item 4): Hydra's Optuna sweeper over the loop's
settings, each trial a job of several replications whose objective is the regret change.
A tiny search runs end to end; each trial's objective is recomputed from its logged
tables, Optuna's best is the lowest of them, and the report ranks the trials calling one
better only beyond 2 SE of the difference."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from experiments.run import compose_job
from experiments.search import objective_value, search_vary
from procmem_core.errors import ParameterError
from reports.claims import Option, beyond_noise
from reports.sections.loop import loop_section
from reports.sections.loop_search import search_sentence, search_table, trial_name
from reports.source import load_sweep

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
TINY = ["hydra.sweeper.n_trials=2", "hydra.sweeper.n_jobs=2", "scenario.sessions=40",
        "scenario.replications=3", "seed=5"]  # fmt: skip


def test_the_sampler_seed_and_the_searched_keys_come_from_config():
    cfg = compose_job("loop_search", ["seed=7"])
    assert cfg.hydra.sweeper.sampler.seed == 7 and cfg.objective == "regret_change"
    assert cfg.hydra.sweeper.direction == "minimize"
    assert search_vary(cfg) == [
        "quarantine.name", "scenario.strike_limit", "explore.explore_rate",
        "scenario.concurrent_share",
    ]  # fmt: skip
    assert math.isnan(objective_value("failed", {}, "regret_change"))
    assert objective_value("finished", {"regret_change": -0.25}, "regret_change") == -0.25
    with pytest.raises(ParameterError, match="objective"):
        objective_value("finished", {"regret": 0.1}, "regret_change")


@pytest.mark.slow
def test_a_tiny_search_runs_end_to_end(tmp_path, new_mlflow_store):
    uri = new_mlflow_store(tmp_path / "mlflow.db")
    sweep_dir = tmp_path / "search"
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.run", "-m", "experiment=loop_search", *TINY,
         f"tracking.uri={uri}", f"hydra.sweep.dir={sweep_dir}"],
        cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    sweep = load_sweep("loop_search", uri=uri)
    runs = sweep.runs
    assert len(runs) == 2 and set(runs.status) == {"FINISHED"}
    # the parent names a search, not "0 jobs": its trials are planned as it goes
    assert sweep.parent_name.startswith("loop_search: a search over ")
    q = 40 // 4
    for _, run in runs.iterrows():
        # the objective from the logged table: per replication, the late quarter's regret
        # minus the early one's (summed over the sources), over the quarter's sessions
        t = sweep.table("regret_sources", [run.run_id])
        per = t[t.period != "all"].groupby(["replication", "period"])["regret"].sum().unstack()
        change = ((per["late"] - per["early"]) / q).to_numpy()
        assert run.regret_change == pytest.approx(change.mean(), abs=1e-12)
        assert run.regret_change_se == pytest.approx(change.std(ddof=1) / np.sqrt(3), rel=1e-9)
        assert run.regret_change == pytest.approx(run.regret_late - run.regret_early, abs=1e-12)
    # the sweeper's best is the lowest objective the jobs returned, with that job's settings
    best = yaml.safe_load((sweep_dir / "optimization_results.yaml").read_text())
    low = runs.loc[runs.regret_change.idxmin()]
    assert best["best_value"] == pytest.approx(low.regret_change, abs=1e-15)
    assert best["best_params"]["quarantine"] == low["params.quarantine.name"]
    assert best["best_params"]["scenario.strike_limit"] == low["params.scenario.strike_limit"]
    assert best["best_params"]["explore.explore_rate"] == pytest.approx(
        float(low["params.explore.explore_rate"])
    )
    section = loop_section(sweep)
    assert section.said.startswith("The search ran 2 trials of 3 replications each")
    assert any(getattr(b, "caption", "").startswith("The search's trials") for b in section.blocks)


def _rows(values: list[tuple[float, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [{"config": f"t{i}", "regret_change": v, "regret_change_se": s,
          "params.scenario.replications": 8} for i, (v, s) in enumerate(values)]
    )  # fmt: skip


def test_a_trial_is_better_only_beyond_two_se_of_the_difference():
    # t1 is lowest; t0 is 0.05 above with SE of the difference hypot(0.02, 0.01) = 0.0224:
    # 0.05 > 2 * 0.0224 = 0.0447, beaten; t2 is 0.04 above: within 2 SE, tied
    rows = _rows([(0.0, 0.02), (-0.05, 0.01), (-0.01, 0.02)])
    text = search_sentence(rows)
    assert text.startswith(
        "The search ran 3 trials of 8 replications each; the lowest regret change is "
        "-0.05 ± 0.01 with t1. It beats 1 of the other 2 trials by more than 2 SE of the "
        "difference; 1 is within 2 SE of it, so the search cannot call it better than that "
        "one (t2)."
    )
    table = search_table(rows).frame.set_index("trial")
    assert list(table.index) == ["t1", "t2", "t0"]
    assert table.loc["t0", "worse by > 2 SE?"] == "yes"
    assert table.loc["t2", "worse by > 2 SE?"] == "no: tied"
    assert beyond_noise(Option("a", 0.0, 0.02), Option("b", -0.05, 0.01))
    assert table.loc["t0", "minus the lowest"].startswith("0.05 ± 0.022")


def test_a_trial_is_named_by_its_searched_values():
    rows = _rows([(0.0, 0.02), (-0.05, 0.01)]).assign(
        **{"params.quarantine.name": ["seed", "decay"],
           "params.explore.explore_rate": [0.2636034015091093, 0.1],
           "params.scenario.sessions": [1000, 1000]}
    )  # fmt: skip
    assert trial_name(rows.iloc[0], rows) == "explore.explore_rate=0.264, quarantine=seed"
    assert search_sentence(rows).startswith(
        "The search ran 2 trials of 8 replications each; the lowest regret change is "
        "-0.05 ± 0.01 with explore.explore_rate=0.1, quarantine=decay. It beats 1 of the other 1"
    )


def test_many_ties_name_two_and_count_the_rest():
    rows = _rows([(-0.05, 0.01), (-0.04, 0.02), (-0.045, 0.02), (-0.03, 0.02), (-0.035, 0.02)])
    text = search_sentence(rows)
    assert "; 4 are within 2 SE of it, so the search cannot call it better than them " in text
    assert "(t2; t1 and 2 more)." in text


def test_a_trial_without_an_se_is_compared_with_none():
    """One replication (or no ``_se`` logged) gives no SE: the old code read NaN as an
    exact value and said the lowest "beats 2 of the other 2 by more than 2 SE"."""
    rows = _rows([(-0.05, math.nan), (0.02, math.nan), (0.03, math.nan)])
    rows["params.scenario.replications"] = 1
    text = search_sentence(rows)
    assert text.startswith(
        "The search ran 3 trials of 1 replication each; the lowest regret change is -0.05 "
        "with t0. It beats 0 of the other 2 trials by more than 2 SE of the difference; 2 "
        "cannot be compared with it: the lowest has no standard error (one replication, or "
        "none logged)."
    )
    table = search_table(rows).frame.set_index("trial")
    assert table.loc["t1", "worse by > 2 SE?"] == "unknown: no SE"
    assert table.loc["t1", "minus the lowest"] == "0.07"  # no SE claimed for it either
    mixed = _rows([(-0.05, 0.01), (0.5, math.nan), (0.2, 0.01)])
    assert (
        "It beats 1 of the other 2 trials by more than 2 SE of the difference; 1 cannot be "
        "compared with it: that trial has no standard error" in search_sentence(mixed)
    )
    assert search_table(mixed).frame.set_index("trial").loc["t2", "worse by > 2 SE?"] == "yes"


def test_one_trial_and_no_finished_trial():
    one = search_sentence(_rows([(0.01, 0.005)]))
    assert one == (
        "The search ran 1 trial of 8 replications each; the lowest regret change is "
        "0.01 ± 0.005 with t0. There is no other trial to compare it with."
    )
    none = _rows([(math.nan, 0.1), (math.nan, 0.1)])
    assert search_sentence(none) == "The search has no finished trial with a regret change."
    assert search_table(none) is None  # was an IndexError, which stopped the report


def test_an_exact_tie_is_a_tie():
    rows = _rows([(0.01, 0.0), (0.01, 0.0)])
    assert "1 is within 2 SE of it, so the search cannot call it better" in search_sentence(rows)
    assert search_table(rows).frame["worse by > 2 SE?"].tolist() == ["", "no: tied"]
