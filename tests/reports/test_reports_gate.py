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
from matplotlib.lines import Line2D
from scipy import stats

from experiments.answers import sweep_answers
from procmem_core.gates import SPRTGate, TwoSampleGate, make_gate, wald_wolfowitz_bound
from procmem_core.gates import worst_case as exact_worst_case
from reports.document import Report, write_report
from reports.recommend import GateTargets, recommend_gate
from reports.sections.gate import gate_section
from reports.sections.gate_explain import explain_rows, fixed_sample_size
from reports.sections.gate_figures import Refs, factor_figure, oc_figure, worst_name
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
        ("false_revert_rate", "false revert rate"),
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


def test_fixed_sample_size_against_brute_force():
    def brute(p0, p1, a, b):
        for n in range(1, 400):
            for c in range(n + 1):
                if stats.binom.cdf(c, n, p0) <= a and stats.binom.cdf(c, n, p1) >= 1 - b:
                    return n
        return None

    for p0 in (0.6, 0.8, 0.9):
        assert fixed_sample_size(p0, 0.15, 0.05, 0.2) == brute(p0, p0 - 0.15, 0.05, 0.2)


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


def test_categorical_factor_levels_are_never_joined():
    table = pd.DataFrame(
        {
            "config": ["a", "a"],
            "scenario.ledger_size": [None, 20],
            "false_revert_rate": [0.09, 0.14],
            "false_revert_rate_se": [0.001, 0.001],
            "missed_regression_rate": [0.2, 0.36],
            "missed_regression_rate_se": [0.001, 0.001],
        }
    )
    fig = factor_figure(table, "scenario.ledger_size", {"a": (0, 0, 0, 1)}, "ledger", "p0 known")
    for ax in fig.axes:
        joined = [ln for ln in ax.get_lines() if isinstance(ln, Line2D) and len(ln.get_xdata()) > 1
                  and ln.get_linestyle() not in ("None", "none", " ", "")]  # fmt: skip
        assert not joined


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
    assert section.answer.startswith("Use the ")
    assert "exact worst cases: false revert <=" in section.answer
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
        r"a decision costs ([\d.]+) sessions \(([\d.]+) on the revision \+ ([\d.]+) on the "
        r"prior, at share 0.5; [\d.]+ days at 100 sessions/day\) when nothing changed and "
        r"([\d.]+) sessions \(([\d.]+) on the revision \+ ([\d.]+) on the prior",
        section.answer,
    )
    assert found, section.answer
    null, alt = chosen[0]["runs_null"], chosen[0]["runs_alt"]
    got = [float(x) for x in found.groups()]
    assert got == [round(sum(null), 1), round(null[0], 1), round(null[1], 1),
                   round(sum(alt), 1), round(alt[0], 1), round(alt[1], 1)]  # fmt: skip
    assert rec["sessions_null"] == pytest.approx(sum(null), rel=1e-12)
    assert rec["sessions_at_drop"] == pytest.approx(sum(alt), rel=1e-12)
    assert rec["objective"] == "null_runs" and "--objective null_runs" in rec["command"]
    assert f"max_runs {rec['gate']['max_runs']}" in section.answer
    assert "max_runs caps the runs per arm the gate reads" in section.answer


def test_the_prescription_shows_its_design_frontier():
    """A prescribed two-sample gate stops early when nothing changed: the sentence says so and
    the section shows its frontier (caps against expected pairs) with the Wald-Wolfowitz
    bound; recommendations.json holds the frontier."""
    from procmem_core.gates import DesignQuestion, design_gate
    from reports.sections.gate import _frontier_block
    from reports.sections.gate_design import Prescription

    q = DesignQuestion(alpha=0.1, beta=0.3, min_drop=0.3, ledger=10, concurrent=0.5,
                       p0_low=0.4, p0_high=0.9, max_runs=40)  # fmt: skip
    design = design_gate(q)
    chosen = next(a for a in design.answers if (a.family, a.design) == ("two_sample", "concurrent"))
    p = Prescription(q, design, chosen, pd.DataFrame())
    assert "stops early when nothing changed" in p.sentence()
    (fig,) = _frontier_block(p)
    assert fig.name == "gate_frontier" and fig.png.startswith(b"\x89PNG")
    assert f"within {chosen.bound.ratio:.3f} of it" in fig.caption
    rec = json.loads(p.recommendations())
    got = next(a for a in rec["answers"] if a["config"] == rec["gate"])
    caps = [x["max_runs"] for x in got["frontier"]]
    assert caps == sorted(caps) and caps[-1] == 40 and chosen.max_runs in caps
    assert got["bound"]["bound"] < got["bound"]["runs"]


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


def test_an_infeasible_recommendations_file_says_what_to_do_instead():
    """No gate can meet these targets within 10 runs: the file has no ``gate`` (which
    ``make_gate(**rec["gate"])`` could not build), says what to do, and names the
    closest gate, which ``make_gate`` builds."""
    from procmem_core.gates.design import DesignQuestion, design_gate
    from reports.sections.gate_design import Prescription

    q = DesignQuestion(
        alpha=0.01, beta=0.01, min_drop=0.05, ledger=20, concurrent=0.0,
        p0_low=0.3, p0_high=0.95, max_runs=10,
    )  # fmt: skip
    design = design_gate(q)
    assert not design.feasible
    rec = json.loads(Prescription(q, design, None, pd.DataFrame()).recommendations())
    assert rec["feasible"] is False and "gate" not in rec
    assert rec["instead"].startswith("no gate meets the targets within 10 runs; to get one: ")
    closest = make_gate(**rec["closest_gate"])
    best = max(design.answers, key=lambda a: (a.false_revert <= q.alpha, a.power))
    assert closest.config() == make_gate(**best.config).config()
    assert rec["sentence"].startswith("No gate meets false revert <= 0.01")


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


def test_the_prescription_shows_its_guarantee_against_ledger_size_and_share():
    """The prescribed two-sample gate recalibrates per ledger size: the section's table holds
    its exact worst cases per size (each <= alpha) beside the levels-kept figures, the
    sentence says which design holds the guarantee, and the share table's error rate is the
    same at every share while the sessions move with it (exact)."""
    from experiments.answers.gate import profile
    from procmem_core.gates import DesignQuestion, LedgerRow, design_gate, ledger_profile
    from reports.sections.gate_design import Prescription

    q = DesignQuestion(alpha=0.1, beta=0.3, min_drop=0.3, ledger=10, concurrent=0.5,
                       p0_low=0.4, p0_high=0.9, max_runs=40, ledger_sizes=(0, 10, 40))  # fmt: skip
    design = design_gate(q)
    chosen = next(a for a in design.answers if (a.family, a.design) == ("two_sample", "concurrent"))
    p = Prescription(q, design, chosen, pd.DataFrame(),
                     tuple(LedgerRow(**r) for r in profile(chosen, q)))  # fmt: skip
    rows = ledger_profile(make_gate(**chosen.config), (0, 10, 40))
    assert p.profile == rows
    table = p.ledger_table()
    assert list(table.frame["ledger (runs)"]) == [0, 10, 40]
    fr = table.frame["false revert, recalibrated (worst, bound)"]
    assert list(fr) == [round(r.false_revert, 4) for r in rows] and (fr <= 0.1).all()
    assert list(table.frame["false revert, 10-run levels kept (worst, bound)"]) == [
        round(r.false_revert_kept, 4) for r in rows
    ]
    assert "recalibrates its revert and final levels for the ledger it sees" in table.caption
    sentence = p.sentence()
    assert "recalibrates its revert and final levels for the ledger a revision has" in sentence
    worst, kept = max(r.false_revert for r in rows), max(r.false_revert_kept for r in rows)
    assert f"exact worst case <= {worst:.4f} at ledgers 0, 10, 40" in sentence
    assert f"levels kept would reach {kept:.4f}" in sentence
    weakest = min(rows, key=lambda r: r.power)
    assert f"least at ledger {weakest.ledger} ({weakest.power:.3f})" in sentence
    shares = p.share_table().frame
    assert list(shares["concurrent share"]) == [0.25, 0.5, 0.75]
    assert shares["false revert (worst, bound)"].nunique() == 1
    null = shares["sessions when nothing changed (worst p0)"]
    # both arms must reach the pairs: the total is symmetric in q <-> 1 - q, least at 1/2
    assert null[0] == pytest.approx(null[2], abs=0.11) and null[1] < null[0]
    rec = json.loads(p.recommendations())
    assert [r["ledger"] for r in rec["ledger_profile"]] == [0, 10, 40]


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


def _two_curves(same: bool) -> pd.DataFrame:
    p0 = np.linspace(0.1, 0.9, 30)
    y = 0.2 * np.sin(np.pi * p0)
    other = y + (0.001 if same else 0.05)
    return pd.concat(
        [
            pd.DataFrame({"config": "SPRT, min runs 3", "ledger": 20, "p0": p0, "p_revert": y}),
            pd.DataFrame({"config": "SPRT, min runs 5", "ledger": 20, "p0": p0, "p_revert": other}),
        ]
    )


def test_coinciding_curves_are_drawn_distinguishably_and_said_to_coincide():
    """Issue 30 item 9: SPRT min runs 3 was drawn exactly under min runs 5. Curves within
    0.005 everywhere are detected from the data, the later one drawn dashed with markers, and
    the caption note names them; curves apart are neither restyled nor said to coincide."""
    from reports.claims import coincide_note
    from reports.sections.gate_figures import curve_groups, worst_case_figure

    colours = {"SPRT, min runs 3": (0, 0, 1, 1), "SPRT, min runs 5": (1, 0, 0, 1)}
    together = _two_curves(same=True)
    groups = curve_groups(together, "p0", "p_revert")
    assert groups == [("SPRT, min runs 3", "SPRT, min runs 5")]
    fig = worst_case_figure(together, colours, 0.05)
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    first = next(v for k, v in lines.items() if k.startswith("SPRT, min runs 3"))
    second = next(v for k, v in lines.items() if k.startswith("SPRT, min runs 5"))
    assert first.get_linestyle() == "-" and first.get_marker() in ("None", "none", "")
    assert second.get_linestyle() == "--" and second.get_marker() == "x"
    note = coincide_note(groups)
    assert "The curves of SPRT, min runs 3 and SPRT, min runs 5 coincide" in note
    apart = _two_curves(same=False)
    assert curve_groups(apart, "p0", "p_revert") == [] and coincide_note([]) == ""
    fig = worst_case_figure(apart, colours, 0.05)
    styles = {ln.get_linestyle() for ln in fig.axes[0].get_lines() if ln.get_label()[:4] == "SPRT"}
    assert styles == {"-"}


def test_equal_points_are_set_apart_in_factor_and_tradeoff_figures():
    """Two configurations with the same error rates at one ledger size: the factor figure
    sets them side by side, the trade-off figure gives the later its own marker and the
    caption's note names them."""
    from reports.sections.gate_figures import tradeoff_figure, tradeoff_groups

    table = pd.DataFrame(
        {
            "config": ["a", "b"],
            "scenario.ledger_size": [20, 20],
            "false_revert_rate": [0.137, 0.138],
            "false_revert_rate_se": [0.001, 0.001],
            "missed_regression_rate": [0.362, 0.362],
            "missed_regression_rate_se": [0.001, 0.001],
            "frontier": [True, False],
        }
    )
    colours = {"a": (0, 0, 1, 1), "b": (1, 0, 0, 1)}
    fig = factor_figure(table, "scenario.ledger_size", colours, "ledger", "p0 known")
    xs = sorted(float(c.lines[0].get_xdata()[0]) for c in fig.axes[0].containers)
    assert len(xs) == 2 and xs[1] - xs[0] == pytest.approx(0.15)
    assert tradeoff_groups(table) == [("a", "b")]
    fig = tradeoff_figure(table, colours, (0.05, 0.2), ("a", "b"))
    markers = [c.lines[0].get_marker() for c in fig.axes[0].containers]
    assert sorted(markers) == ["o", "x"]


def test_the_section_opens_with_the_world_its_design_reads(section):
    """Issue 30: the world, stated: the swept ledger and concurrent share with their
    values, and the sentence naming what the design question reads."""
    table, sentence = section.blocks[:2]
    values = table.frame.set_index("parameter")["value"]
    assert values["ledger_size"] == "swept: p0 known, 20"
    assert values["concurrent_share"] == "swept: 0, 0.5"
    assert values["design"] == "swept: fixed, concurrent"
    assert values["p_prior"] == "0.8" and values["replications"] == str(REPS)
    assert sentence == (
        "The prescribed gate depends on p_prior (0.8), ledger_size (swept: p0 known, 20), "
        "concurrent_share (swept: 0, 0.5) and gate.min_drop (0.15); the others (design, "
        "replications) change only the simulated evidence below, not it."
    )
