"""What report sentences may claim (issue 30, item 6): three states against a target, and
orderings only beyond 2 SE of the difference (``reports.claims``), as every section uses them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reports.claims import (
    MEETS,
    MISSES,
    WITHIN_NOISE,
    Option,
    beyond_noise,
    calendar,
    joint_state,
    ordering,
    ranks,
    target_state,
)
from reports.recommend import GateTargets, recommend_confidence, recommend_gate
from reports.sections.explore import _single_value
from reports.sections.gate_sweep import per_condition_table, ranking_blocks
from reports.sections.learnings import _ranked_table, recommend_policy

POLICY_COLUMNS = ["policy", "precision", "precision_se", "helpful_wait", "helpful_wait_se",
                  "recall", "recall_se", "harmful_served_sessions",
                  "harmful_served_sessions_se", "conditions", "sessions_to_promotion",
                  "sessions_to_promotion_se"]  # fmt: skip
"""The review-policy table's columns ``recommend_policy`` reads."""


def policy_table(*precisions: tuple[str, float, float, float, float]) -> pd.DataFrame:
    """Review policies ``(name, precision, its SE, helpful wait, sessions to promotion)``,
    every other column the same for each."""
    rows = [(name, prec, se, wait, 1.0, 0.6, 0.02, 1.0, 0.5, 1, promo, 1.0)
            for name, prec, se, wait, promo in precisions]  # fmt: skip
    return pd.DataFrame(rows, columns=POLICY_COLUMNS)


def test_a_target_has_three_states():
    # 0.902 ± 0.02 against 0.9 is never a plain pass: the sweep cannot tell the side
    assert target_state(0.902, 0.02, 0.9, higher_is_better=True) == WITHIN_NOISE
    assert target_state(0.861, 0.02, 0.9, higher_is_better=True) == WITHIN_NOISE  # 1.95 SE
    assert target_state(0.859, 0.02, 0.9, higher_is_better=True) == MISSES
    assert target_state(0.95, 0.01, 0.9, higher_is_better=True) == MEETS
    # lower is better (an error rate against its ceiling)
    assert target_state(0.052, 0.002, 0.05, higher_is_better=False) == WITHIN_NOISE
    assert target_state(0.03, 0.002, 0.05, higher_is_better=False) == MEETS
    assert target_state(0.06, 0.002, 0.05, higher_is_better=False) == MISSES
    # an exact figure (no SE) meets or misses, never within noise
    assert target_state(0.9, 0.0, 0.9, higher_is_better=True) == MEETS
    assert target_state(0.8999, float("nan"), 0.9, higher_is_better=True) == MISSES
    assert joint_state([MEETS, WITHIN_NOISE]) == WITHIN_NOISE
    assert joint_state([WITHIN_NOISE, MISSES]) == MISSES
    assert joint_state([MEETS, MEETS]) == MEETS


def test_an_ordering_is_stated_only_beyond_two_se_of_the_difference():
    tie = [Option("cuped", 0.358, 0.015), Option("aipw", 0.355, 0.015), Option("dim", 0.349, 0.015)]
    text = ordering(tie)
    assert text == (
        "cuped 0.358 ± 0.015, aipw 0.355 ± 0.015 and dim 0.349 ± 0.015 "
        "(a tie: no difference exceeds 2 SE of the difference)"
    )
    assert ">" not in text
    # 0.5 vs 0.3: 0.2 > 2 * sqrt(2) * 0.01; 0.3 vs 0.29: 0.01 < 0.028, a tie
    split = [Option("b", 0.3, 0.01), Option("a", 0.5, 0.01), Option("c", 0.29, 0.01)]
    assert [[o.name for o in g] for g in ranks(split)] == [["a"], ["b", "c"]]
    assert ordering(split) == "a 0.5 ± 0.01 > b 0.3 ± 0.01 and c 0.29 ± 0.01 (tied)"
    # a member joins the rank above unless it is beyond the noise of every member of it
    # (2 SE of a difference here: 2 * sqrt(2) * 0.01 = 0.0283)
    chain = [Option("x", 1.0, 0.01), Option("y", 0.975, 0.01), Option("z", 0.95, 0.01)]
    assert [[o.name for o in g] for g in ranks(chain)] == [["x", "y", "z"]]  # z ~ y
    apart = [Option("x", 1.0, 0.01), Option("y", 0.975, 0.01), Option("z", 0.94, 0.01)]
    assert [[o.name for o in g] for g in ranks(apart)] == [["x", "y"], ["z"]]


def test_no_rank_is_stated_above_an_option_within_its_noise():
    """A noisy option that joins a lower rank may sit within the noise of a higher one:
    b is beyond a (0.1 > 2 sqrt(2) 0.01) and c ties b, but a - c = 0.11 < 2 * 0.2 (the
    old ranks read "a > b and c (tied)", claiming a > c). Every pair across ranks must
    differ beyond the noise; here none can be split off."""
    noisy = [Option("a", 1.0, 0.01), Option("b", 0.9, 0.01), Option("c", 0.89, 0.2)]
    assert [[o.name for o in g] for g in ranks(noisy)] == [["a", "b", "c"]]
    text = ordering(noisy)
    assert ">" not in text and "no difference exceeds" not in text  # a vs b does
    assert text.endswith("(a tie: the noise cannot split them into ranks whose every pair "
                         "differs by more than 2 SE of the difference)")  # fmt: skip
    rng = np.random.default_rng(30)
    for _ in range(2000):
        opts = [Option(str(i), rng.normal(), abs(rng.normal()) * rng.choice([0.05, 0.5]))
                for i in range(int(rng.integers(2, 6)))]  # fmt: skip
        groups = ranks(opts)
        for i, hi in enumerate(groups):
            for lo in groups[i + 1 :]:
                assert all(beyond_noise(a, b) and a.value > b.value for a in hi for b in lo)


def _gates(fr: float, fr_se: float) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "config": ["near", "far"],
            "false_revert_rate": [fr, 0.2],
            "false_revert_rate_se": [fr_se, 0.002],
            "missed_regression_rate": [0.1, 0.1],
            "missed_regression_rate_se": [0.002, 0.002],
            "mean_runs_null": [20.0, 10.0],
            "mean_runs_null_se": [0.1, 0.1],
            "mean_runs_alt": [25.0, 12.0],
            "mean_runs_alt_se": [0.1, 0.1],
        }
    )


def test_gate_picks_within_noise_of_a_target_say_so_in_sentence_and_tables():
    targets = GateTargets(0.05, 0.2)
    # 0.052 ± 0.002 against 0.05: not feasible by its point value, yet within noise
    rec = recommend_gate(_gates(0.052, 0.002), targets)
    assert rec.label == "near" and not rec.feasible and rec.state == WITHIN_NOISE
    assert "it is within 2 SE of the target: this sweep cannot tell whether it meets it" in (
        rec.sentence
    )
    # 0.049 ± 0.002: feasible by its point value, still only within noise
    ok = recommend_gate(_gates(0.049, 0.002), targets)
    assert ok.feasible and ok.state == WITHIN_NOISE
    assert ok.sentence.startswith("The swept gate to use, at its own max_runs, is near")
    assert "cannot tell whether it meets it" in ok.sentence
    clear = recommend_gate(_gates(0.03, 0.002), targets)
    assert clear.state == MEETS and "cannot tell" not in clear.sentence
    worst = _gates(0.049, 0.002).assign(
        complete=True,
        conditions=1,
        **{
            f"{m}_condition": "as configured"
            for m in (
                "false_revert_rate",
                "missed_regression_rate",
                "mean_runs_null",
                "mean_runs_alt",
            )
        },
    )
    table = ranking_blocks(ok, worst, targets, 1)[1].frame
    assert list(table["meets targets"]) == ["within 2 SE", "misses"]
    rows = _gates(0.049, 0.002).assign(condition="as configured")
    assert list(per_condition_table(rows, targets, None)["meets targets"]) == ["within 2 SE"]


def test_confidence_and_learnings_picks_have_three_states():
    t = pd.DataFrame(
        {
            "config": ["a", "b"],
            "helpful_retained": [0.8, 0.5],
            "helpful_retained_se": [0.01, 0.01],
            "harmful_excluded": [0.902, 0.99],
            "harmful_excluded_se": [0.02, 0.001],
        }
    )
    rec = recommend_confidence(t, 0.9)
    assert rec.label == "a" and rec.state == WITHIN_NOISE
    assert "within 2 SE of the target" in rec.sentence
    worst = policy_table(("p", 0.902, 0.02, 50.0, 60.0), ("q", 0.97, 0.005, 90.0, 95.0),
                         ("r", 0.5, 0.01, 10.0, 20.0))  # fmt: skip
    pol = recommend_policy(worst)
    assert pol.label == "p" and pol.state == WITHIN_NOISE
    assert list(_ranked_table(pol.ranked)["meets target"]) == ["within 2 SE", "meets", "misses"]


def test_one_explore_setting_states_powers_as_a_tie_when_the_noise_cannot_order_them():
    row = {"explore_rate": 0.05, "sessions": 200, "true_lift": 0.1, "run_name": "r"}
    for e, p in (("cuped", 0.358), ("aipw", 0.355), ("dim", 0.349)):
        row |= {f"{e}_power": p, f"{e}_power_se": 0.015}
    text = _single_value(pd.DataFrame([row]), ["dim", "aipw", "cuped"], 0.8)
    assert "cuped 0.358 ± 0.015, aipw 0.355 ± 0.015 and dim 0.349 ± 0.015 (a tie" in text
    assert text.endswith("; none reaches the target 0.8.")


def test_calendar_time():
    assert calendar(322.8, 100) == "3.23 days at 100 sessions/day"
    assert calendar((123.3, 171.6), 100) == "1.23 and 1.72 days at 100 sessions/day"
    # a rate that is no rate is refused by name (it was a ZeroDivisionError at 0 and
    # "-15 days at -10 sessions/day" below it); a numpy count is one count (it was a
    # TypeError: 'numpy.int64' object is not iterable)
    from procmem_core.errors import ParameterError

    for bad in (0.0, -10.0, float("nan")):
        with pytest.raises(ParameterError, match=f"sessions_per_day={bad!r}.*> 0"):
            calendar(1.0, bad)
    assert calendar(np.int64(150), 100) == "1.5 days at 100 sessions/day"
    assert calendar(np.array([100.0, 200.0]), 100) == "1 and 2 days at 100 sessions/day"


def test_the_session_rate_is_an_option_refused_by_name():
    from procmem_core.errors import ParameterError
    from reports.__main__ import options_of, parser
    from reports.errors import ReportError
    from reports.options import SESSIONS_PER_DAY, ReportOptions

    assert ReportOptions().sessions_per_day == SESSIONS_PER_DAY == 100.0
    assert options_of(parser().parse_args(["q", "--sessions-per-day", "250"])).sessions_per_day == (
        250.0
    )
    for bad in (0.0, -3.0, float("nan"), float("inf")):
        with pytest.raises(ParameterError, match="sessions_per_day"):
            ReportOptions(sessions_per_day=bad)
    with pytest.raises(ReportError, match=r"--sessions-per-day -1.0 is not allowed"):
        options_of(parser().parse_args(["q", "--sessions-per-day", "-1"]))


def test_the_prescription_gives_sessions_per_arm_and_calendar_time():
    """Issue 30 item 4: the prescribed gate's sentence gives a decision's sessions in total
    and per arm (the prior's concurrent sessions counted) and the days at the set rate."""
    import re

    from procmem_core.gates import DesignQuestion, design_gate
    from reports.sections.gate_design import Prescription

    q = DesignQuestion(alpha=0.1, beta=0.3, min_drop=0.3, ledger=10, concurrent=0.5,
                       p0_low=0.4, p0_high=0.9, max_runs=40)  # fmt: skip
    design = design_gate(q)
    chosen = next(a for a in design.answers if (a.family, a.design) == ("two_sample", "concurrent"))
    p = Prescription(q, design, chosen, pd.DataFrame(), sessions_per_day=8.0)
    said = p.sentence()
    total = re.search(
        r"a decision costs ([\d.]+) sessions when nothing changed and ([\d.]+) at that drop "
        r"\(both arms, expected, worst p0\)",
        said,
    )
    found = re.search(
        r"Per arm \(at share 0.5\), a decision takes ([\d.]+) sessions on the revision \+ "
        r"([\d.]+) on the prior when nothing changed and ([\d.]+) \+ ([\d.]+) at the drop "
        r"\(together ([\d.]+) and ([\d.]+) days at 8 sessions/day\)",
        said,
    )
    assert total and found, said
    got = [float(x) for x in found.groups()]
    null, alt = chosen.runs_null, chosen.runs_alt
    assert [float(total[1]), float(total[2])] == [round(sum(null), 1), round(sum(alt), 1)]
    assert got[:4] == [round(null[0], 1), round(null[1], 1), round(alt[0], 1), round(alt[1], 1)]
    assert got[4] == pytest.approx(sum(null) / 8, rel=5e-3)
    assert got[5] == pytest.approx(sum(alt) / 8, rel=5e-3)
    assert null[1] > 0  # the prior's arm is counted, not left out
    pick = p.pick()
    assert pick["days_null"] == pytest.approx(sum(null) / 8)
    assert pick["sessions_per_day"] == 8.0


def test_the_loop_names_the_setting_where_success_rises_most_only_beyond_the_noise():
    from reports.sections.loop import rises_most

    rows = pd.DataFrame(
        {
            "config": ["a", "b", "c"],
            "success_change": [0.10, 0.09, 0.02],
            "success_change_se": [0.01, 0.01, 0.01],
        }
    )
    assert rises_most(rows) == "a: 0.1 ± 0.01, tied within 2 SE of the difference with b"
    rows.loc[1, "success_change"] = 0.05  # 0.05 > 2 * sqrt(2) * 0.01: a alone
    assert rises_most(rows) == "a: 0.1 ± 0.01"
    many = pd.DataFrame(
        {
            "config": list("abcdef"),
            "success_change": [0.10, 0.095, 0.094, 0.093, 0.092, 0.01],
            "success_change_se": [0.01] * 6,
        }
    )  # four ties: counted, not named
    assert rises_most(many) == (
        "a: 0.1 ± 0.01, tied within 2 SE of the difference with 4 of the other 5 settings "
        "(the noise cannot order them)"
    )
    many.loc[5, "success_change"] = 0.09  # all six tied: no setting stands out
    assert rises_most(many) == (
        "a: 0.1 ± 0.01, but within 2 SE of the difference of every other setting (the noise "
        "cannot order any of them)"
    )


def test_the_nearest_infeasible_gate_is_tied_with_those_the_noise_cannot_order():
    """Nothing feasible: "the nearest is a" is an ordering by shortfall. An in-memory sweep
    of the seed SPRT at alpha 0.05 and 0.1 (1,000 replications each) named alpha 0.1 the
    nearest at false revert 0.131 ± 0.011 against 0.152 ± 0.011, though exactly 0.149
    against 0.137. Shortfalls (0.131 - 0.05)/0.05 + (0.366 - 0.2)/0.2 = 2.45 against
    2.775, each with SE sqrt((0.011/0.05)^2 + (0.015/0.2)^2) = 0.232: 0.325 < 2 sqrt(2)
    0.232 = 0.657, a tie."""
    t = _gates(0.131, 0.011).assign(config=["a", "b"], false_revert_rate=[0.131, 0.152])
    t["false_revert_rate_se"] = 0.011
    t["missed_regression_rate"], t["missed_regression_rate_se"] = [0.366, 0.347], 0.015
    t["mean_runs_null"], t["mean_runs_alt"] = [18.1, 21.0], [23.7, 27.1]
    rec = recommend_gate(t, GateTargets(0.05, 0.2))
    assert not rec.feasible and rec.label == "a" and rec.tied_with == ("b",)
    assert rec.ranked["shortfall_se"].to_numpy() == pytest.approx([0.2325, 0.2325], abs=1e-4)
    assert "the nearest is a; tied with b (shortfall from the targets within 2 SE of the " \
        "difference)" in rec.sentence  # fmt: skip
    t["false_revert_rate"] = [0.131, 0.3]  # 4.6 + 0.735: beyond the noise of 2.45
    assert recommend_gate(t, GateTargets(0.05, 0.2)).tied_with == ()


def test_the_gate_pick_is_tied_with_gates_the_noise_cannot_order():
    """20 ± 1 against 21 ± 1 sessions when nothing changed: 1 < 2 * sqrt(2), a tie; 20
    against 30 ± 1 is an ordering; an infeasible gate is never tied with a feasible pick."""
    t = _gates(0.03, 0.002).assign(config=["a", "b"], false_revert_rate=[0.03, 0.03])
    t["mean_runs_null"], t["mean_runs_null_se"] = [20.0, 21.0], [1.0, 1.0]
    t["mean_runs_alt"] = [25.0, 25.1]  # the second key: within the noise too
    rec = recommend_gate(t, GateTargets(0.05, 0.2))
    assert rec.label == "a" and rec.tied_with == ("b",)
    assert "tied with b (sessions when nothing changed within 2 SE of the difference)" in (
        rec.sentence
    )
    t["mean_runs_null"] = [20.0, 30.0]
    assert recommend_gate(t, GateTargets(0.05, 0.2)).tied_with == ()
    t["mean_runs_null"], t["mean_runs_alt"] = [20.0, 21.0], [25.0, 27.0]  # 2 > 2 * 0.141
    assert recommend_gate(t, GateTargets(0.05, 0.2)).tied_with == ()
    t["mean_runs_alt"] = [25.0, 25.1]
    t["false_revert_rate"] = [0.03, 0.2]
    assert recommend_gate(t, GateTargets(0.05, 0.2)).tied_with == ()


def test_the_nearest_review_policy_is_tied_with_those_the_noise_cannot_order():
    """Nothing reaches the target: "the nearest is p" orders by precision, and 0.85 ± 0.02
    against 0.84 ± 0.02 (0.01 < 2 sqrt(2) 0.02) cannot be ordered; the old sentence named
    p alone (its ties were on the wait, and only for policies near the target)."""
    worst = policy_table(("p", 0.85, 0.02, 50.0, 60.0), ("q", 0.84, 0.02, 90.0, 95.0),
                         ("r", 0.5, 0.01, 10.0, 20.0))  # fmt: skip
    pol = recommend_policy(worst, 0.95)
    assert not pol.feasible and pol.label == "p" and pol.tied_with == ("q",)
    assert "the nearest is p, in the one condition run: precision 0.85 ± 0.02 (target 0.95); " \
        "tied with q (precision within 2 SE of the difference" in pol.sentence  # fmt: skip


def test_the_detectable_change_refuses_replications_and_levels_that_are_not():
    """2.5 replications were read as 2 (t with 1 df) and a level of 1.5 gave a number."""
    from procmem_core.errors import ParameterError
    from reports.claims import detectable_change

    with pytest.raises(ParameterError, match=r"replications=2.5 is not allowed: expected an "):
        detectable_change(0.1, 2.5)
    with pytest.raises(ParameterError, match=r"level=1.5 is not allowed: expected a finite "):
        detectable_change(0.1, 5, level=1.5)
    assert detectable_change(0.1, np.int64(4)) == pytest.approx((3.182446 + 0.978472) * 0.1)
    assert np.isnan(detectable_change(0.1, 1))  # one replication: no SE to read
