"""The A/B section on real scenario output: one row per cell and procedure, read per
deployment, its numbers checked against the scenario's own per-replication estimates and
against hand computations; SRM-flagged deployments never count as effects."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from reports.sections.ab import ab_section, rate
from reports.sections.ab_deployments import deployments, summarise
from simulators.result import ScenarioResult
from simulators.scenarios.explore import ExploreScenario
from simulators.scenarios.loop import LoopScenario


@pytest.fixture(scope="module")
def runs():
    explore = ExploreScenario(replications=400, sessions=300, users=30).run(3)
    loop = LoopScenario(replications=3, sessions=300).run(4)
    return explore, loop


@pytest.fixture
def section(runs, sweep_of):
    explore, loop = runs
    params = {"explore.explore_rate": 0.1, "scenario.sessions": 300, "explore.estimator": "dim"}
    loop_params = {"explore.explore_rate": 0.1, "scenario.sessions": 300}
    return ab_section(sweep_of([(params, explore), (loop_params, loop)]))


def _table(section, start: str) -> pd.DataFrame:
    return next(
        b.frame for b in section.blocks if hasattr(b, "frame") and b.caption.startswith(start)
    )


def test_explore_row_is_the_scenarios_own_per_deployment_read(runs, section):
    explore, _ = runs
    table = _table(section, "Per deployment")
    row = table[table["cell"].str.startswith("explore")].iloc[0]
    est = explore.tables["estimates"]
    dim = est[est["estimator"] == "dim"]
    # the report recomputes Newcombe from the logged counts; the scenario computed it from
    # the sessions: the same intervals, so the same power and medians
    excludes = (dim["ci_low"] > 0) | (dim["ci_high"] < 0)
    assert rate(row["power"]) == pytest.approx(excludes.mean(), abs=1e-3)  # 3 digits
    se = np.sqrt(excludes.mean() * (1 - excludes.mean()) / 400)
    assert row["power"].endswith(f"± {se:.2g}")
    assert row["power after Holm"] == row["power"]  # one procedure per deployment
    lo, hi = (float(x) for x in re.findall(r"-?\d\.\d+", row["fixed-n 95 % interval (median)"]))
    assert lo == pytest.approx(dim["ci_low"].median(), abs=5e-4)
    assert hi == pytest.approx(dim["ci_high"].median(), abs=5e-4)
    assert row["width"] == pytest.approx((dim["ci_high"] - dim["ci_low"]).median())
    assert row["deployments"] == "400 of 400"
    assert rate(row["SRM flagged"]) == pytest.approx(explore.metrics["srm_flag_rate"], abs=5e-4)
    assert row["true lift"] == pytest.approx(explore.metrics["true_lift_pool"])


def test_loop_rows_adjust_within_each_deployment(runs):
    _, loop = runs
    d = deployments(loop.tables["ab_arms"], 0.1)
    one = d[(d["replication"] == 0) & d["compared"]].sort_values("p")
    m = len(one)
    # Holm by hand: sorted p times (m, m-1, ...), running max, capped at 1
    want = np.minimum(1, np.maximum.accumulate(one["p"].to_numpy() * np.arange(m, 0, -1)))
    assert one["fixed_holm"].to_numpy() == pytest.approx(want)
    # BH by hand: sorted p times m / rank, running min from the largest, capped at 1
    bh = one["p"].to_numpy() * m / np.arange(1, m + 1)
    want_bh = np.minimum(1, np.minimum.accumulate(bh[::-1])[::-1])
    assert one["fixed_bh"].to_numpy() == pytest.approx(want_bh)
    s = summarise(d)
    assert (s["power_holm"] <= s["power"] + 1e-12).all()
    assert (s["family"] == d.groupby("replication")["compared"].sum().median()).all()
    c = d[d["compared"]]
    for _, row in s[s["compared"] > 0].iterrows():  # the rows the table shows
        mine = c[c["key"] == row["key"]]  # adjusted p-values: medians over deployments
        assert row["holm_p"] == pytest.approx(mine["fixed_holm"].median())
        assert row["bh_p"] == pytest.approx(mine["fixed_bh"].median())
        assert row["bh_p"] <= row["holm_p"] + 1e-12  # BH never adjusts more than Holm
    assert (s["compared"] > 0).sum() >= 2
    # Newcombe from the counts against scipy-free arithmetic on one row
    r = d[d["compared"]].iloc[0]
    assert r["tau"] == pytest.approx(r["k1"] / r["n1"] - r["k0"] / r["n0"])
    assert r["srm_p"] == pytest.approx(
        min(1, 2 * min(stats.binom.cdf(r["n0"], r["n0"] + r["n1"], 0.1),
                       stats.binom.sf(r["n0"] - 1, r["n0"] + r["n1"], 0.1)))
    )  # fmt: skip


def test_opening_sentence_counts_what_the_table_shows(section):
    table = _table(section, "Per deployment")
    n_holm = int((table["power after Holm"].map(rate) > 0.5).sum())
    n_seq = int((table["sequence power after Holm"].map(rate) > 0.5).sum())
    assert f"{n_holm} of {len(table)} procedure comparisons" in section.said
    verb = "finds" if n_seq == 1 else "find"
    assert f"{n_seq} {verb} one with the per-arm Beta-mixture confidence sequence" in section.said
    assert "after Holm adjustment" in section.said and "family-wise error" in section.said
    lo, hi = table["power"].map(rate).min(), table["power"].map(rate).max()
    assert f"ranges from {lo:.3g} to {hi:.3g}" in section.said
    # shares are over every deployment of a cell ("compared of deployments")
    used = table["deployments"].map(lambda x: int(str(x).split(" of ")[1].replace(",", "")))
    thin = int((used < 30).sum())
    assert thin > 0  # the loop's cells: 3 replications
    assert f". {thin} of the {len(table)} comparisons rest on fewer than 30 deployments" in (
        section.said
    )
    assert f"one deployment moves a share by {1 / used.min():.2g})" in section.said
    check = _table(section, "Check of the estimator")
    assert "pooled over deployments" in next(
        b.caption for b in section.blocks if hasattr(b, "frame") and b.frame is check
    )
    assert (check["z"].abs().dropna() < 4).all()


def test_a_planted_sample_ratio_mismatch_is_flagged_and_never_an_effect(sweep_of):
    rng = np.random.default_rng(0)
    reps, n = 300, 3000
    withheld = rng.binomial(n, 0.05, size=reps)  # half the withheld sessions lost
    rows = []
    for i, w in enumerate(withheld):
        rows.append({"replication": i, "key": "top", "arm": "withheld", "sessions": w,
                     "successes": rng.binomial(w, 0.4), "true_lift": 0.2})  # fmt: skip
        rows.append({"replication": i, "key": "top", "arm": "shown", "sessions": n - w,
                     "successes": rng.binomial(n - w, 0.6), "true_lift": 0.2})  # fmt: skip

    result = ScenarioResult("explore", tables={"ab_arms_by_replication": pd.DataFrame(rows)})
    sec = ab_section(sweep_of([({"explore.explore_rate": 0.1}, result)]))
    row = _table(sec, "Per deployment").iloc[0]
    assert rate(row["SRM flagged"]) > 0.99
    assert rate(row["power"]) < 0.01  # a lift of 0.2 would be found everywhere, were it trusted
    flag = "Sample-ratio mismatch was flagged in more than 1 % of the deployments of 1 of the 1 "
    assert any(
        b.startswith(flag + "comparisons, of procedure top: ")
        for b in sec.blocks
        if isinstance(b, str)
    )
    assert sec.said.startswith("Read per deployment") and "0 of 1" in sec.said


def _arms(withheld: list[int], sessions: int = 200) -> pd.DataFrame:
    rows = []
    for i, w in enumerate(withheld):
        rows.append({"replication": i, "key": "top", "arm": "withheld", "sessions": w,
                     "successes": w // 2, "true_lift": 0.0})  # fmt: skip
        rows.append({"replication": i, "key": "top", "arm": "shown", "sessions": sessions - w,
                     "successes": (sessions - w) // 2, "true_lift": 0.0})  # fmt: skip
    return pd.DataFrame(rows)


def test_a_mismatch_is_said_only_when_more_deployments_are_flagged_than_chance_gives(sweep_of):
    """A right split flags a deployment with probability at most 0.001, so one flag among
    50 deployments happens by chance (P(Bin(50, 0.001) >= 1) = 0.049): the old section said
    "their arms are not the randomized split" whenever more than 1 % were flagged, which
    one flag in 50 is (seen in a default ExploreScenario at explore rate 0.3, seed 3). Three
    flags of 50 are beyond chance (P 1.9e-5)."""
    from reports.sections.ab import beyond_chance

    assert not beyond_chance(1 / 50, 50) and not beyond_chance(2 / 50, 50)  # P 0.049, 0.0012
    assert beyond_chance(3 / 50, 50) and not beyond_chance(0.0, 50)
    assert not beyond_chance(1 / 4, 4) and beyond_chance(2 / 4, 4)  # P 0.004, 6e-6
    said = "Sample-ratio mismatch was flagged"
    for flags, stated in ((1, False), (3, True)):
        withheld = [38] * flags + [60] * (50 - flags)  # 38 of 200 at 0.3: p = 0.00056
        result = ScenarioResult("explore", tables={"ab_arms_by_replication": _arms(withheld)})
        sec = ab_section(sweep_of([({"explore.explore_rate": 0.3}, result)]))
        row = _table(sec, "Per deployment").iloc[0]
        assert rate(row["SRM flagged"]) == pytest.approx(flags / 50)
        blocks = [b for b in sec.blocks if isinstance(b, str) and b.startswith(said)]
        assert bool(blocks) is stated, flags


def test_cells_read_as_words_with_what_varies(runs, sweep_of):
    """A cell names its scenario and, in words, what tells it apart from the scenario's
    other runs (no ``key=value`` text, no run name repeated); a lone run reads as its
    scenario."""
    explore, loop = runs
    jobs = [
        ({"explore.explore_rate": eps, "scenario.sessions": 300}, explore) for eps in (0.1, 0.2)
    ]
    section = ab_section(sweep_of([*jobs, ({"scenario.sessions": 300}, loop)]))
    cells = set(_table(section, "Per deployment")["cell"])
    assert {"explore: explore rate 0.1", "explore: explore rate 0.2", "loop"} == cells


def test_the_procedure_counts_read_as_a_range_when_they_run_on():
    from reports.sections.ab import _counts

    assert _counts([3, 4, 5, 6]) == "3 to 6"
    assert _counts([1, 4]) == "1 or 4" and _counts([2]) == "2"
    assert _counts([1, 2, 4]) == "1 or 2 or 4"
