"""The reflections study: its exact rates against a reference that enumerates a session's
outcomes, simulation against them within 4 SE, and what whole-text matching does."""

from __future__ import annotations

import itertools
from pathlib import Path

import pandas as pd
import pytest

from procmem_core.errors import ParameterError
from simulators import SCENARIOS
from simulators.scenarios.reflections import ReflectionsScenario


def enumerated(sc: ReflectionsScenario) -> dict[str, float]:
    """P(harmful | flagged failure) and P(helpful | labelled success) by summing over every
    (procedure, outcome, judge unsure, coin) of one session: no formula shared with the
    scenario."""
    flagged = {"harmful": 0.0, "helpful": 0.0}
    labelled_ok = {"harmful": 0.0, "helpful": 0.0}
    for which, ok, unsure, coin in itertools.product(
        PROCS, (True, False), (True, False), (True, False)
    ):
        p = sc.p_bad if which == "harmful" else sc.p_good
        w = sc.harmful_share if which == "harmful" else 1 - sc.harmful_share
        w *= (p if ok else 1 - p) * (sc.unsure_rate if unsure else 1 - sc.unsure_rate) * 0.5
        label, confidence = (coin, 0.5) if unsure else (ok, sc.sure_confidence)
        if not label and confidence >= sc.min_confidence:
            flagged[which] += w
        if label:
            labelled_ok[which] += w
    harm = flagged["harmful"] / sum(flagged.values())
    good = labelled_ok["helpful"] / sum(labelled_ok.values())
    return {"true_contrast_rate": harm, "opposite_pair_rate": harm * good}


PROCS = ("harmful", "helpful")


@pytest.mark.parametrize(
    "kwargs", [{}, {"min_confidence": 0.5, "unsure_rate": 0.4, "harmful_share": 0.3}]
)
def test_the_exact_rates_equal_an_enumeration(kwargs):
    sc = ReflectionsScenario(**kwargs)
    got, want = sc.exact(), enumerated(sc)
    assert got["true_contrast_rate"] == pytest.approx(want["true_contrast_rate"], rel=1e-12)
    assert got["opposite_pair_rate"] == pytest.approx(want["opposite_pair_rate"], rel=1e-12)
    assert got["lesson_helpful_rate"] == got["opposite_pair_rate"]


@pytest.fixture(scope="module")
def situation_run():
    sc = ReflectionsScenario(replications=120, min_confidence=0.5)
    return sc, sc.run(2)


def test_simulation_agrees_with_the_exact_rates_within_4_se(situation_run):
    sc, result = situation_run
    assert sc.exact_regime
    m = result.metrics
    for name in ("true_contrast_rate", "opposite_pair_rate", "lesson_helpful_rate"):
        assert m[f"{name}_se"] > 0
        assert abs(m[name] - m[f"{name}_exact"]) <= 4 * m[f"{name}_se"], name
    assert m["same_task_rate"] == 1.0 and m["distill_faults"] == 0.0
    assert m["pairs"] == pytest.approx(sc.max_pairs, abs=0.2)
    table = result.tables["distill_pairs"]
    assert len(table) == round(m["pairs"] * sc.replications)
    assert (table["failed_task"] == table["succeeded_task"]).all()


def test_whole_text_matching_pairs_like_with_like():
    sc = ReflectionsScenario(replications=60, match_on="text")
    assert not sc.exact_regime
    m = sc.run(2).metrics
    assert "true_contrast_rate_exact" not in m
    assert m["same_procedure_rate"] - 4 * max(m["same_procedure_rate_se"], 1e-3) > 0.8
    assert m["lesson_helpful_rate"] + 4 * max(m["lesson_helpful_rate_se"], 1e-3) < 0.2


def test_a_low_floor_leaves_the_exact_regime():
    assert not ReflectionsScenario(similarity_floor=0.0).exact_regime
    assert SCENARIOS["reflections"] is ReflectionsScenario


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"match_on": "words"}, "match_on='words'"),
        ({"tasks": 0}, "tasks=0"),
        ({"sure_confidence": 0.4}, "sure_confidence=0.4"),
        ({"p_good": 1.5}, "p_good=1.5"),
        ({"max_pairs": 0}, "max_pairs=0"),
        ({"replications": 1}, "replications=1"),
    ],
)
def test_bad_parameters_are_refused(kwargs, message):
    with pytest.raises(ParameterError, match=message):
        ReflectionsScenario(**kwargs)


def test_no_job_loads_the_model_client_unless_it_runs_the_study():
    """The scenario registry, the config schema and the new engine packages import without
    openai (only the distill worker and a run of this scenario load it)."""
    import subprocess
    import sys

    probe = (
        "import sys, experiments.schema, procmem_core.memory, procmem_core.learnings, "
        "procmem_core.reflections; from simulators import SCENARIOS; SCENARIOS.classes(); "
        "print('openai' in sys.modules)"
    )
    root = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


# Calibration blocks (simulators.calibration_blocks): pair rates from fresh replications,
# paired without the model (ReflectionsScenario.calibration_run).

EXACT_WORLDS = [
    {"unsure_rate": u, "min_confidence": t, "harmful_share": h}
    for u, t, h in itertools.product((0.2, 0.4), (0.5, 0.8), (0.2, 0.5))
]
"""The situation-matched worlds of the reflections_study preset (its exact regime)."""


def test_pairing_without_the_model_gives_the_runs_pair_rates():
    sc = ReflectionsScenario(replications=6, min_confidence=0.5, unsure_rate=0.4)
    full, pairs_only = sc.run(8).metrics, sc.calibration_run(8).metrics
    assert set(pairs_only) < set(full) and "lesson_helpful_rate" not in pairs_only
    assert {k: full[k] for k in pairs_only} == pairs_only
    assert pairs_only["pairs"] > 0


def test_blocks_add_their_figures_and_leave_the_runs_own_numbers():
    sc = ReflectionsScenario(replications=4, calibration_blocks=3, calibration_replications=50)
    got = sc.run(5).metrics
    plain = ReflectionsScenario(replications=4).run(5).metrics
    names = sorted(k for k in got if k.startswith("cal") and not k.endswith(("_se", "_exact")))
    # two candidates at the run's horizon (40), spread evenly over 3 blocks
    assert names == [
        "cal00_true_contrast_rate_s40",
        "cal01_true_contrast_rate_s40",
        "cal02_opposite_pair_rate_s40",
    ]
    assert {k: v for k, v in got.items() if not k.startswith("cal")} == plain
    exact = enumerated(sc)
    assert got["cal02_opposite_pair_rate_s40_exact"] == pytest.approx(
        exact["opposite_pair_rate"], rel=1e-12
    )


def test_blocks_count_24_per_situation_job_and_none_for_whole_text_matching():
    assert len(ReflectionsScenario(calibration_blocks=24).block_figures()) == 24
    assert ReflectionsScenario(calibration_blocks=24, match_on="text").block_figures() == []


def test_block_pair_rates_agree_with_the_enumeration_within_4_se_across_seeds():
    """12 blocks in each of the preset's 8 exact worlds, each from its own seed: every
    z within 4, and the 96 z-scores pass the report's calibration check (their variance
    interval holds 1, the tails within their Binomial 99 % ranges)."""
    from reports.calibration import calibration
    from simulators.calibration_blocks import calibration_metrics

    rows = []
    for seed, world in enumerate(EXACT_WORLDS):
        sc = ReflectionsScenario(**world, calibration_blocks=12)
        want = enumerated(sc)
        got = calibration_metrics(sc, 100 + seed)
        for name in (k for k in got if not k.endswith(("_se", "_exact"))):
            metric = name.split("_", 1)[1].rsplit("_s", 1)[0]
            assert got[name + "_exact"] == pytest.approx(want[metric], rel=1e-12)
            rows.append((got[name] - got[name + "_exact"]) / got[name + "_se"])
    assert len(rows) == 96 and max(abs(z) for z in rows) < 4
    cal = calibration(pd.DataFrame({"z": rows, "se": 1.0}))
    assert cal.ok, cal.describe()


def test_a_rate_at_one_is_checked_at_its_exact_value_not_with_se_zero():
    """p_good 0.99 and p_bad 0.01: every pair's failure is on the harmful procedure (1.0,
    plug-in SE 0) where the exact rate is 0.99, an infinite z for a draw of chance 0.37 or
    so. The SE is now the binomial one at 0.99 over the replications with a pair, in the
    run and in the pairing-only run the calibration blocks use alike."""
    sc = ReflectionsScenario(replications=20, p_good=0.99, p_bad=0.01)
    m, pairs_only = sc.run(1).metrics, sc.calibration_run(1).metrics
    assert m["true_contrast_rate"] == 1.0 and m["true_contrast_rate_exact"] == pytest.approx(0.99)
    assert m["true_contrast_rate_se"] == pytest.approx((0.99 * 0.01 / 20) ** 0.5)
    assert pairs_only["true_contrast_rate_se"] == m["true_contrast_rate_se"]
    assert m["opposite_pair_rate_se"] > 0 and m["opposite_pair_rate"] < 1  # as logged
