"""``python -m experiments.design gate|rule|explore --world world.json``: each answers for
the fitted world through the analysis's prescriptions (``procmem_core.logs.prescribe``) on
the one bootstrap (``world_draws``), and refuses a bad file before any work, exit 2."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from experiments.analyze.world_file import load_world, world_draws
from experiments.design.__main__ import main as design
from procmem_core.flat.design import RuleTargets
from procmem_core.flat.fate import flat_fate
from procmem_core.logs.prescribe import explore_rate, flat_rule

RATES = {"mean": {"value": 0.6, "se": 0.02}, "concentration": {"value": 30, "se": 6}}
WORLD = {"schema_version": 1, "rates": RATES}
GATE = ["--max-runs", "40", "--concurrent", "0.5", "--min-drop", "0.3"]


@pytest.fixture
def world(tmp_path):
    path = tmp_path / "world.json"
    path.write_text(json.dumps(WORLD))
    return path


BAD = [
    (None, "No such file", "world.json"),
    ("not json", "schema_version 1", "world.json"),
    ({**WORLD, "schema_version": 2}, "schema_version=2", "allowed: 1"),
    ({k: v for k, v in WORLD.items() if k != "schema_version"}, "schema_version=None", "1"),
    ({**WORLD, "rates": {"mean": WORLD["rates"]["mean"]}}, "rates.concentration", "needs"),
    ({**WORLD, "rates": {**WORLD["rates"], "mean": {"value": "x"}}}, "rates.mean", "'value'"),
]


@pytest.mark.parametrize("question", ["gate", "rule", "explore"])
@pytest.mark.parametrize(("content", "field", "allowed"), BAD)
def test_bad_world_refused_naming_file_and_field(tmp_path, capsys, question, content, field,
                                                 allowed):  # fmt: skip
    path = tmp_path / "world.json"
    if content is not None:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    extra = {"explore": ["--lift", "0.1"], "gate": GATE, "rule": ["--within", "10"]}[question]
    assert design([question, "--world", str(path), *extra]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # refused before any work
    assert str(path) in captured.err and field in captured.err and allowed in captured.err


def test_world_and_a_fixed_rate_are_exclusive(world, capsys):
    assert design(["gate", "--world", str(world), "--p0-range", "0.3", "0.9", *GATE]) == 2
    assert design(["rule", "--world", str(world), "--base", "0.6", "--within", "10"]) == 2
    assert capsys.readouterr().out == ""


def test_gate_world_covers_every_draw_and_meets_its_targets(world, capsys):
    assert design(["gate", "--world", str(world), "--json", *GATE]) == 0
    out = json.loads(capsys.readouterr().out)
    ms, ks = world_draws(load_world(world))
    low, high = out["prescription"]["p0_range"]
    a, b = ms * ks, (1 - ms) * ks
    assert low <= stats.beta.ppf(0.05, a, b).min() and high >= stats.beta.ppf(0.95, a, b).max()
    assert out["prescription"]["meets"]
    setting = out["prescription"]["setting"]
    name = "{family} ({design}), max_runs {max_runs}"
    (chosen,) = [x for x in out["answers"] if name.format(**x) == setting]
    assert chosen["feasible"]
    assert chosen["false_revert"] <= 0.05 + 1e-12 and chosen["power"] >= 0.8 - 1e-12
    assert chosen["config"]["p0_low"] == low and chosen["config"]["p0_high"] == high


def test_gate_world_says_what_it_would_take(world, capsys):
    assert design(["gate", "--world", str(world), "--max-runs", "12", "--min-drop", "0.3"]) == 0
    out = capsys.readouterr().out
    assert "No gate family meets" in out and "it would take a larger max_runs" in out


def test_explore_world_prints_the_analysis_prescription(world, capsys):
    args = ["explore", "--lift", "0.1", "--world", str(world), "--horizon", "2000"]
    assert design(args) == 0
    ms, _ = world_draws(load_world(world))
    p = explore_rate(ms, 0.1, 2000)
    assert p.sentence in capsys.readouterr().out and p.meets


@pytest.mark.slow
def test_rule_world_meets_its_targets_at_both_extreme_draws(world, capsys):
    """The design's pick at the estimate falls short at the worst draws here; the
    prescription is the frontier rule that meets both targets at both, checked exactly."""
    args = ["--helpful-lift", "0.2", "--harmful-lift", "-0.2", "--keep", "0.8",
            "--exclude", "0.8", "--within", "10", "--family", "confidence"]  # fmt: skip
    assert design(["rule", "--world", str(world), *args, "--frontier", "0"]) == 0
    out = capsys.readouterr().out
    ms, _ = world_draws(load_world(world))
    targets = RuleTargets(0.2, -0.2, 0.6, 0.8, 0.8, 10)
    p = flat_rule(0.6, ms, targets)
    assert p.sentence in out and p.meets
    rule, threshold = p.details["rule"], p.details["threshold"]
    lo, hi = ms.min(), ms.max()
    kept = 1 - flat_fate(lo + 0.2, 10, rule, threshold).p_excluded
    excluded = flat_fate(hi - 0.2, 10, rule, threshold).p_excluded
    assert kept == pytest.approx(p.details["kept_worst"]) and kept >= 0.8
    assert excluded == pytest.approx(p.details["excluded_worst"]) and excluded >= 0.8
    for b in np.quantile(ms, [0.0, 0.5, 1.0]):  # every draw in between does better
        assert 1 - flat_fate(b + 0.2, 10, rule, threshold).p_excluded >= kept - 1e-12
        assert flat_fate(b - 0.2, 10, rule, threshold).p_excluded >= excluded - 1e-12
    pick = p.details["design"].pick  # the estimate's own pick would not do
    if p.details["robust"]:
        assert 1 - flat_fate(lo + 0.2, 10, pick.rule, pick.threshold).p_excluded < 0.8 or (
            flat_fate(hi - 0.2, 10, pick.rule, pick.threshold).p_excluded < 0.8)  # fmt: skip


def test_reads_the_world_the_analysis_writes(tmp_path, capsys):
    """The round trip: ``experiments.analyze`` writes world.json, ``--world`` reads it."""
    from experiments.analyze import analyze
    from simulators.session_log import LogWorld, log_columns, simulate

    truth = LogWorld((0.5, 0.6, 0.7, 0.55, 0.65), (0.1, 0.0, -0.1, 0.05, 0.0), explore_rate=0.2)
    log = tmp_path / "log"
    log.mkdir()
    columns = log_columns(truth, simulate(truth, np.random.default_rng(1), 3000))
    pd.DataFrame(columns).to_csv(log / "sessions.csv", index=False)
    analyze(str(log), tmp_path / "out", track_run=False, design=False, prescribe=False)
    path = tmp_path / "out" / "world.json"
    fitted = load_world(path)
    assert abs(fitted["rates"]["mean"].value - 0.6) < 4 * fitted["rates"]["mean"].se + 0.05
    assert design(["gate", "--world", str(path), "--json", *GATE]) == 0
    out = json.loads(capsys.readouterr().out)
    ms, ks = world_draws(fitted)
    low = stats.beta.ppf(0.05, ms * ks, (1 - ms) * ks).min()
    assert out["prescription"]["p0_range"][0] <= max(low, 0.31)
