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
from reports.holds import breaks_sentence, holds_table, rows_of

ROWS = (
    SensitivityRow("as assumed", "x 1", {"power": 0.85}, True),
    SensitivityRow("lift", "0.05", {"power": 0.4}, False, -0.5),
    SensitivityRow("horizon", "900", {"power": 0.79}, False, -0.1),
    SensitivityRow("horizon", "2000", {"power": 0.99}, True, 1.0),
    SensitivityRow("erasure share", "0.1", {}, None, math.nan, "no exact answer: assumed 0"),
)


def _words(r: SensitivityRow) -> str:
    return f"power {r.figure('power'):.2f}"


def test_the_table_shows_each_row_and_says_where_there_is_no_answer():
    t = holds_table("the pick", ROWS, {"power": ("power", "{:.2f}".format)}, ">= 0.8")
    assert t.caption == "Holds if / breaks when: the pick"
    assert list(t.frame.columns) == ["assumption", "value", "power", "holds (>= 0.8)?"]
    assert list(t.frame["power"]) == ["0.85", "0.40", "0.79", "0.99", "no exact answer: assumed 0"]
    assert list(t.frame.iloc[:, -1]) == ["holds", "breaks", "breaks", "holds", "no exact answer"]
    assert holds_table("x", (), {}, "") is None


def test_the_sentence_names_the_smallest_move_that_breaks():
    said = breaks_sentence("The pick", ROWS, _words)
    assert said == (
        "The pick breaks first when the horizon moves to 900 (-10% of the assumed): power 0.79 "
        "(exact) (erasure share: no exact answer)."
    )
    held = breaks_sentence("The pick", (ROWS[0], ROWS[3]), _words)
    assert held == "The pick holds at every move tried (exact)."
    missed = (SensitivityRow("as assumed", "x", {"power": 0.5}, False), ROWS[1])
    assert breaks_sentence("The pick", missed, _words).startswith(
        "The pick misses its targets as assumed (power 0.50, exact)"
    )
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
    assert sentence == (
        f"The prescribed rule breaks first when the base rate moves to 0.55 (-8% of the "
        f"assumed): kept {kept:.3f}, excluded "
        f"{next(r for r in rows if r.value == '0.55').figure('excluded'):.3f} (exact)."
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
    assert sentence.startswith("Without erasures or a multi-user writer, the prescribed policy ")
    assert holds_blocks(sweep, "supporter_writers >= 3", 0.9) == []  # not swept: no table
