"""The gate section on real gate runs (``GateScenario`` in process, read back as a Sweep):
the prescription and recommendations.json, worst-case rows naming their conditions,
partial configurations not ranked, why the SPRT misses alpha, Wald-Wolfowitz bounds at the
achieved error rates, reference lines and legends, categorical factors never joined."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from experiments.answers import sweep_answers
from procmem_core.gates import SPRTGate, TwoSampleGate, make_gate, wald_wolfowitz_bound
from procmem_core.gates import worst_case as exact_worst_case
from reports.document import Report
from reports.pages import write_report
from reports.recommend import GateTargets, recommend_gate
from reports.sections.gate import gate_section
from reports.sections.gate_explain import explain_rows, fixed_sample_size
from reports.sections.gate_figures import Refs, oc_figure, worst_name
from reports.sections.gate_sweep import ranking_blocks, sweep_recommendation
from reports.sections.gate_tables import exact_curves, gate_runs, operating_points
from reports.sections.gate_worst import null_curves, worst_rows
from reports.source import Sweep
from simulators.scenarios.gate import GateScenario

REPS = 4000
RUNS = [
    ("r1", SPRTGate(), dict(ledger_size=None)),
    ("r2", SPRTGate(), dict(ledger_size=20)),
    (
        "r3",
        TwoSampleGate(beta=0.4),
        dict(ledger_size=20, design="concurrent", concurrent_share=0.5),
    ),
]


def fake_sweep() -> Sweep:
    """Three gate runs as the report reads them from MLflow: params as ``params.<group>.<key>``,
    metrics, the ``operating_points`` and ``gate_decisions`` tables."""
    rows, tables = [], {}
    for run_id, gate, kwargs in RUNS:
        res = GateScenario(gate=gate, replications=REPS, drops=(0.0, 0.1, 0.15, 0.2),
                           **kwargs).run(3)  # fmt: skip
        row = {"run_id": run_id, "run_name": run_id, "scenario": "gate", "status": "FINISHED"}
        row |= {f"params.gate.{k}": v for k, v in gate.config().items()}
        row |= {"params.scenario.replications": REPS, "params.scenario.p_prior": 0.8}
        row |= {f"params.scenario.{k}": kwargs.get(k) for k in ("ledger_size",)}
        row["params.scenario.concurrent_share"] = kwargs.get("concurrent_share", 0.0)
        row["params.scenario.design"] = kwargs.get("design", "fixed")
        row |= res.metrics
        rows.append(row)
        tables[run_id] = dict(res.tables)
    runs = pd.DataFrame(rows)
    params = tuple(c for c in runs.columns if c.startswith("params."))
    metrics = tuple(
        sorted(
            {k for r in rows for k in r}
            - set(params)
            - {"run_id", "run_name", "scenario", "status"}
        )
    )
    return Sweep("fake", "p" * 32, "parent", runs, params, metrics, tables)


@pytest.fixture(scope="module")
def sweep() -> Sweep:
    s = fake_sweep()
    # the design answers the sweep computes when it ends, at the section's targets
    s.answers = sweep_answers(s.runs, 0.1, 0.5)
    return s


@pytest.fixture(scope="module")
def section(sweep):
    # loose targets: the design question is quick, and feasible
    return gate_section(sweep, GateTargets(0.1, 0.5))


def test_worst_case_cells_name_their_conditions(sweep):
    gates = gate_runs(sweep)
    worst = worst_rows(gates.rows.assign(replications=REPS))
    sprt = worst[worst["config"].str.contains("SPRT")].iloc[0]
    runs = gates.rows[gates.rows["config"] == sprt["config"]]
    for m in ("false_revert_rate", "missed_regression_rate", "mean_runs_null", "mean_runs_alt"):
        top = runs.loc[runs[m].astype(float).idxmax()]
        assert sprt[m] == top[m] and sprt[f"{m}_condition"] == top["condition"]
    # a worst case mixes conditions, and says so cell by cell (quickstart: 23.9 runs with p0
    # known beside the error rates of the 20-run ledger)
    assert sprt["false_revert_rate_condition"] != sprt["mean_runs_null_condition"]
    assert sprt["complete"] and sprt["conditions"] == 2


def test_configurations_not_run_in_every_condition_are_flagged_not_ranked(sweep):
    gates = gate_runs(sweep)
    worst = worst_rows(gates.rows.assign(replications=REPS))
    rec = sweep_recommendation(worst, GateTargets(), gates.default_label)
    assert not any("two-sample" in c for c in rec.ranked["config"])
    blocks = ranking_blocks(rec, worst, GateTargets(), 2)
    partial = [b for b in blocks if hasattr(b, "caption") and b.caption.startswith("Not ranked")]
    assert len(partial) == 1 and partial[0].frame["configuration"].str.contains("two-sample").all()
    assert (partial[0].frame["run in every condition"] == False).all()  # noqa: E712


def test_the_ranking_sentence_names_the_condition_of_each_figure(sweep):
    """The quickstart's "nearest is SPRT: 23.9 runs ... false revert 0.138" paired the runs
    with p0 known and the error rates of the 20-run ledger: each figure now says where."""
    gates = gate_runs(sweep)
    worst = worst_rows(gates.rows.assign(replications=REPS))
    rec = sweep_recommendation(worst, GateTargets(), gates.default_label)
    pick = rec.pick
    s = rec.sentence
    assert "judged at its worst over 2 conditions" in s and "no single condition" in s
    for m, said in (
        ("mean_runs_null", "runs when nothing changed"),
        ("mean_runs_alt", "runs on a real regression"),
    ):
        value = f"{pick[m]:.3g} ± {pick[f'{m}_se']:.2g}"
        assert f"{value} {said} ({pick[f'{m}_condition']})" in s
    for m, said in (
        ("false_revert_rate", "false revert rate is"),
        ("missed_regression_rate", "missed regression rate"),
    ):
        value = f"{pick[m]:.3g} ± {pick[f'{m}_se']:.2g}"
        assert f"{said} {value} ({pick[f'{m}_condition']})" in s
    one = recommend_gate(worst[worst["conditions"] == 1].reset_index(drop=True), GateTargets())
    for cond in set(gates.rows["condition"]):  # one condition: nothing to name
        assert f"({cond})" not in one.sentence


def test_sprt_explanation_reads_its_decisions(sweep):
    gates = gate_runs(sweep)
    t = explain_rows(sweep, gates, tuple(gates.rows["config"]))
    assert len(t) == 2  # the two SPRT runs; the two-sample gate is not an SPRT
    for _, row in t.iterrows():
        run = gates.rows[gates.rows["condition"] == row["condition"]].iloc[0]
        d = sweep.tables[run["run_id"]]["gate_decisions"]
        null = d[d["true_drop"] == 0.0]
        share = (null["reason_code"] == "at_cap").mean()
        undecided, se = row["undecided at max_runs (no change)"].split(" ± ")
        assert float(undecided) == pytest.approx(share, abs=6e-4)
        assert float(se) == pytest.approx(np.sqrt(share * (1 - share) / len(null)), rel=0.05)
        cap_text, total = row["false reverts by the cap rule"].split(" of ")
        cap, total = float(cap_text.split(" ± ")[0]), float(total)
        assert total == pytest.approx((null["verdict"] == "revert").mean(), abs=6e-4)
        assert 0 < cap < total  # "follow the LLR" at the cap adds false reverts
        q = [float(x) for x in row["runs to decide, 10/50/90 % (no change)"].split(" / ")]
        assert q == [float(np.quantile(null["runs_used"], p)) for p in (0.1, 0.5, 0.9)]
    assert (
        t["fixed-sample runs, same alpha/beta"] == fixed_sample_size(0.8, 0.15, 0.05, 0.2)
    ).all()


def test_wald_wolfowitz_bounds_use_the_achieved_error_rates(sweep):
    """issue 11: at drop 0 the nominal bound (24.76) sits above the SPRT's own 23.96 runs;
    at the achieved rates (0.0906, 0.196) it is 22.1 and 23.9."""
    gates = gate_runs(sweep)
    _, bounds = exact_curves(sweep, gates, 0.25)
    b = bounds.sort_values("drop")["bound"].to_numpy()
    op = SPRTGate().operating_point(np.array([0.8, 0.65]), 0.8)
    ref = wald_wolfowitz_bound(0.8, 0.65, op.p_revert[0], 1 - op.p_revert[1])
    np.testing.assert_allclose(b, ref, rtol=1e-12)
    assert b[0] == pytest.approx(22.1, abs=0.05) and b[1] == pytest.approx(23.9, abs=0.05)
    assert b[0] < op.expected_runs[0] and b[1] < op.expected_runs[1]


def test_oc_figure_has_reference_lines_and_a_legend_entry_per_exact_curve(sweep):
    gates = gate_runs(sweep)
    points = operating_points(sweep, gates)
    exact, _ = exact_curves(sweep, gates, 0.25)
    ref = points[points["condition"] == gates.reference_condition]
    colours = {c: (0, 0, 0, 1) for c in points["config"]}
    fig = oc_figure(ref, exact, colours, Refs(0.05, 0.2, 0.15))
    labels = fig.axes[0].get_legend_handles_labels()[1]
    for config in set(ref["config"]):
        assert f"{config} (exact, its own recursion)" in labels
    assert {"alpha = 0.05", "1 - beta = 0.8", "min_drop = 0.15"} <= set(labels)
    assert not any("sprt_operating_point" in x for x in labels)


def test_worst_case_curves_are_each_gates_exact_false_revert(sweep):
    gates = gate_runs(sweep)
    curves = null_curves(sweep, gates, tuple(gates.rows["config"]), {})
    for config, g in curves.groupby("config"):
        run = gates.rows[gates.rows["config"] == config]
        gate = gates.gates[run["run_id"].iloc[0]]
        ledger = g["ledger"].iloc[0]
        prior = None if ledger == "p0 known" else int(ledger)
        ref = gate.operating_curve(g["p0"].to_numpy(), 0.0, prior).p_revert
        np.testing.assert_allclose(g["p_revert"], ref, atol=1e-12)
    sprt = curves[curves["config"].str.contains("sprt")]
    assert (sprt["ledger"] == 20).all()  # its worst condition: the 20-run ledger


def test_the_section_prescribes_and_writes_recommendations(section, tmp_path):
    assert section.said.startswith("Use the ")
    assert (
        "Exact worst cases with a 20-run ledger and concurrent share 0.5: false revert <="
        in section.more
    )
    rec = json.loads(section.files["recommendations.json"])
    assert rec["feasible"] and rec["question"]["ledger"] == 20
    assert rec["question"]["concurrent"] == 0.5
    gate = make_gate(**rec["gate"])
    q = rec["question"]
    from procmem_core.gates import P0Range

    fr = exact_worst_case(gate, 0.0, 20, P0Range(q["p0_low"], q["p0_high"]), target=q["alpha"])
    assert fr.bound <= q["alpha"]
    check = rec["simulation_check"]
    assert [c["quantity"] for c in check] == ["false revert", "power"]
    assert all(c["|z|"] <= 4 for c in check)
    report = Report("fake", "p" * 32, "h", [section], pd.DataFrame({"run_id": ["r1"]}))
    written = write_report(report, tmp_path)
    assert (tmp_path / "recommendations.json").read_text() == section.files["recommendations.json"]
    assert "recommendations.json" in written
    assert any(isinstance(b, str) and b.startswith("recommendations.json beside this report")
               for b in section.blocks)  # fmt: skip


def test_the_prescription_says_what_its_session_counts_count(section):
    """The expected sessions can exceed max_runs under concurrent control (the revision
    accrues runs while the prior's arm fills): the sentence says so, with the design's
    own numbers."""
    rec = json.loads(section.files["recommendations.json"])
    chosen = [a for a in rec["answers"] if a["feasible"] and a["config"] == rec["gate"]]
    assert len(chosen) == 1
    found = re.search(
        r"a decision costs ([\d.]+) sessions when nothing changed and ([\d.]+) at that drop "
        r"\(both arms, expected, worst p0\)\.",
        section.answer,
    )
    arms = re.search(
        r"Per arm \(at share 0.5\), a decision takes ([\d.]+) sessions on the revision \+ "
        r"([\d.]+) on the prior when nothing changed and ([\d.]+) \+ ([\d.]+) at the drop "
        r"\(together [\d.]+ and [\d.]+ days at 100 sessions/day\)",
        section.more,
    )
    assert found and arms, section.said
    null, alt = chosen[0]["runs_null"], chosen[0]["runs_alt"]
    got = [float(found[1]), *map(float, arms.groups()[:2]), float(found[2]),
           *map(float, arms.groups()[2:])]  # fmt: skip
    assert got == [round(sum(null), 1), round(null[0], 1), round(null[1], 1),
                   round(sum(alt), 1), round(alt[0], 1), round(alt[1], 1)]  # fmt: skip
    assert rec["sessions_null"] == pytest.approx(sum(null), rel=1e-12)
    assert rec["sessions_at_drop"] == pytest.approx(sum(alt), rel=1e-12)
    assert rec["objective"] == "null_runs" and "--objective null_runs" in rec["command"]
    assert f"max_runs {rec['gate']['max_runs']}" in section.said
    assert "max_runs caps the runs per arm the gate reads" in section.said


def test_the_sweeps_own_simulation_check_says_whose_replications_they_are(section):
    """The check is simulated by the sweep when it ends (CHECK_REPLICATIONS at CHECK_SEED,
    ``experiments.answers.gate``), not by the sweep's runs that the frame appends in
    brackets: its caption says so."""
    from experiments.answers.gate import CHECK_REPLICATIONS, CHECK_SEED

    check = next(b for b in section.blocks if getattr(b, "caption", "").startswith(
        "The prescribed gate simulated"))  # fmt: skip
    assert (
        f"by the sweep when it ended at its worst p0 ({CHECK_REPLICATIONS:,} replications each, "
        f"seed {CHECK_SEED}; the runs in brackets posed the question" in check.caption
    )
    assert list(check.frame["quantity"]) == ["false revert", "power"]


def test_the_design_table_says_it_is_computed_not_simulated(section):
    design = next(b for b in section.blocks if getattr(b, "caption", "").startswith(
        "The design question, exactly"))  # fmt: skip
    assert design.caption.endswith(
        "computed, not simulated: the runs in brackets only set the question (their hardest "
        "condition)"
    )
    assert len(design.frame) == len(
        {(a, b) for a, b in zip(design.frame["gate family"], design.frame["design"], strict=True)}
    )


def test_factor_figures_have_data_and_captions_that_match(sweep, section, caption_recorder):
    """Issue 30, item 8: ``gate_factor_ledger_size`` and ``_concurrent_share`` were drawn
    with no data under a caption of error bars. A factor whose shown configurations have
    no error rate gives no figure; the real one has its points and bars, and every figure
    of the section passed the caption check (conftest.py)."""
    from dataclasses import replace

    from reports.canvas import palette
    from reports.sections.gate import _factor_block

    figures = {b.name: b for b in section.blocks if hasattr(b, "png")}
    ledger = figures["gate_factor_ledger_size"]
    assert "bars: 95 % Monte Carlo intervals" in ledger.caption
    assert "not joined by lines" in ledger.caption  # 'p0 known' is a category
    assert caption_recorder.checked >= len(figures)
    assert not [f for f in caption_recorder.found if f[0] in figures]
    gates = gate_runs(sweep)
    blank = gates.rows.assign(false_revert_rate=np.nan, missed_regression_rate=np.nan)
    gates = replace(gates, rows=blank)
    shown = tuple(blank["config"].unique())
    col = "params.scenario.ledger_size"
    assert _factor_block(blank, gates, col, "ledger_size", palette(shown), shown) is None


def test_gate_labels_carry_the_parameters_that_tell_them_apart(sweep, section):
    """Issue 30 item 10: the swept two-sample test runs at beta 0.4, max_runs 50 and the
    concurrent design; its label says so (not just "exact two-sample test"), and the SPRT's
    says its beta, cap and design; the conditions stay as they were."""
    gates = gate_runs(sweep)
    two = gates.rows.loc[gates.rows["run_id"] == "r3", "config"].iloc[0]
    cap = TwoSampleGate(beta=0.4).config()["max_runs"]
    for part in ("exact two-sample test", "beta 0.4", f"max runs {cap}", "design concurrent",
                 "concurrent share 0.5"):  # fmt: skip
        assert part in two, two
    sprt = gates.rows.loc[gates.rows["run_id"] == "r1", "config"].iloc[0]
    sprt_cap = SPRTGate().config()["max_runs"]
    for part in ("SPRT", "beta 0.2", f"max runs {sprt_cap}", "design fixed"):
        assert part in sprt, sprt
    assert set(gates.rows["condition"]) == {"p0 known", "ledger size 20"}
    # the worst-case figure's legend gives each curve's worst value with its conditions
    curves = null_curves(sweep, gates, tuple(gates.rows["config"]), {})
    g = curves[curves["config"] == sprt].sort_values("p0")
    top = g.loc[g["p_revert"].idxmax()]
    assert worst_name(sprt, g) == (
        f"{sprt} (ledger 20): worst {top['p_revert']:.3f} at p0 {top['p0']:.2f}"
    )
    # the design table names each family's gate with the settings its worst case holds at
    design = next(b for b in section.blocks if getattr(b, "caption", "").startswith("The design"))
    for _, row in design.frame.iterrows():
        assert re.search(r", max_runs \d+$", row["configuration"]), row["configuration"]
        if row["answer"] != "infeasible":  # "max_runs N": the configuration's own cap
            assert row["configuration"].endswith(row["answer"])
    sprt_row = design.frame[design.frame["gate family"] == "sprt"].iloc[0]
    assert "alpha 0.1, beta 0.5" in sprt_row["configuration"]  # the section's targets
    assert any(c.startswith("false revert (worst over p0 in [") for c in design.frame.columns)


def test_the_section_opens_with_the_world_its_design_reads(section):
    """Issue 30: the world, stated: the swept ledger and concurrent share with their
    values, and the sentence naming what the design question reads."""
    table, sentence = section.blocks[:2]  # then what the answer says beyond 2 sentences
    assert section.more == "" or section.blocks[2] == section.more
    values = table.frame.set_index("parameter")["value"]
    assert values["ledger_size"] == "swept: p0 known, 20"
    assert values["concurrent_share"] == "swept: 0, 0.5"
    assert values["design"] == "swept: fixed, concurrent"
    assert values["p_prior"] == "0.8" and values["replications"] == str(REPS)
    assert sentence == (
        "The prescribed gate depends on p_prior (0.8), ledger_size (swept: p0 known, 20), "
        "concurrent_share (designed at the largest, 0.5; swept: 0, 0.5) and gate.min_drop "
        "(0.15); the others (design, replications) change only the simulated evidence below, "
        "not it."
    )
