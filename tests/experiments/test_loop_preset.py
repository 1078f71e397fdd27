"""The loop preset (issue 29, item 3): it sweeps the quarantine policy, the strike limit,
the explore rate, the gate (the seed's SPRT against the one the design tool prescribes)
with the concurrent share, and the feedback channel; its YAML states the job count. A
tiny sweep of the new factors through Hydra reaches the report, whose verdict carries
the gate and explore-rate overrides."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from experiments.build import validate
from experiments.run import compose_job
from procmem_core.gates import GATES, DesignQuestion
from procmem_core.gates.prescribed import prescribed_answer
from reports.sections.loop import loop_section
from reports.sections.loop_evidence import main_effects
from reports.source import load_sweep

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
PRESET = ROOT / "conf" / "experiment" / "loop.yaml"
CELLS = {"loop_gate_sprt": ("sprt", 0.0), "loop_gate_sprt_concurrent": ("sprt", 0.5),
         "loop_gate_prescribed": ("prescribed", 0.5)}  # fmt: skip


def test_the_preset_sweeps_the_issues_factors_and_states_its_job_count():
    params = compose_job("loop").hydra.sweeper.params
    values = {k: str(v).split(",") for k, v in params.items()}
    assert set(values) == {"quarantine", "scenario.strike_limit", "explore.explore_rate",
                           "case", "feedback"}  # fmt: skip
    assert values["case"] == list(CELLS)
    assert [float(v) for v in values["explore.explore_rate"]] == [0.1, 0.02]
    jobs = math.prod(len(v) for v in values.values())
    stated = re.search(r"= (\d+) jobs of (\d+) replications", PRESET.read_text())
    assert stated is not None and int(stated.group(1)) == jobs == 96
    assert int(stated.group(2)) == compose_job("loop").scenario.replications


@pytest.mark.parametrize("case", ["loop_gate_sprt", "loop_gate_sprt_concurrent"])
def test_each_sprt_cell_sets_the_gate_and_the_share(case):
    scenario = validate(compose_job("loop", [f"case={case}"]))
    assert (scenario.gate.name, scenario.concurrent_share) == CELLS[case]


TINY = ["quarantine=seed", "scenario.strike_limit=3", "feedback=perfect",
        "explore.explore_rate=0.1,0.02", "case=loop_gate_sprt,loop_gate_prescribed",
        "scenario.sessions=160", "scenario.revise_every=20", "scenario.replications=3",
        "seed=5", "progress=off"]  # fmt: skip


@pytest.mark.slow
def test_a_tiny_loop_sweep_with_the_new_factors_reaches_the_report(tmp_path, new_mlflow_store):
    uri = new_mlflow_store(tmp_path / "mlflow.db")
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.run", "-m", "experiment=loop", *TINY,
         f"tracking.uri={uri}", f"hydra.sweep.dir={tmp_path / 'sweep'}"],
        cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    sweep = load_sweep("loop", uri=uri)
    runs = sweep.runs
    assert len(runs) == 4 and set(runs.status) == {"FINISHED"}
    assert set(runs["params.gate.name"]) == {"sprt", "prescribed"}
    assert sorted(runs["params.explore.explore_rate"].astype(float)) == [0.02, 0.02, 0.1, 0.1]
    prescribed = runs[runs["params.gate.name"] == "prescribed"]
    assert set(prescribed["params.scenario.concurrent_share"].astype(float)) == {0.5}
    assert set(prescribed["params.gate.concurrent"].astype(float)) == {0.5}
    # the prescribed runs' decisions were made by the design tool's pick for the question
    pick = prescribed_answer(DesignQuestion(concurrent=0.5))
    decisions = sweep.table("gate_decisions", list(prescribed["run_id"]))
    assert len(decisions) > 0 and set(decisions["gate"]) - {"cost"} == {pick.family}
    sprt = sweep.table("gate_decisions", list(runs.loc[runs["params.gate.name"] == "sprt",
                                                       "run_id"]))  # fmt: skip
    assert set(sprt["gate"]) - {"cost"} == {"sprt"}
    q = 160 // 4
    for _, run in runs.iterrows():  # each run's regret change from its own logged table
        t = sweep.table("regret_sources", [run.run_id])
        per = t[t.period != "all"].groupby(["replication", "period"])["regret"].sum().unstack()
        change = ((per["late"] - per["early"]) / q).to_numpy()
        assert run.regret_change == pytest.approx(change.mean(), abs=1e-12)
        assert run.regret_change_se == pytest.approx(change.std(ddof=1) / np.sqrt(3), rel=1e-9)
    section = loop_section(sweep)
    verdict = json.loads(section.files["loop_verdict.json"])
    row = runs.set_index("run_id").loc[
        runs.loc[np.isclose(runs.regret_change, verdict["regret_change"]), "run_id"].iloc[0]
    ]
    gate, rate = row["params.gate.name"], float(row["params.explore.explore_rate"])
    assert f"gate={gate}" in verdict["setting"]
    assert f"explore.explore_rate={rate:g}" in verdict["setting"]
    learning = next(b.frame for b in section.blocks if getattr(b, "caption", "").startswith(
        "Does it learn"))  # fmt: skip
    assert sum("prescribed gate" in c for c in learning["configuration"]) == 2
    assert sum("SPRT" in c for c in learning["configuration"]) == 2
    effects = main_effects(runs.assign(at_reference=True), ("regret_change",))
    by = effects.set_index(["setting", "value"])
    for name, value, col, want in (("gate", "prescribed", "params.gate.name", "prescribed"),
                                   ("explore_rate", "0.02", "params.explore.explore_rate",
                                    0.02)):  # fmt: skip
        sel = runs[[v == want or (isinstance(want, float) and float(v) == want)
                    for v in runs[col]]]  # fmt: skip
        assert by.loc[(name, value), "regret_change_mean"] == pytest.approx(
            sel["regret_change"].mean()
        )
    # the setting loop_verdict.json names is decomposed too, flagged as picked after the fact
    picked = [b for b in section.blocks if isinstance(b, str) and "picked after the fact" in b]
    assert not verdict["learns"] and len(picked) == 1
    assert picked[0].startswith(f"The regret change, {verdict['configuration']} (the setting ")
    # the figures are drawn where the seeds' verdict is read: explore rate 0.1, the SPRT
    # (not the smallest swept rate, 0.02)
    drawn = [b.caption for b in section.blocks if hasattr(b, "png")]
    assert drawn and all("explore rate 0.1" in c and "0.02" not in c for c in drawn), drawn
    notes = [b for b in section.blocks if "The prescribed gate is the design tool's pick" in str(b)]
    assert notes and f"made by: {GATES[pick.family].label}." in str(notes[0])
