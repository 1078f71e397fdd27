"""The live section: the lift sentence and tables from the session log, on known sessions
and on a real offline live run."""

from __future__ import annotations

import math

import pandas as pd

from experiments.run import compose_job
from experiments.tasks.live import run_task
from reports.sections.live import lift_row, live_section
from simulators.result import ScenarioResult


def known_sessions() -> pd.DataFrame:
    """20 sessions with top key k: shown 8/10 successes, withheld 2/10; then 5 without."""
    rows = [
        {"session_id": f"s{i}", "time": i, "top_key": "k", "withheld": i % 2 == 1,
         "outcome": int((i % 2 == 0 and i < 16) or (i % 2 == 1 and i < 4)), "tokens": 10}
        for i in range(20)
    ] + [
        {"session_id": f"s{i}", "time": i, "top_key": "", "withheld": False, "outcome": 0,
         "tokens": 10}
        for i in range(20, 25)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_the_lift_of_known_sessions_and_its_interval(sweep_of):
    sessions = known_sessions()
    row = lift_row(sessions[sessions["top_key"] == "k"])
    assert (row["n_shown"], row["n_withheld"]) == (10, 10)
    assert (row["success_shown"], row["success_withheld"]) == (0.8, 0.2)
    se = math.sqrt(0.8 * 0.2 / 10 + 0.2 * 0.8 / 10)
    assert math.isclose(row["se"], se) and math.isclose(row["lift"], 0.6)
    result = ScenarioResult("live", {"n_procedures": 1.0}, {"sessions": sessions})
    section = live_section(sweep_of([({"live.seed": 0}, result)]))
    assert section.answer.startswith("The memory helped: ")
    assert "0.80 of the time against 0.20" in section.answer
    assert f"{0.6 - 1.959963984540054 * se:+.2f} to {0.6 + 1.959963984540054 * se:+.2f}" in (
        section.answer
    )
    assert "success 0.40 ± 0.10 over 25 sessions" in section.answer


def test_no_withheld_session_says_the_lift_cannot_be_estimated(sweep_of):
    sessions = known_sessions().assign(withheld=False)
    result = ScenarioResult("live", {}, {"sessions": sessions})
    section = live_section(sweep_of([({}, result)]))
    assert "cannot be estimated yet" in section.answer


def test_a_real_live_run_reports_its_own_numbers(sweep_of, tmp_path):
    over = ["live.sessions=20", "live.explore_rate=0.3", f"live.journal={tmp_path / 'j.jsonl'}"]
    result = run_task(compose_job("live", over), tmp_path / "out")
    section = live_section(sweep_of([({"live.seed": 0}, result)]))
    per_run, per_procedure, windows = (b for b in section.blocks if not isinstance(b, str))
    sessions = result.tables["sessions"]
    assert per_run.frame["sessions"].tolist() == [20]
    assert per_run.frame["success"].tolist() == [sessions["outcome"].mean()]
    drawn = sessions[sessions["top_key"] != ""]
    assert sorted(per_procedure.frame["procedure"]) == sorted(drawn["top_key"].unique())
    assert per_procedure.frame["n_shown"].sum() + per_procedure.frame["n_withheld"].sum() == len(
        drawn
    )
    assert windows.frame["sessions"].sum() == 20
