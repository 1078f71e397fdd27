"""The simulated-vs-exact pairs a preset's sweep gives its calibration check (issue 30:
at least 100 per preset). A tiny sweep of each preset's shape (every job, at most
``TINY`` replications; the calibration blocks at their preset sizes) has the count the
design says: the quickstart's 41 whole-sample pairs (7 of them repeat another as x or
1 - x, counted once by the check) plus 80 blocks in each of its two flat-fate jobs,
and the confidence_sweep's 16 (four rules x four figures of the single-procedure world)
plus 45 blocks per rule there: about 200 counted pairs in each
(``conf/case/fate_seed.yaml`` says why). The reflections_study and explore_tradeoff
presets' block counts are read from their configs (each job's ``block_figures()``,
without running it): 8 x 24 and 45 x 4, beside their 16 and 45 whole-sample pairs."""

from __future__ import annotations

import itertools
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from omegaconf import OmegaConf

from experiments.run import compose_job
from experiments.spec import build_spec
from procmem_core.logged import CHECK_FIELDS, parse_name
from reports.calibration import calibration
from reports.summary import agreement_table

TINY = 400
ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())


def sweep_jobs(preset: str) -> list[list[str]]:
    """The overrides of every job of the preset's sweep (its ``hydra.sweeper.params``)."""
    conf = OmegaConf.load(ROOT / "conf" / "experiment" / f"{preset}.yaml")
    params = conf.hydra.sweeper.params
    axes = [[f"{k}={v.strip()}" for v in str(params[k]).split(",")] for k in params]
    return [list(job) for job in itertools.product(*axes)]


def tiny_sweep_pairs(preset: str) -> pd.DataFrame:
    rows, names = [], set()
    for job in sweep_jobs(preset):
        cfg = compose_job(preset, job)
        if cfg.scenario.replications > TINY:  # as the override would (one compose a job)
            cfg.scenario.replications = TINY
        spec = build_spec(cfg)
        metrics = spec.scenario.run(spec.job_seed).metrics
        rows.append({"scenario": spec.scenario.name, "run_id": " ".join(job), **metrics})
        names |= set(metrics)
    sweep = SimpleNamespace(runs=pd.DataFrame(rows), metric_names=tuple(sorted(names)))
    return agreement_table(sweep)


def blocks(t: pd.DataFrame) -> pd.DataFrame:
    return t[[parse_name(m) is not None for m in t["metric"]]]


@pytest.mark.slow
def test_the_quickstart_sweep_has_201_pairs_160_of_them_from_blocks():
    t = tiny_sweep_pairs("quickstart")
    b = blocks(t)
    assert len(t) == 41 + 2 * 80 and len(b) == 160
    assert sorted(b["run"].unique()) == ["case=fate_break_even", "case=fate_seed"]
    cal = calibration(t)  # the 5 gates' missed_regression_rate = 1 - revert_rate_alt and
    # the loop's naive_lift = lift and the reflections' opposite_pair_rate = lesson_helpful_rate
    assert cal.repeats == 7 and cal.pairs == 201 - 7


@pytest.mark.slow
def test_the_confidence_sweep_has_196_pairs_180_of_them_from_blocks():
    t = tiny_sweep_pairs("confidence_sweep")
    b = blocks(t)
    assert len(t) == 4 * 4 + 4 * 45 and len(b) == 180
    assert set(b["run"].str.split().str[0]) == {"case=confidence_single"}
    assert b.groupby("run").size().tolist() == [45, 45, 45, 45]
    cal = calibration(t)
    assert cal.repeats == 0 and cal.pairs == 196


def block_counts(preset: str) -> dict[str, int]:
    """Each job's calibration blocks, from its config alone (nothing runs)."""
    out = {}
    for job in sweep_jobs(preset):
        spec = build_spec(compose_job(preset, job))
        out[" ".join(job)] = len(spec.scenario.block_figures())
    return out


def test_the_reflections_study_has_192_blocks_24_per_situation_matched_job():
    counts = block_counts("reflections_study")
    assert len(counts) == 16
    for job, n in counts.items():
        assert n == (24 if "match_on=situation" in job else 0), job
    assert sum(counts.values()) == 192  # with the 16 whole-sample pairs: 208 >= 100


def test_the_explore_tradeoff_has_180_blocks_4_per_job():
    counts = block_counts("explore_tradeoff")
    assert len(counts) == 45 and set(counts.values()) == {4}  # with 45 whole-sample: 225


@pytest.mark.parametrize(
    ("preset", "job", "seed"),
    [
        ("explore_tradeoff", ["explore.explore_rate=0.1", "scenario.sessions=1000",
                              "users.helpful_effect=0.15"], 2715798111236398608),
        ("reflections_study", ["scenario.match_on=situation", "scenario.unsure_rate=0.2",
                               "scenario.min_confidence=0.5", "scenario.harmful_share=0.2"],
         2172212267899390166),
    ],
)  # fmt: skip
def test_blocks_leave_the_jobs_seed(preset, job, seed):
    """The seeds these jobs had before their scenarios had block fields (main at 9593533):
    the fields are unseeded (``Scenario.unseeded``), so no headline number moves; the
    config hash, which says what the run logged, does take them in."""
    with_blocks = build_spec(compose_job(preset, job))
    without = build_spec(compose_job(preset, [*job, "scenario.calibration_blocks=0"]))
    assert set(type(with_blocks.scenario).unseeded) == set(CHECK_FIELDS)
    assert with_blocks.scenario.calibration_blocks > 0
    assert with_blocks.job_seed == without.job_seed == seed
    assert with_blocks.config_hash != without.config_hash


def test_a_loop_search_trial_has_two_blocks_and_keeps_its_seed():
    """loop_search's 40 trials give one whole-sample lift each (its naive_lift repeats it
    under perfect feedback) and 2 blocks: 120 pairs. A trial's seed is the one it had
    before the loop had block fields."""
    cfg = compose_job("loop_search", [])
    spec = build_spec(cfg)
    assert spec.scenario.calibration_blocks == 2 and cfg.hydra.sweeper.n_trials == 40
    assert [f.sessions for f in spec.scenario.block_figures()] == [250, 250]
    assert cfg.hydra.sweeper.n_trials * (1 + len(spec.scenario.block_figures())) == 120
    without = build_spec(compose_job("loop_search", ["scenario.calibration_blocks=0"]))
    assert spec.job_seed == without.job_seed
