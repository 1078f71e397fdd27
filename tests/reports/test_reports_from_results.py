"""``Sweep.from_results`` (issue 24, item 1): in-memory results laid out as a logged sweep,
so the report reads them with no MLflow; and ``ScenarioResult.frame``."""

from __future__ import annotations

import pandas as pd
import pytest

from procmem_core import ConfidenceRule, flat_fate
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
    assert sweep.experiment == "nb" and sweep.param_names == ()
    assert isinstance(sweep.runs, pd.DataFrame) and len(sweep.runs) == 1
    with pytest.raises(ReportError, match=r"results\[1\] is dict"):
        Sweep.from_results([fates[0], {"p_excluded": 0.5}])


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
