"""Recommendation logic on hand-made tables: the right pick, ties, nothing feasible."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from procmem_core.errors import ParameterError
from procmem_core.gates import TwoSampleGate
from reports.errors import ReportError
from reports.evidence import MetricComparison, fmt_share, worst_case
from reports.gate_claims import null_sessions, null_sessions_se
from reports.options import ReportOptions
from reports.recommend import (
    GateTargets,
    recommend_confidence,
    recommend_explore,
    recommend_gate,
)
from simulators.scenarios.gate import GateScenario


def gate_table(rows):
    cols = ["config", "false_revert_rate", "missed_regression_rate", "mean_runs_null"]
    cols += ["mean_runs_alt"]
    t = pd.DataFrame(rows, columns=cols)
    for m in cols[1:]:
        t[f"{m}_se"] = 0.005 if "rate" in m else 0.2
    return t


GATES = gate_table(
    [
        ("seed", 0.04, 0.15, 20.0, 25.0),
        ("fast-but-noisy", 0.12, 0.30, 5.0, 6.0),
        ("fast-ok", 0.05, 0.19, 10.0, 12.0),
        ("slow-safe", 0.01, 0.05, 40.0, 45.0),
    ]
)


def test_gate_pick_is_fastest_feasible_and_compared_with_default():
    rec = recommend_gate(GATES, default="seed")
    assert rec.feasible
    assert rec.label == "fast-ok"
    assert rec.tied_with == ()
    assert rec.default is not None and rec.default["config"] == "seed"
    runs = {c.metric: c for c in rec.comparisons}
    assert runs["null_sessions"].difference == pytest.approx(-10.0)  # fixed: runs are sessions
    assert runs["null_sessions"].exceeds_noise
    # 0.05 vs 0.04 with SEs 0.005 each: 0.01 < 2 * 0.00707, so within the noise
    assert not runs["false_revert_rate"].exceeds_noise
    assert "fast-ok" in rec.sentence and "beyond the noise" in rec.sentence
    assert list(rec.ranked["config"][:2]) == ["fast-ok", "seed"]
    # the metrics in words, better before worse (fast-ok: fewer runs, more missed regressions)
    assert (
        "fewer sessions when nothing changed and fewer runs at the drop than the default, "
        "at the price of a higher missed regression rate, beyond the noise" in rec.sentence
    )


def test_gate_pick_is_compared_with_the_default_in_sessions_both_arms_counted():
    """The ranking minimises sessions when nothing changed (both arms); the comparison with
    the default compared runs, so a paired pick of 21.9 pairs (48.8 sessions) read as
    'fewer runs when nothing changed than the default' (23.9 runs, 47.7 sessions)."""
    t = gate_table([("seed", 0.12, 0.15, 23.9, 30.0), ("paired", 0.04, 0.15, 21.9, 30.0)])
    arms = {"seed": (23.9, 23.8), "paired": (24.2, 24.6)}
    for i, (revision, prior) in enumerate(arms[c] for c in t["config"]):
        t.loc[i, ["mean_revision_runs_null", "mean_prior_runs_null"]] = (revision, prior)
    for c in ("mean_revision_runs_null_se", "mean_prior_runs_null_se"):
        t[c] = 0.1
    rec = recommend_gate(t, default="seed")
    assert rec.label == "paired"  # the seed misses the false revert target
    by = {c.metric: c for c in rec.comparisons}
    assert by["null_sessions"].difference == pytest.approx(48.8 - 47.7)
    assert by["null_sessions"].exceeds_noise  # 1.1 > 2 sqrt(0.2^2 + 0.2^2) = 0.57
    assert (
        "It has a lower false revert rate than the default, at the price of more sessions "
        "when nothing changed, beyond the noise" in rec.sentence
    )
    assert "fewer runs when nothing changed" not in rec.sentence


def test_gate_targets_are_settable():
    rec = recommend_gate(GATES, GateTargets(false_revert=0.2, missed_regression=0.4))
    assert rec.label == "fast-but-noisy"
    rec = recommend_gate(GATES, GateTargets(false_revert=0.02, missed_regression=0.2))
    assert rec.label == "slow-safe"


def test_gate_ties_broken_by_total_error_then_label_and_reported():
    """Fewest runs when nothing changed first, then at the drop; ties on both go to the
    lowest total error, then the label."""
    t = gate_table(
        [
            ("b", 0.03, 0.10, 10.0, 10.0),
            ("a", 0.03, 0.10, 10.0, 10.0),
            ("c", 0.01, 0.10, 10.0, 10.0),
            ("e", 0.01, 0.10, 10.0, 12.0),  # same null runs, more at the drop
            ("f", 0.01, 0.10, 9.0, 40.0),  # fewest null runs: preferred whatever the drop
            ("d", 0.01, 0.01, 30.0, 30.0),
        ]
    )
    assert recommend_gate(t).label == "f"
    t = t[t["config"] != "f"]
    rec = recommend_gate(t)
    assert rec.label == "c"  # same runs as a and b, lowest total error
    assert set(rec.tied_with) == {"a", "b"}
    rec = recommend_gate(t[~t["config"].isin(["c", "e"])])
    assert rec.label == "a"  # a and b identical in everything: label order
    assert rec.tied_with == ("b",)
    assert "tied with b" in rec.sentence


def test_gate_counts_both_arms_under_concurrent_control():
    """With the arms' runs in the table, sessions when nothing changed count both arms: a
    gate with fewer pairs but more sessions loses, and the sentence gives the sessions."""
    t = gate_table([("paired", 0.04, 0.15, 20.0, 25.0), ("solo", 0.04, 0.15, 30.0, 35.0)])
    t["mean_revision_runs_null"] = [22.0, np.nan]
    t["mean_prior_runs_null"] = [22.0, np.nan]
    t["mean_revision_runs_alt"] = [27.0, np.nan]
    t["mean_prior_runs_alt"] = [26.0, np.nan]
    rec = recommend_gate(t)
    assert rec.label == "solo"  # 30 sessions against 44
    assert rec.ranked["objective"].tolist() == [30.0, 44.0]
    rec = recommend_gate(t[t["config"] == "paired"])
    assert (
        "a decision costs 44.0 sessions when nothing changed (22.0 + 22.0) and 53.0 sessions "
        "at the drop (27.0 + 26.0), per arm: revision + prior"
    ) in rec.sentence
    # calendar time at the researcher's session rate (issue 30 item 4): 44 / 20 = 2.2 days
    rec = recommend_gate(t[t["config"] == "paired"], sessions_per_day=20)
    assert "44.0 sessions when nothing changed (22.0 + 22.0, 2.2 days at 20 sessions/day)" in (
        rec.sentence
    )
    assert "53.0 sessions at the drop (27.0 + 26.0, 2.65 days at 20 sessions/day)" in (rec.sentence)
    # the fixed design: every session on the revision, none on the prior
    solo = recommend_gate(t[t["config"] == "solo"], sessions_per_day=10)
    assert "30.0 sessions when nothing changed (30.0 + 0.0, 3 days at 10 sessions/day)" in (
        solo.sentence
    )
    assert "all on the revision, none on the prior: no concurrent control" in solo.sentence
    # a row without the per-arm columns (a worst-case row) claims no split it does not have
    bare = t[t["config"] == "paired"].drop(columns=[c for c in t if "_revision_runs" in c
                                                     or "_prior_runs" in c])  # fmt: skip
    note = recommend_gate(bare).sentence
    assert "no concurrent control" not in note and "+ 0.0" not in note
    assert (
        "those runs count the revision's sessions only (no per-arm figures: a concurrent "
        "design's prior sessions are left out)" in note
    )
    assert note.count("when nothing changed") == 1  # its runs said once, not twice
    # a fixed design's runs are its sessions: nothing is left out, so nothing is said
    fixed = recommend_gate(bare.assign(**{"params.scenario.design": "fixed"})).sentence
    assert "those runs count" not in fixed and "per-arm" not in fixed


def test_both_arms_sessions_se_is_the_se_of_their_sum_per_replication():
    """The sessions when nothing changed add two means from the same replications, which
    move together: their SE is the SE of the per-replication sum (the scenario's
    ``mean_sessions_null_se`` with perfect feedback), about the sum of the two SEs. The
    root of the sum of squares (independent arms) gave 0.71 of it at share 0.5."""
    gate = TwoSampleGate(max_runs=40, ledger=10, revert_level=2.0, accept_level=-1.0,
                         final_level=0.5, accept_shrink=4.0, recalibrate=False)  # fmt: skip
    m = GateScenario(gate=gate, replications=3000, drops=(0.0, 0.2), design="concurrent",
                     concurrent_share=0.5, ledger_size=10, p_prior=0.6).run(5).metrics  # fmt: skip
    row = gate_table([("paired", 0.04, 0.15, m["mean_runs_null"], m["mean_runs_alt"])])
    for arm in ("revision", "prior"):
        row[f"mean_{arm}_runs_null"] = m[f"mean_{arm}_runs_null"]
        row[f"mean_{arm}_runs_null_se"] = m[f"mean_{arm}_runs_null_se"]
    assert null_sessions(row)[0] == pytest.approx(m["mean_sessions_null"], rel=1e-12)
    assert null_sessions_se(row)[0] == pytest.approx(m["mean_sessions_null_se"], rel=0.03)


def test_gate_nothing_feasible_reports_nearest():
    t = gate_table(
        [
            ("x", 0.10, 0.20, 5.0, 5.0),  # shortfall (0.10-0.05)/0.05 = 1.0
            ("y", 0.06, 0.30, 5.0, 5.0),  # 0.2 + 0.5 = 0.7
            ("z", 0.20, 0.10, 1.0, 1.0),  # 3.0
        ]
    )
    rec = recommend_gate(t, default="z")
    assert not rec.feasible
    assert rec.label == "y"
    assert rec.sentence.startswith("No swept gate meets the targets")
    assert "nearest is y" in rec.sentence
    assert rec.ranked["shortfall"].tolist() == pytest.approx([0.7, 1.0, 3.0])


def test_gate_pick_equal_to_default_says_so():
    rec = recommend_gate(GATES[GATES["config"] != "fast-ok"], default="seed")
    assert rec.label == "seed"
    assert "seeds' default" in rec.sentence
    assert not rec.differs_beyond_noise


def explore_table():
    rows = []
    for rate, power in ((0.0, 0.0), (0.05, 0.55), (0.1, 0.82), (0.2, 0.95)):
        for sessions, scale in ((500, 0.7), (2000, 1.0)):
            p = power * scale
            rows.append((rate, sessions, p, 0.01, rate * sessions * 0.1, 0.5))
    cols = ["explore_rate", "sessions", "power", "power_se", "exploration_cost"]
    return pd.DataFrame(rows, columns=[*cols, "exploration_cost_se"])


def test_explore_smallest_rate_reaching_power():
    rec = recommend_explore(explore_table(), target_power=0.8)
    assert rec.feasible
    assert float(rec.pick["explore_rate"]) == 0.1
    assert int(rec.pick["sessions"]) == 2000
    assert rec.pick["exploration_cost"] == pytest.approx(20.0)
    assert rec.default is not None and float(rec.default["power"]) == 0.0
    assert "0.1" in rec.sentence and "2000" in rec.sentence
    # with a lower target the same rate works in fewer sessions, at lower cost
    rec = recommend_explore(explore_table(), target_power=0.38)
    assert (float(rec.pick["explore_rate"]), int(rec.pick["sessions"])) == (0.05, 500)


def test_explore_nothing_reaches_target():
    rec = recommend_explore(explore_table(), target_power=0.99)
    assert not rec.feasible
    assert float(rec.pick["explore_rate"]) == 0.2
    assert rec.sentence.startswith("No swept explore rate reaches power 0.99")


def confidence_table(rows):
    cols = ["config", "helpful_retained", "harmful_excluded"]
    t = pd.DataFrame(rows, columns=cols)
    t["helpful_retained_se"] = 0.01
    t["harmful_excluded_se"] = 0.01
    return t


def test_confidence_pick_ties_and_nothing_feasible():
    t = confidence_table(
        [
            ("seed", 0.60, 0.95),
            ("gentle", 0.90, 0.50),
            ("balanced", 0.80, 0.92),
            ("balanced2", 0.80, 0.97),
        ]
    )
    rec = recommend_confidence(t, target_excluded=0.9, default="seed")
    assert rec.label == "balanced2"  # tie on retention, more harmful excluded wins
    assert rec.tied_with == ("balanced",)
    assert "; a higher share of helpful procedures kept than the default, beyond the noise" in (
        rec.sentence
    )
    rec = recommend_confidence(t, target_excluded=0.99)
    assert not rec.feasible and rec.label == "balanced2"
    assert rec.sentence.startswith("No swept rule excludes at least 0.99")
    twins = confidence_table([("b", 0.8, 0.95), ("a", 0.8, 0.95)])
    rec = recommend_confidence(twins)
    assert rec.label == "a" and rec.tied_with == ("b",)


def test_worst_case_over_conditions_keeps_se_of_worst_row():
    t = gate_table(
        [
            ("g", 0.02, 0.10, 10.0, 10.0),
            ("g", 0.08, 0.05, 12.0, 9.0),
            ("h", 0.03, 0.15, 20.0, 20.0),
        ]
    )
    t.loc[1, "false_revert_rate_se"] = 0.009
    w = worst_case(t, "config", {m: True for m in ("false_revert_rate", "missed_regression_rate")})
    g = w.set_index("config").loc["g"]
    assert g["false_revert_rate"] == 0.08 and g["false_revert_rate_se"] == 0.009
    assert g["missed_regression_rate"] == 0.10 and g["conditions"] == 2


def test_metric_comparison_noise():
    c = MetricComparison("x", 0.5, 0.01, 0.45, 0.01)
    assert c.exceeds_noise  # 0.05 > 2 * 0.0141
    c = MetricComparison("x", 0.5, 0.02, 0.45, 0.02)
    assert not c.exceeds_noise  # 0.05 < 2 * 0.0283
    exact = MetricComparison("x", 0.5, float("nan"), 0.4999, 0.0)
    assert exact.exceeds_noise and "beyond" in exact.describe()


BAD = [
    (lambda: recommend_gate(GATES.drop(columns="mean_runs_alt")), ReportError, "mean_runs_alt"),
    (lambda: recommend_gate(GATES.iloc[:0]), ReportError, "no rows"),
    (lambda: recommend_gate(GATES, default="nope"), ParameterError, "default='nope'"),
    (lambda: GateTargets(false_revert=0.0), ParameterError, "false_revert=0.0"),
    (lambda: GateTargets(missed_regression=1.5), ParameterError, "missed_regression=1.5"),
    # a string target was kept as a string, to fail later as a numpy type error
    (lambda: GateTargets(false_revert="0.05"), ParameterError, "false_revert='0.05'"),
    (lambda: GateTargets(missed_regression=True), ParameterError, "missed_regression=True"),
    (lambda: ReportOptions(target_power="0.8"), ParameterError, "target_power='0.8'"),
    (lambda: ReportOptions(target_kept="0.9"), ParameterError, "target_kept='0.9'"),
    (lambda: ReportOptions(target_excluded=True), ParameterError, "target_excluded=True"),
    (lambda: ReportOptions(gate=None), ParameterError, "gate=None is not allowed: expected a"),
    (lambda: ReportOptions(gate=0.05), ParameterError, "gate=0.05 is not allowed"),
    (lambda: recommend_explore(explore_table(), target_power=2), ParameterError, "target_power"),
    (
        lambda: recommend_explore(explore_table().drop(columns="sessions")),
        ReportError,
        "sessions",
    ),
    (
        lambda: recommend_confidence(confidence_table([("a", 0.5, 0.5)]), target_excluded=-1),
        ParameterError,
        "target_excluded=-1",
    ),
]


@pytest.mark.parametrize(("call", "error", "fragment"), BAD)
def test_invalid_inputs(call, error, fragment):
    with pytest.raises(error, match=fragment.replace("(", r"\(")):
        call()


def test_efficient_frontier_marks_non_dominated_rows():
    from reports.sections.gate_tables import efficient_frontier

    t = pd.DataFrame(
        {
            "x": [0.01, 0.02, 0.03, 0.02, 0.05],
            "y": [0.30, 0.20, 0.10, 0.25, 0.05],
        }
    )
    # row 3 is beaten by row 1 on both; the rest trade one error for the other
    assert efficient_frontier(t, "x", "y").tolist() == [True, True, True, False, True]
    ties = pd.DataFrame({"x": [0.1, 0.1], "y": [0.2, 0.2]})
    assert efficient_frontier(ties, "x", "y").tolist() == [True, True]


def test_a_share_of_all_or_none_shows_its_exact_bound_not_plus_minus_zero():
    """The quickstart's loop rows read "1 ± 0" from 4 deployments: at 0 or 1 the share
    says the one-sided 95 % Clopper-Pearson bound, 0.05 ** (1 / n) (all of n succeed
    with probability p ** n, which is 0.05 there)."""
    from reports.evidence import fmt_share

    assert (
        fmt_share(1.0, 4)
        == f"1 (all 4; > {0.05**0.25:.3g} at 95 %)"
        == "1 (all 4; > 0.473 at 95 %)"
    )
    assert fmt_share(0.0, 4) == f"0 (none of 4; < {1 - 0.05**0.25:.3g} at 95 %)"
    assert fmt_share(0.0, 2000) == "0 (none of 2,000; < 0.0015 at 95 %)"
    assert fmt_share(0.25, 4) == "0.25 ± 0.22"  # sqrt(0.25 * 0.75 / 4) = 0.2165
    assert fmt_share(float("nan"), 4) == "n/a"


def test_a_rules_share_of_none_or_all_reads_as_what_it_is():
    """The confidence section's shares use the one exact bound: a share of 0 read
    "0 (all 5,000; < 0.0006)" by a rule-of-three copy."""
    from reports.sections.confidence_worst import share_text

    none = pd.Series({"harmful_excluded": 0.0, "harmful_excluded_se": 0.0, "replications": 5000})
    assert share_text(none, "harmful_excluded", "replications") == fmt_share(0.0, 5000)
    assert share_text(none, "harmful_excluded", "replications").startswith("0 (none of 5,000;")
    every = none.copy()
    every["harmful_excluded"] = 1.0
    assert share_text(every, "harmful_excluded", "replications").startswith("1 (all 5,000;")
    some = pd.Series({"harmful_excluded": 0.5, "harmful_excluded_se": 0.01, "replications": 9})
    assert share_text(some, "harmful_excluded", "replications") == "0.5 ± 0.01"


def test_a_rule_that_keeps_the_most_is_tied_with_those_the_noise_cannot_order():
    """ "keeps the most helpful procedures" and "the nearest" are orderings: 0.80 ± 0.02
    against 0.78 ± 0.02 kept (0.02 < 2 sqrt(2) 0.02 = 0.057) is a tie, which the old
    ranking (exact ties only) did not say."""
    from reports.sections.confidence_worst import worst_sentence

    t = confidence_table([("a", 0.80, 0.95), ("b", 0.78, 0.96), ("c", 0.50, 0.99)])
    t["helpful_retained_se"] = 0.02
    rec = recommend_confidence(t, target_excluded=0.9)
    assert rec.label == "a" and rec.tied_with == ("b",)  # c: 0.3 apart, beyond the noise
    worst = t.rename(columns={"config": "label"}).assign(in_every_world=True)
    said = worst_sentence(worst, recommend_confidence(worst, 0.9, "label"), 1, 0.9)
    assert "a keeps the most helpful procedures" in said
    assert "; tied with b (share kept within 2 SE of the difference: the noise cannot " in said
    # nothing feasible: the nearest excludes the most, within the noise of b's 0.96 ± 0.01
    rec = recommend_confidence(t, target_excluded=0.995)
    assert not rec.feasible and rec.label == "c" and rec.tied_with == ()  # 0.03 > 0.028
    t.loc[1, "harmful_excluded"] = 0.975
    assert recommend_confidence(t, target_excluded=0.995).tied_with == ("b",)
