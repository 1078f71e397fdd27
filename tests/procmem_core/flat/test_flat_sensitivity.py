"""Holds if / breaks when for the flat rule (issue 30): the rule, unchanged, with the base
rate or one lift moved; each row equals ``flat_fate`` computed directly at the moved
world, moves outside [0, 1] are skipped, and the shares move the way the walk must."""

from __future__ import annotations

from dataclasses import replace

import pytest

from procmem_core.flat.design import evaluate
from procmem_core.flat.fate import flat_fate
from procmem_core.flat.rule import DEFAULT_RULE
from procmem_core.flat.sensitivity import rule_sensitivity
from procmem_core.flat.targets import RuleTargets
from procmem_core.holds import first_break

T = RuleTargets(helpful_lift=0.1, harmful_lift=-0.1, base=0.6, keep=0.5, exclude=0.5, within=20)
THRESHOLD = 0.55


@pytest.fixture(scope="module")
def rows():
    return rule_sensitivity(DEFAULT_RULE, THRESHOLD, T, base_moves=(-0.1, 0.1, 0.35),
                            lift_moves=(-0.05, 0.05))  # fmt: skip


def _moved(row) -> RuleTargets:
    name = {"base rate": "base", "helpful lift": "helpful_lift", "harmful lift": "harmful_lift"}
    return replace(T, **{name[row.assumption]: float(row.value)})


def test_each_row_is_the_fate_at_the_moved_world(rows):
    assert [(r.assumption, r.value) for r in rows] == [
        ("as designed", "base 0.6, lifts +0.1 / -0.1"),
        ("base rate", "0.5"),
        ("base rate", "0.7"),  # 0.95 is skipped: 0.95 + 0.1 > 1
        ("helpful lift", "+0.05"),
        ("helpful lift", "+0.15"),
        ("harmful lift", "-0.15"),
        ("harmful lift", "-0.05"),
    ]
    for r in rows[1:]:
        t = _moved(r)
        kept = 1 - flat_fate(t.base + t.helpful_lift, 20, DEFAULT_RULE, THRESHOLD).p_excluded
        excl = flat_fate(t.base + t.harmful_lift, 20, DEFAULT_RULE, THRESHOLD).p_excluded
        assert r.figure("kept") == pytest.approx(kept, abs=1e-12)
        assert r.figure("excluded") == pytest.approx(excl, abs=1e-12)
        assert r.holds == evaluate(DEFAULT_RULE, THRESHOLD, t).meets(t)
        assert r.holds == (kept >= 0.5 and excl >= 0.5)
    d = evaluate(DEFAULT_RULE, THRESHOLD, T)
    assert (rows[0].figure("kept"), rows[0].figure("excluded")) == (d.kept, d.excluded)


def test_the_shares_move_as_the_walk_must(rows):
    by = {(r.assumption, r.value): r for r in rows}
    low, mid, high = by[("base rate", "0.5")], rows[0], by[("base rate", "0.7")]
    # a higher success rate excludes less: kept rises and excluded falls with the base
    assert low.figure("kept") < mid.figure("kept") < high.figure("kept")
    assert low.figure("excluded") > mid.figure("excluded") > high.figure("excluded")
    # a lift moves only its own procedure's share
    up = by[("helpful lift", "+0.15")]
    assert up.figure("kept") > mid.figure("kept") and up.figure("excluded") == mid.figure(
        "excluded"
    )
    worse = by[("harmful lift", "-0.05")]
    assert worse.figure("excluded") < mid.figure("excluded")
    assert worse.figure("kept") == mid.figure("kept")
    assert rows[2].shift == pytest.approx(0.7 / 0.6 - 1)


def test_the_first_break_is_the_smallest_move_that_breaks():
    t = replace(T, keep=0.2, exclude=0.5)  # the seed keeps 0.234 of helpful ones within 20
    rows = rule_sensitivity(DEFAULT_RULE, THRESHOLD, t)
    broken = [r for r in rows if r.holds is False]
    assert rows[0].holds and len(broken) == 3  # base 0.5, 0.55 and helpful lift +0.05
    first = first_break(rows)
    assert (first.assumption, first.value) == ("base rate", "0.55")  # -8 %, before -50 %
    assert first.figure("kept") < 0.2 and all(abs(first.shift) <= abs(r.shift) for r in broken)
