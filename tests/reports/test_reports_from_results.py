"""``Sweep.from_results`` (issue 24, item 1): in-memory results laid out as a logged sweep,
so the report reads them with no MLflow; and ``ScenarioResult.frame``."""

from __future__ import annotations

import pandas as pd
import pytest

from procmem_core import ConfidenceRule, flat_fate
from procmem_core.metric import fmt
from reports.errors import ReportError
from reports.source import Sweep
from reports.summary import agreement_table, summary_table
from simulators.scenarios.fate import ProcedureFateScenario


@pytest.fixture(scope="module")
def fates():
    rule = ConfidenceRule()
    return [
        ProcedureFateScenario(p=p, sessions=20, rule=rule, replications=3_000).run(seed=7)
        for p in (0.6, 0.8)
    ]


def test_the_frame_is_the_flat_metrics_as_records_and_agrees_with_exact(fates):
    result = fates[0]
    before = dict(result.metrics)
    frame = result.frame().set_index("metric")
    assert result.metrics == before  # what is logged is unchanged
    assert list(frame.index) == ["p_excluded", "expected_sessions_applied", "break_even"]
    row = frame.loc["p_excluded"]
    assert row["value"] == before["p_excluded"] and row["se"] == before["p_excluded_se"]
    assert row["exact"] == pytest.approx(flat_fate(0.6, 20).p_excluded, abs=1e-12)
    assert row["z"] == pytest.approx((row["value"] - row["exact"]) / row["se"])
    assert (frame["z"].dropna().abs() <= 4).all()  # simulation within 4 SE of exact
    assert frame.loc["break_even"][["se", "exact", "z"]].isna().all()
    assert result.metric("p_excluded").within(4)
    assert "<td>p_excluded</td>" in result._repr_html_()


def test_from_results_lays_out_runs_as_a_logged_sweep(fates):
    sweep = Sweep.from_results(
        [({"scenario": {"p": 0.6}, "rule.name": "confidence"}, fates[0]),
         ({"scenario": {"p": 0.8}, "rule.name": "confidence"}, fates[1])]
    )  # fmt: skip
    assert list(sweep.runs["run_id"]) == ["run000", "run001"]
    assert list(sweep.runs["params.scenario.p"]) == [0.6, 0.8]
    assert sweep.swept_params == ("params.scenario.p",)
    assert sweep.runs.at[1, "p_excluded_exact"] == fates[1].metrics["p_excluded_exact"]
    fate_table = sweep.table("fates")
    assert len(fate_table) == 2 * len(fates[0].tables["fates"])
    assert set(fate_table["run_id"]) == {"run000", "run001"}
    # the report's agreement reads the same z as the frame
    agreement = agreement_table(sweep).set_index(["run", "metric"])
    z = agreement.loc[("fate-1", "p_excluded"), "z"]
    assert z == pytest.approx(fates[1].frame().set_index("metric").at["p_excluded", "z"])
    assert list(summary_table(sweep)["scenario.p"]) == [0.6, 0.8]


def test_from_results_takes_bare_results_and_names_a_wrong_entry(fates):
    sweep = Sweep.from_results(fates[:1], experiment="nb")
    # a bare result carries the world it was simulated in, as a logged job's params
    run = sweep.runs.iloc[0]
    assert sweep.experiment == "nb" and sweep.swept_params == ()
    assert (run["params.scenario.p"], run["params.scenario.sessions"]) == (0.6, 20)
    assert (run["params.rule.name"], run["params.rule.penalty"]) == ("confidence", 0.15)
    assert isinstance(sweep.runs, pd.DataFrame) and len(sweep.runs) == 1
    with pytest.raises(ReportError, match=r"results\[1\] is dict"):
        Sweep.from_results([fates[0], {"p_excluded": 0.5}])
    # a pair whose params are not a mapping, or a triple, is named, not an AttributeError
    with pytest.raises(ReportError, match=r"results\[0\] is \(list, \.\.\.\)"):
        Sweep.from_results([(["p"], fates[0])])
    with pytest.raises(ReportError, match=r"results\[1\] is a tuple of 3"):
        Sweep.from_results([fates[0], ({}, fates[1], 3)])


@pytest.mark.parametrize(
    ("results", "experiment", "fragment"),
    [
        ([], "nb", r"results=\[\]: expected at least one ScenarioResult"),  # was a KeyError later
        (None, "nb", r"results=None: expected a list of ScenarioResults"),  # was a TypeError
        ("fate", "nb", r"results='fate': expected a list"),  # was "results[0] is str"
        ({"gate.alpha": 0.05}, "nb", r"results=\{'gate.alpha': 0.05\}: expected a list"),
        (None, 5, r"results=None"),  # the results are checked first
    ],
)
def test_from_results_refuses_what_is_not_a_list_of_results(results, experiment, fragment):
    with pytest.raises(ReportError, match=fragment):
        Sweep.from_results(results, experiment)


def test_from_results_refuses_an_experiment_that_is_not_a_name(fates):
    for bad in (5, "", None):
        with pytest.raises(ReportError, match=f"experiment={bad!r}: expected a non-empty string"):
            Sweep.from_results(fates[:1], bad)
    assert len(Sweep.from_results(iter(fates)).runs) == 2  # any iterable of results


def test_build_report_refuses_what_is_not_a_sweep_or_options(fates):
    """A dict of options was an AttributeError ('dict' object has no attribute 'gate') from
    inside a section; a list of results in place of the sweep another AttributeError."""
    from reports.build import build_report

    sweep = Sweep.from_results(fates[:1])
    with pytest.raises(ReportError, match=r"options=\{'target_power': 0.8\}: expected a "):
        build_report(sweep, {"target_power": 0.8})
    with pytest.raises(ReportError, match=r"sweep is list: expected a reports\.source\.Sweep"):
        build_report(fates)


def test_the_fate_headline_reads_the_simulated_value_when_a_run_logged_no_exact(fates):
    """A run whose exact value is missing (NaN, as MLflow gives an unlogged metric) read
    "excluded ... with probability nan (nan exact, simulated 0.76 ± 0.0078)"."""
    from experiments.answers import sweep_answers
    from reports.sections.fate import fate_section
    from simulators.result import ScenarioResult

    metrics = dict(fates[1].metrics) | {"p_excluded_exact": float("nan")}
    lost = ScenarioResult("fate", metrics=metrics, tables=fates[1].tables,
                          params=fates[1].params)  # fmt: skip
    sweep = Sweep.from_results([lost])
    sweep.answers = sweep_answers(sweep.runs)
    said = fate_section(sweep).said
    simulated = fmt(metrics["p_excluded"], metrics["p_excluded_se"], replications=3_000)
    assert "nan" not in said
    assert f"with probability {metrics['p_excluded']:.2f} (simulated {simulated})" in said


def test_calibration_block_sizes_are_neither_swept_nor_the_world(fates):
    """Blocks say how a run checks its SEs (simulators.calibration_blocks): a sweep whose
    jobs differ only there sweeps nothing and shows no world column for them."""
    from reports.world import world_columns

    blocked = ProcedureFateScenario(p=0.6, sessions=20, replications=3_000, calibration_blocks=3)
    sweep = Sweep.from_results(
        [({"scenario": {"p": 0.6, "calibration_blocks": 0}}, fates[0]),
         ({"scenario": {"p": 0.6, "calibration_blocks": 3}}, blocked.run(seed=7))]
    )  # fmt: skip
    assert "params.scenario.calibration_blocks" in sweep.runs.columns
    assert sweep.swept_params == ()
    assert "params.scenario.calibration_blocks" not in world_columns(sweep.runs)
    assert len(agreement_table(sweep)) == 2 + (2 + 3)  # the blocks are pairs too


def test_the_report_reads_the_world_each_result_was_simulated_in():
    """The notebook's walk-through with other parameters and only a label as params: the
    report's fate section exists and uses the run's own rule (penalty 0.12: one failure
    takes 0.60 to 0.48) and horizon, and the gate section designs against the gate's own
    min_drop (0.2), not the defaults (before: no fate section, a drop of 0.15, and the
    nearest swept gate named "?")."""
    from experiments.answers import sweep_answers
    from procmem_core import SPRTGate
    from reports.build import build_report
    from reports.document import render_markdown
    from simulators.scenarios.gate import GateScenario

    rule, gate = ConfidenceRule(reward=0.1, penalty=0.12), SPRTGate(alpha=0.1, min_drop=0.2)
    fate = ProcedureFateScenario(p=0.62, sessions=35, rule=rule, replications=1_000).run(5)
    gates = GateScenario(gate=gate, drops=(0.0, 0.2), replications=1_000).run(seed=6)
    sweep = Sweep.from_results([({"rule.name": "confidence"}, fate), ({"gate.alpha": 0.1}, gates)])
    sweep.answers = sweep_answers(sweep.runs)
    md = render_markdown(build_report(sweep))
    exact = flat_fate(0.62, 35, rule).p_excluded
    assert "## One procedure's fate under the flat rule" in md
    assert f"excluded within 35 sessions with probability {exact:.2f}" in md
    assert "takes 0.60 to 0.48, below the threshold 0.55" in md
    assert "against a drop of 0.2 at every prior rate" in md
    assert "the nearest is ?" not in md
