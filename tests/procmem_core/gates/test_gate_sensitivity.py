"""Holds if / breaks when (issue 30): the prescribed gate's exact worst cases with one
assumption of its design question moved, each equal to ``worst_case`` called directly,
and the section's table and sentence from them."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from procmem_core.gates import DesignQuestion, design_gate, make_gate
from procmem_core.gates.sensitivity import SensitivityRow, sensitivity
from procmem_core.gates.tolerance import at_most
from procmem_core.gates.worst import P0Range, worst_case

Q = DesignQuestion(alpha=0.1, beta=0.3, min_drop=0.3, ledger=10, concurrent=0.5,
                   p0_low=0.4, p0_high=0.9, max_runs=40, ledger_sizes=(0, 10))  # fmt: skip


@pytest.fixture(scope="module")
def chosen():
    design = design_gate(Q)
    return next(a for a in design.answers if (a.family, a.design) == ("two_sample", "concurrent"))


def test_each_row_is_the_gates_worst_case_with_one_assumption_moved(chosen):
    gate = make_gate(**chosen.config)
    rows = sensitivity(gate, Q, 10, drops=(0.2, 0.35), ranges=((0.2, 0.9), (0.5, 0.9)))
    assert [(r.assumption, r.value) for r in rows] == [
        ("as designed", "drop 0.3, p0 in [0.4, 0.9]"),
        ("true drop", "0.2"),
        ("true drop", "0.35"),
        ("p0 range", "[0.2, 0.9]"),
        ("p0 range", "[0.5, 0.9]"),
    ]
    design = P0Range(0.4, 0.9)
    fr = worst_case(gate, 0.0, 10, design, target=0.1).bound
    assert rows[0].figure("false_revert") == fr and rows[0].figure("power") == pytest.approx(
        chosen.power, abs=1e-9
    )
    assert rows[0].holds  # the design meets its own targets
    small = worst_case(gate, 0.2, 10, design, target=0.7).bound
    assert rows[1].figure("power") == small and rows[1].figure("false_revert") == fr
    assert rows[1].figure("power") < 0.7 and not rows[1].holds  # a smaller drop: power breaks
    assert (
        rows[2].figure("power") >= rows[0].figure("power") and rows[2].holds
    )  # a larger drop: more power
    wide = worst_case(gate, 0.0, 10, P0Range(0.2, 0.9), target=0.1).bound
    assert rows[3].figure("false_revert") == wide and math.isnan(
        rows[3].figure("power")
    )  # 0.2 - 0.3 < 0
    assert rows[3].holds == bool(at_most(wide, 0.1))  # the design's own test, margin included
    narrow = worst_case(gate, 0.3, 10, P0Range(0.5, 0.9), target=0.7).bound
    assert rows[4].figure("power") == narrow


def test_the_section_shows_where_it_holds_and_breaks(chosen):
    from reports.sections.gate_design import Prescription

    rows = sensitivity(make_gate(**chosen.config), Q, 10, drops=(0.2,), ranges=((0.5, 0.9),))
    p = Prescription(Q, design_gate(Q), chosen, pd.DataFrame(), holds=rows)
    table = p.holds_table().frame
    assert list(table["value"]) == [r.value for r in rows]
    assert list(table["worst power (lower bound)"]) == [f"{r.figure('power'):.3f}" for r in rows]
    fr = [f"{r.figure('false_revert'):.4f}" for r in rows]
    assert list(table["worst false revert (upper bound)"]) == fr
    assert list(table.iloc[:, -1]) == ["holds" if r.holds else "breaks" for r in rows]
    power = rows[1].figure("power")
    assert power < 0.7 and rows[2].holds
    assert p.sentence().endswith(
        f" The prescribed gate holds as assumed but breaks first when the true drop moves to "
        f"0.2 (-33% of the assumed): power {power:.3f}, below the 0.7 target (exact)."
    )
    rec = json.loads(p.recommendations())
    back = [SensitivityRow.from_json(r).to_json() for r in rec["holds_if"]]
    assert json.dumps(back) == json.dumps([r.to_json() for r in rows])  # NaN != NaN: as text
