"""The live section: its lift is the logs analysis's (``lifts.csv``), on known sessions and
on a real offline live run; the section computes none of its own."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from experiments.analyze import analyze, log_lifts
from experiments.run import compose_job
from experiments.tasks.live import run_task
from reports.sections.live import live_section
from simulators.result import ScenarioResult


def known_sessions(shown_wins: int = 8) -> pd.DataFrame:
    """20 sessions with top key k at explore rate 0.5: shown ``shown_wins``/10 successes,
    withheld 2/10; then 5 sessions without a top key."""
    rows = [
        {"session_id": f"s{i}", "time": i, "top_key": "k", "withheld": i % 2 == 1,
         "explore_rate": 0.5, "outcome": int((i % 2 == 0 and i < 2 * shown_wins) or
                                             (i % 2 == 1 and i < 4)), "tokens": 10}
        for i in range(20)
    ] + [
        {"session_id": f"s{i}", "time": i, "top_key": "", "withheld": False,
         "explore_rate": 0.5, "outcome": 0, "tokens": 10}
        for i in range(20, 25)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def result_of(sessions: pd.DataFrame, where: Path) -> ScenarioResult:
    """A live run's result as the job leaves it: its sessions and the analysis's lifts."""
    where.mkdir(parents=True)
    sessions.to_csv(where / "sessions.csv", index=False)
    tables = {"sessions": sessions, "lifts": log_lifts(where)}
    return ScenarioResult("live", {"n_procedures": 1.0}, tables)


def test_the_lift_of_known_sessions_is_the_analysis_row(sweep_of, tmp_path):
    result = result_of(known_sessions(), tmp_path / "a")
    [row] = result.tables["lifts"].to_dict("records")
    se = math.sqrt(0.8 * 0.2 / 10 + 0.2 * 0.8 / 10)
    assert (row["n_shown"], row["n_withheld"]) == (10, 10)
    assert math.isclose(row["lift"], 0.6) and math.isclose(row["se"], se)
    assert row["ci_low"] < 0.6 < row["ci_high"] and row["effect"]
    section = live_section(sweep_of([({"live.seed": 0}, result)]))
    assert section.said.startswith("The memory helped: 1 of the 1 procedures tested")
    assert f"is +0.60 (SE {se:.2f}, 95 % interval {row['ci_low']:+.2f} to " in section.said
    assert "0.80 over 10 shown against 0.20 over 10 withheld" in section.said
    assert "success 0.40 ± 0.10 over 25 sessions" in section.said
    [table] = [b for b in section.blocks if getattr(b, "caption", "").startswith("Per top")]
    assert table.frame["lift"].tolist() == [row["lift"]]
    assert table.frame["ci_high"].tolist() == [row["ci_high"]]


def test_several_runs_give_the_lift_across_runs(sweep_of, tmp_path):
    a = result_of(known_sessions(8), tmp_path / "a")
    b = result_of(known_sessions(6), tmp_path / "b")
    section = live_section(sweep_of([({"live.seed": 0}, a), ({"live.seed": 1}, b)]))
    # lifts 0.6 and 0.4: mean 0.5, SE across runs |0.6 - 0.4| / 2
    assert "of the 2 procedures tested (procedure-runs, over 2 runs)" in section.said
    assert "over the 2 runs that tested it, +0.50 ± 0.10 (SE across runs)" in section.said
    assert "is +0.60 (SE" in section.said


def test_runs_of_different_configurations_are_not_averaged_together(sweep_of, tmp_path):
    # two seeds of each memory; known_sessions(w): w + 2 successes of 25, lift (w - 2) / 10
    runs = [("flat", 6), ("flat", 4), ("graph", 9), ("graph", 7)]
    entries = [
        ({"live.memory": m, "live.seed": i % 2}, result_of(known_sessions(w), tmp_path / f"r{i}"))
        for i, (m, w) in enumerate(runs)
    ]
    section = live_section(sweep_of(entries))
    said = section.said
    # flat 8/25 and 6/25: 0.28 ± 0.04; graph 11/25 and 9/25: 0.40 ± 0.04 (SE across seeds)
    assert "success 0.28 ± 0.04 (SE across 2 runs) at live.memory=flat" in said
    assert "success 0.40 ± 0.04 (SE across 2 runs) at live.memory=graph" in said
    # the largest lift, +0.70 (graph), beside the graph runs' mean only: (0.7 + 0.5) / 2
    assert "is +0.70 (SE" in said
    assert "over the 2 runs at live.memory=graph that tested it, +0.60 ± 0.10" in said
    # success over sessions: one table per configuration, its windows over its 2 runs
    tables = [b for b in section.blocks if getattr(b, "caption", "").startswith("Success over")]
    assert [t.caption.rsplit(" at ", 1)[1] for t in tables] == [
        "live.memory=flat",
        "live.memory=graph",
    ]
    flat = pd.concat([known_sessions(6), known_sessions(4)])  # 25 sessions: windows of 3
    expected = flat.groupby(flat["time"] // 3)["outcome"].agg(["mean", "count"])
    assert tables[0].frame["success"].tolist() == expected["mean"].tolist()
    assert tables[0].frame["sessions"].tolist() == expected["count"].tolist()


def test_a_memory_whose_procedures_lift_and_lower_success_is_not_said_to_have_helped(
    sweep_of, tmp_path
):
    """k lifts success by +0.6 and j lowers it by 0.6, both effects: the opening said
    'The memory helped: 1 of the 2 procedures tested lifted success and 1 lowered it'."""
    hurt = known_sessions(8).iloc[:20].assign(
        top_key="j", outcome=lambda f: 1 - f["outcome"], time=lambda f: f["time"] + 25,
        session_id=lambda f: "t" + f["time"].astype(str),
    )  # fmt: skip
    result = result_of(pd.concat([known_sessions(8), hurt], ignore_index=True), tmp_path / "a")
    lifts = result.tables["lifts"].set_index("key")
    assert lifts.loc["k", "effect"] and lifts.loc["k", "lift"] > 0
    assert lifts.loc["j", "effect"] and lifts.loc["j", "lift"] < 0
    said = live_section(sweep_of([({"live.seed": 0}, result)])).said
    assert said.startswith(
        "The memory helped with some procedures and hurt with others: 1 of the 2 "
        "procedures tested lifted success and 1 lowered it"
    )


def test_no_withheld_session_says_the_lift_cannot_be_estimated(sweep_of, tmp_path):
    result = result_of(known_sessions().assign(withheld=False), tmp_path / "a")
    assert result.tables["lifts"].empty
    section = live_section(sweep_of([({}, result)]))
    assert "cannot be estimated yet" in section.said


def test_a_real_live_runs_section_states_the_lifts_csv_of_its_sessions(sweep_of, tmp_path):
    over = ["live.sessions=40", "live.explore_rate=0.3", f"live.journal={tmp_path / 'j.jsonl'}",
            "live.memory=graph"]  # fmt: skip
    result = run_task(compose_job("live", over), tmp_path / "out")
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "sessions.csv").write_bytes((tmp_path / "out/artifacts/sessions.csv").read_bytes())
    analyze(str(logs), tmp_path / "an", track_run=False, design=False, prescribe=False)
    lifts = pd.read_csv(tmp_path / "an" / "lifts.csv")
    assert len(lifts) >= 1  # a procedure both shown and withheld
    section = live_section(sweep_of([({"live.seed": 0}, result)]))
    per_run, per_procedure, windows = (b for b in section.blocks if not isinstance(b, str))
    got = per_procedure.frame.set_index("procedure")
    assert list(got.index) == list(lifts["key"])
    for column in ("lift", "se", "ci_low", "ci_high", "cs_low", "cs_high", "p_holm"):
        assert got[column].tolist() == pytest.approx(lifts[column].tolist(), abs=1e-12)
    best = lifts.sort_values(["lift", "key"], ascending=[False, True]).iloc[0]
    stated = (
        f"The largest lift, {best['key']}, is {best['lift']:+.2f} (SE {best['se']:.2f}, "
        f"95 % interval {best['ci_low']:+.2f} to {best['ci_high']:+.2f}; "
    )
    assert stated in section.said
    sessions = result.tables["sessions"]
    assert per_run.frame["sessions"].tolist() == [40]
    assert per_run.frame["success"].tolist() == [sessions["outcome"].mean()]
    assert windows.frame["sessions"].sum() == 40


def test_success_over_sessions_names_its_windows_and_bounds_a_window_at_zero():
    """The table's windows ("0-2", "3-5", ...) were its index, which the report drops: the
    page and tables/*.csv read "success 0, sessions 3, SE 0" row after row with no way to
    tell which sessions a row is (a 30-session offline live run), and a window with no
    success read SE 0. Each row now names its sessions, and its success reads as every
    share does (``fmt``): 0 of 3 with its exact bound, never "± 0"."""
    from reports.sections.live import _over_sessions

    sessions = known_sessions()  # 25 sessions: windows of 3
    table = _over_sessions(sessions)
    assert table.columns[0] == "window (sessions)"
    assert table["window (sessions)"].tolist()[:3] == ["0-2", "3-5", "6-8"]
    assert table["window (sessions)"].tolist()[-1] == "24-24"
    assert table["sessions"].tolist() == [3] * 8 + [1]
    # sessions 6-8 succeed at 6 and 8 (shown wins), fail at 7 (withheld, i >= 4): 2 of 3
    assert table["success"].tolist()[2] == pytest.approx(2 / 3)
    assert table["success ± SE"].tolist()[2] == f"0.667 ± {math.sqrt(2 / 9 / 3):.2g}"
    # sessions 21-23 have no top key and fail: 0 of 3 with its one-sided bound
    assert table["success ± SE"].tolist()[7] == "0 (none of 3; < 0.632 at 95 %)"
    assert "SE" not in table.columns
