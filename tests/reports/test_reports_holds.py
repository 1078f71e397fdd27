"""The "holds if / breaks when" table and sentence (issue 30, ``reports.holds``) and the
confidence and learnings sections' blocks built from the sweep's rows."""

from __future__ import annotations

import math
from types import SimpleNamespace

from experiments.answers.learnings import learnings_answer
from procmem_core.flat.rule import DEFAULT_RULE
from procmem_core.flat.sensitivity import rule_sensitivity
from procmem_core.flat.targets import RuleTargets
from procmem_core.holds import SensitivityRow
from reports.holds import breaks_sentence, holds_table, rows_of, short_of

ROWS = (
    SensitivityRow("as assumed", "x 1", {"power": 0.85}, True),
    SensitivityRow("lift", "0.05", {"power": 0.4}, False, -0.5),
    SensitivityRow("horizon", "900", {"power": 0.79}, False, -0.1),
    SensitivityRow("horizon", "2000", {"power": 0.99}, True, 1.0),
    SensitivityRow("erasure share", "0.1", {}, None, math.nan, "no exact answer: assumed 0"),
)


def _words(r: SensitivityRow) -> str:
    return short_of(f"power {r.figure('power'):.2f}", bool(r.holds), "0.8")


def test_the_table_shows_each_row_and_says_where_there_is_no_answer():
    t = holds_table("the pick", ROWS, {"power": ("power", "{:.2f}".format)}, ">= 0.8")
    assert t.caption == "Holds if / breaks when: the pick"
    assert list(t.frame.columns) == ["assumption", "value", "power", "holds (>= 0.8)?"]
    assert list(t.frame["power"]) == ["0.85", "0.40", "0.79", "0.99", "no exact answer: assumed 0"]
    assert list(t.frame.iloc[:, -1]) == ["holds", "breaks", "breaks", "holds", "no exact answer"]
    assert holds_table("x", (), {}, "") is None


def test_a_figure_is_told_against_its_target_only_when_it_misses():
    assert short_of("power 0.79", False, "0.8") == "power 0.79, below the 0.8 target"
    assert short_of("false revert 0.06", False, "0.05", below=False) == (
        "false revert 0.06, above the 0.05 target"
    )
    assert short_of("power 0.85", True, "0.8") == "power 0.85"


def test_breaks_names_the_smallest_move_that_breaks_and_what_has_no_answer():
    assert breaks_sentence("the pick", ROWS, _words) == (
        "The pick holds as assumed but breaks first when the horizon moves to 900 (-10% of "
        "the assumed): power 0.79, below the 0.8 target (exact); the erasure share has no "
        "exact answer."
    )


def test_a_break_without_a_numeric_move_is_named_too():
    unranked = SensitivityRow("p0 range", "[0.1, 0.95]", {"power": 0.6}, False)
    assert breaks_sentence("the pick", (ROWS[0], ROWS[1], unranked), _words) == (
        "The pick holds as assumed but breaks first when the lift moves to 0.05 (-50% of "
        "the assumed): power 0.40, below the 0.8 target; it also breaks when the p0 range "
        "is [0.1, 0.95]: power 0.60, below the 0.8 target (exact)."
    )
    assert breaks_sentence("the pick", (ROWS[0], unranked), _words) == (
        "The pick holds as assumed but breaks when the p0 range is [0.1, 0.95]: power 0.60, "
        "below the 0.8 target (exact)."
    )


def test_holds_names_every_move_tried():
    more = SensitivityRow("horizon", "3000", {"power": 0.999}, True, 2.0)
    assert breaks_sentence("the pick", (ROWS[0], ROWS[3], more), _words) == (
        "The pick holds as assumed and at every move tried (horizon 2000 or 3000; exact)."
    )
    assert breaks_sentence("the pick", ROWS[:1], _words) == "The pick holds as assumed (exact)."
    assert breaks_sentence("the pick", (), _words) == ""


def test_misses_as_assumed_says_so_in_the_world_stated():
    missed = (SensitivityRow("as assumed", "x", {"power": 0.5}, False), ROWS[1], ROWS[4])
    world = "in the assumed world without erasures"
    assert breaks_sentence("the pick", missed, _words, world) == (
        "Even in the assumed world without erasures, the pick falls short: power 0.50, below "
        "the 0.8 target (exact); the erasure share has no exact answer."
    )
    writer = SensitivityRow("multi-user writer share", "0.2", {}, None)
    assert breaks_sentence("the pick", (*missed, writer), _words).endswith(
        "(exact); the erasure share and the multi-user writer share have no exact answer."
    )


def test_rows_come_back_from_json():
    back = rows_of([r.to_json() for r in ROWS])
    assert [r.to_json() for r in back][1:4] == [r.to_json() for r in ROWS][1:4]


def test_the_confidence_section_shows_the_prescribed_rules_rows():
    from reports.sections.confidence_design import holds_blocks

    t = RuleTargets(keep=0.2, exclude=0.5, within=20)
    rows = rule_sensitivity(DEFAULT_RULE, 0.55, t)
    pick = SimpleNamespace(describe=lambda: "the seed's rule", rule=DEFAULT_RULE)
    designs = {f: SimpleNamespace(feasible=True, pick=pick) for f in
               ("confidence", "baseline", "posterior")}  # fmt: skip
    found = SimpleNamespace(row=None)
    ev = SimpleNamespace(targets=t, designs=designs, holds={"confidence": rows},
                         confirmations=dict.fromkeys(designs, found))  # fmt: skip
    sentence, table = holds_blocks(ev)
    assert list(table.frame["helpful kept"]) == [f"{r.figure('kept'):.3f}" for r in rows]
    assert list(table.frame["harmful excluded"]) == [f"{r.figure('excluded'):.3f}" for r in rows]
    kept = next(r for r in rows if r.value == "0.55").figure("kept")
    gone = next(r for r in rows if r.value == "0.55").figure("excluded")
    assert kept < t.keep and gone >= t.exclude
    assert sentence == (
        f"The prescribed rule holds as assumed but breaks first when the base rate moves to "
        f"0.55 (-8% of the assumed): kept {kept:.3f}, below the 0.2 target, excluded "
        f"{gone:.3f} (exact)."
    )
    assert holds_blocks(SimpleNamespace(**vars(ev) | {"holds": {}})) == []


def test_the_learnings_section_reads_its_policys_rows():
    import pandas as pd

    from reports.sections.learnings_holds import holds_blocks

    runs = pd.DataFrame(
        [
            {"scenario": "learnings", "status": "FINISHED", "params.scenario.min_writers": 6,
             "params.scenario.reviewer_accuracy": a, "params.scenario.multi_user_share": s}
            for a, s in ((0.95, 0.0), (0.7, 0.2))
        ]
    )  # fmt: skip
    sweep = SimpleNamespace(answers={"learnings": learnings_answer(runs)})
    policy = "supporter_writers >= 6"
    sentence, table = holds_blocks(sweep, policy, 0.9)
    assert table.caption.startswith("Holds if / breaks when: the prescribed policy (")
    assert table.frame["assumption"].iloc[0] == "as assumed"
    assert "reviewer_accuracy 0.7" in table.frame["value"].iloc[0]  # the worst swept world
    assert list(table.frame.iloc[-2:, -1]) == ["no exact answer"] * 2  # erasure, writer
    precision = table.frame["precision"].iloc[0]
    assert sentence == (
        "Even in the assumed world without erasures or a multi-user writer, the prescribed "
        f"policy falls short: precision {precision}, below the 0.9 target (exact); the "
        "erasure share and the multi-user writer share have no exact answer."
    )
    assert holds_blocks(sweep, "supporter_writers >= 3", 0.9) == []  # not swept: no table
    # one policy ran: nothing was prescribed, so it is "the policy run"
    only, table = holds_blocks(sweep, policy, 0.9, only=True)
    assert only.startswith("Even in the assumed world without erasures or a multi-user writer, "
                           "the policy run falls short")  # fmt: skip
    assert table.caption.startswith("Holds if / breaks when: the policy run (")


def test_the_world_stated_reads_in_every_variant():
    world = "in the assumed world without erasures"
    assert breaks_sentence("the policy", ROWS[:4], _words, world) == (
        "The policy holds in the assumed world without erasures but breaks first when the "
        "horizon moves to 900 (-10% of the assumed): power 0.79, below the 0.8 target (exact)."
    )
    assert breaks_sentence("the policy", (ROWS[0], ROWS[3]), _words, world) == (
        "The policy holds in the assumed world without erasures and at every move tried "
        "(horizon 2000; exact)."
    )


def test_the_confidence_section_does_not_call_the_closest_rule_prescribed():
    """When no rule meets the targets the opening prescribes none ("No rule of any family
    meets both targets ...: the closest, ..."); the holds rows are the closest rule's, and
    read "Even as assumed, the prescribed rule falls short" (a sweep at 30 sessions, base
    0.6, lifts +-0.1: +0.01/-0.09 from 0.95, threshold 0.05 keeps 0.869 and excludes 0.869).
    They now name it the closest rule."""
    from reports.sections.confidence_design import holds_blocks

    t = RuleTargets(keep=0.9, exclude=0.9, within=20)
    rows = rule_sensitivity(DEFAULT_RULE, 0.6, t)
    assert rows[0].holds is False  # the seed's rule misses these targets
    pick = SimpleNamespace(describe=lambda: "the seed's rule", rule=DEFAULT_RULE)
    designs = {f: SimpleNamespace(feasible=False, pick=pick) for f in
               ("confidence", "baseline", "posterior")}  # fmt: skip
    none = dict.fromkeys(designs, SimpleNamespace(row=None))
    ev = SimpleNamespace(targets=t, designs=designs, holds={"confidence": rows}, confirmations=none)
    sentence, table = holds_blocks(ev)
    assert sentence.startswith("Even as assumed, the closest rule falls short: kept ")
    assert "prescribed" not in sentence and "prescribed" not in table.caption
    assert "the closest rule (the seed's rule), unchanged" in table.caption
    # a feasible design is the prescription, and is called so
    ok = {f: SimpleNamespace(feasible=True, pick=pick) for f in designs}
    sentence, table = holds_blocks(SimpleNamespace(**vars(ev) | {"designs": ok}))
    assert "the prescribed rule falls short" in sentence
    assert "the prescribed rule (the seed's rule)" in table.caption
