"""The loop section under informative missingness (issue 29, item 6): the verdict is read
from the default channel's rows and the informative channel's is stated next to it, with
its 95 % interval, the difference and its SE, and the naive lift against the exact bias.
Real small loop runs, read as a sweep; every number recomputed here."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from reports.evidence import fmt, fmt_metric
from reports.sections.loop import loop_section
from reports.sections.loop_evidence import verdict_of
from reports.sections.loop_missing import split_channels, twins
from reports.source import Sweep
from simulators import Feedback, InformativeMissing
from simulators.scenarios.loop import LoopScenario

SMALL = {"tasks": 2, "sessions": 200, "revise_every": 20, "replications": 6, "explore_rate": 0.2}
CHANNEL = InformativeMissing(missing_if_success=0.5, missing_if_failure=0.1)


@pytest.fixture(scope="module")
def sweep():
    runs, tables = [], {}
    for i, (limit, fb) in enumerate(
        [(3, Feedback()), (0, Feedback()), (3, Feedback((CHANNEL,))), (0, Feedback((CHANNEL,)))]
    ):
        sc = LoopScenario(**SMALL, strike_limit=limit, feedback=fb)
        res = sc.run(21)
        row = {"run_id": f"r{i}", "scenario": "loop", "status": "FINISHED", **res.metrics}
        row["params.scenario.strike_limit"] = limit
        row["params.scenario.replications"] = SMALL["replications"]
        if not fb.noiseless:
            row["params.feedback.informative_missing.missing_if_success"] = 0.5
            row["params.feedback.informative_missing.missing_if_failure"] = 0.1
        runs.append(row)
        tables[f"r{i}"] = res.tables
    frame = pd.DataFrame(runs)
    names = tuple(c for c in frame.columns if c.startswith("params."))
    metrics = tuple(c for c in frame.columns if c not in names and c != "run_id")
    return Sweep("loop", "parent", "loop", frame, names, metrics, tables)


def test_the_channels_are_split_and_paired_by_setting(sweep):
    default, missing = split_channels(sweep.runs)
    assert list(default.run_id) == ["r0", "r1"] and list(missing.run_id) == ["r2", "r3"]
    assert [(a.run_id, b.run_id) for a, b in twins(default, missing)] == [
        ("r0", "r2"),
        ("r1", "r3"),
    ]


def test_the_verdict_under_informative_missingness_is_stated_next_to_the_default(sweep):
    section = loop_section(sweep)
    said = section.said  # the opening and the paragraph after it
    runs = sweep.runs.set_index("run_id")
    a, b = runs.loc["r0"], runs.loc["r2"]  # the seeds' strike limit, each channel
    va, vb = verdict_of(a), verdict_of(b)
    assert "Under informative missingness (a success unrated with probability 0.5" in (said)
    assert f"{vb.describe()}, against {va.describe()} under the default channel" in (said)
    d = b["regret_change"] - a["regret_change"]
    se = math.hypot(a["regret_change_se"], b["regret_change_se"])
    assert f"the difference {fmt(d, se)} is" in said
    assert f"reads {fmt_metric(b, 'naive_lift')} against {fmt_metric(b, 'lift')}" in (said)
    # the exact bias at these rates is negative and clear of 0: failures are rated more
    assert b["naive_lift_bias"] < -0.02 and b["naive_lift_bias_se"] < 0.01
    table = next(x.frame for x in section.blocks if getattr(x, "caption", "").startswith(
        "The verdict under informative missingness"))  # fmt: skip
    assert len(table) == 2
    caption = next(x.caption for x in section.blocks if getattr(x, "caption", "").startswith(
        "The verdict under informative missingness"))  # fmt: skip
    assert caption.count("informative missingness") == 1, caption  # not "(informative ...("
    figures = [b for b in section.blocks if hasattr(b, "png")]
    assert figures and all(f.caption.endswith(" Drawn at perfect feedback.") for f in figures)
    for a_id, b_id in (("r0", "r2"), ("r1", "r3")):  # simultaneous over the 2 settings
        x, y = runs.loc[a_id], runs.loc[b_id]
        lo, hi = verdict_of(y, 2).interval
        want = f"{fmt(y['regret_change'], y['regret_change_se'])} [{lo:+.3f}, {hi:+.3f}]"
        row = table[table["informative: regret change"] == want]
        assert len(row) == 1
        dd = y["regret_change"] - x["regret_change"]
        assert row.iloc[0]["difference (± SE)"] == fmt(
            dd, math.hypot(x["regret_change_se"], y["regret_change_se"])
        )
        assert row.iloc[0]["exact bias"] == fmt_metric(y, "naive_lift_bias")
    # the verdict and loop_verdict.json come from the default channel's 2 settings only
    data = json.loads(section.files["loop_verdict.json"])
    assert data["ci_level"] == "95 % interval simultaneous over 2 settings, Bonferroni"
    assert data["setting"] in (["scenario.strike_limit=3"], ["scenario.strike_limit=0"])


def _only(sweep: Sweep, ids: list[str]) -> Sweep:
    runs = sweep.runs[sweep.runs.run_id.isin(ids)].reset_index(drop=True)
    tables = {i: sweep.tables[i] for i in ids}
    return Sweep("loop", "parent", "loop", runs, sweep.param_names, sweep.metric_names, tables)


@pytest.mark.parametrize("ids", [["r2", "r3"], ["r2"]], ids=["two settings", "one run"])
def test_a_sweep_under_the_informative_channel_alone_says_its_verdict_is_read_under_it(sweep, ids):
    """experiment=loop feedback=failures_rated: every row is informative, so the verdict is
    read from them. The old section never said so: 'At the seeds' settings the loop's
    answer is ...' for a loop whose failed sessions were rated more often, as if under
    perfect feedback (only the world table listed the channel)."""
    said = loop_section(_only(sweep, ids)).said
    assert (
        "Every run here ran under informative missingness (a success unrated with "
        "probability 0.5, a failure with 0.1), so each verdict is read under it, not under "
        "perfect feedback (feedback=perfect,failures_rated runs both side by side)."
    ) in said
    assert "informative" not in loop_section(_only(sweep, ["r0", "r1"])).said


def test_the_setting_means_say_they_leave_the_informative_channel_out(sweep):
    """The verdict and the by-setting means read the default channel's rows only (the
    informative ones are compared beside them); the sentence said the means were 'over
    every other setting and condition', which the informative runs are not averaged into.
    Recomputed: strike limit 3 and 0 of the default channel, r0 and r1."""
    section = loop_section(sweep)
    runs = sweep.runs.set_index("run_id")
    table = next(x for x in section.blocks if getattr(x, "caption", "").startswith(
        "Regret change and regret by setting"))  # fmt: skip
    assert table.caption.endswith("(the default channel's runs)")
    by_value = table.frame.set_index("value")["regret change"]
    for run_id, limit in (("r0", "3"), ("r1", "0")):
        assert by_value[limit] == fmt_metric(runs.loc[run_id], "regret_change")
    said = section.said
    assert "(means over every other setting and condition of the default channel's runs)" in said
    assert "(means over every other setting and condition)" not in said
