"""The exact rule design: its batched recursion against flat_fate, the frontier, picks.

The figures of the frontier come from the design's backward recursion over every
member's confidence grid; each is re-computed here by ``flat_fate`` (a forward
recursion from one start, a different algorithm) and must agree to 1e-12.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.flat import FLAT_RULES, flat_fate
from procmem_core.flat.design import RuleTargets, design_rule
from procmem_core.flat.design_table import by_fate, by_grid
from procmem_core.flat.rule import ConfidenceRule

# The confidence family's design runs over the doubles the seed's float arithmetic
# reaches (docs/flat.md, "Float or grid"): tens of seconds of CPU, remembered per
# targets within a process, so a generous limit on a loaded machine.
pytestmark = pytest.mark.timeout(1800)

AT_30 = RuleTargets(0.10, -0.10, 0.6, 0.9, 0.9, 30)
AT_60 = RuleTargets(0.10, -0.10, 0.6, 0.9, 0.9, 60)


@pytest.fixture(scope="module")
def infeasible():
    return design_rule(AT_30, "confidence")


@pytest.fixture(scope="module")
def feasible():
    return design_rule(AT_60, "confidence")


def recheck(d, t: RuleTargets) -> None:
    base = t.base if d.rule.needs_baseline else None
    fh = flat_fate(t.p_helpful, t.within, d.rule, d.threshold, base)
    fx = flat_fate(t.p_harmful, t.within, d.rule, d.threshold, base)
    assert d.kept == pytest.approx(1 - fh.p_excluded, abs=1e-12)
    assert d.excluded == pytest.approx(fx.p_excluded, abs=1e-12)
    assert d.harmful_sessions == pytest.approx(fx.expected_sessions_applied, abs=1e-9)


@pytest.mark.slow
def test_frontier_figures_equal_flat_fate(infeasible):
    rows = infeasible.frontier
    for d in rows[:: max(1, len(rows) // 25)]:
        recheck(d, AT_30)


@pytest.mark.slow
def test_frontier_is_a_pareto_front(infeasible):
    kept = [d.kept for d in infeasible.frontier]
    excl = [d.excluded for d in infeasible.frontier]
    assert kept == sorted(kept, reverse=True)
    assert all(b > a for a, b in itertools.pairwise(excl))


@pytest.mark.slow
def test_targets_out_of_reach_within_30_say_by_how_much_and_from_when(infeasible):
    d = infeasible
    assert not d.feasible and not d.pick.meets(AT_30)
    keep_short, excl_short = d.pick.shortfall(AT_30)
    assert 0 < keep_short < 0.05 and 0 < excl_short < 0.05
    recheck(d.pick, AT_30)
    # no frontier rule meets both, and the closest is no farther than any of them
    worst = max(keep_short, excl_short)
    assert all(max(f.shortfall(AT_30)) >= worst - 1e-12 for f in d.frontier)
    n, rule = d.shortest
    assert 30 < n <= 120 and rule.meets(RuleTargets(0.1, -0.1, 0.6, 0.9, 0.9, n))
    recheck(rule, RuleTargets(0.1, -0.1, 0.6, 0.9, 0.9, n))
    # no candidate meets both one session earlier: the whole grid's table at n - 1, the
    # exact figures design_rule's feasibility reads (design_rule itself would go on to
    # search the shortest horizon again, a walk to 2 (n - 1) sessions)
    before = RuleTargets(0.1, -0.1, 0.6, 0.9, 0.9, n - 1)
    table, skipped = by_grid(ConfidenceRule.design_grid(0.6), before, n - 1)
    assert skipped == 0 and len(table.kept) == d.candidates
    assert not ((table.kept >= 0.9 - 1e-12) & (table.excluded >= 0.9 - 1e-12)).any()
    # the seed's rule, for comparison: exact at the targets
    assert d.reference.kept == pytest.approx(1 - flat_fate(0.7, 30).p_excluded, abs=1e-12)


@pytest.mark.slow
def test_feasible_pick_meets_both_with_the_least_exposure(feasible):
    d = feasible
    assert d.feasible and d.pick.meets(AT_60)
    recheck(d.pick, AT_60)
    meeting = [f for f in d.frontier if f.meets(AT_60)]
    assert meeting and all(d.pick.harmful_sessions <= f.harmful_sessions + 1e-9 for f in meeting)
    assert d.pick.helpful_run_length > 60  # Brook-Evans, beyond the horizon


@pytest.mark.slow
def test_margin_objective_picks_the_largest_smaller_margin(feasible):
    d = design_rule(AT_60, "confidence", objective="margin")

    def margin(r):
        return min(r.kept - AT_60.keep, r.excluded - AT_60.exclude)

    assert d.pick.meets(AT_60) and margin(d.pick) >= margin(feasible.pick)
    assert all(margin(d.pick) >= margin(f) - 1e-12 for f in d.frontier)


@pytest.mark.slow
def test_separating_rules_drift_the_right_way():
    d = design_rule(AT_30, "confidence", separating=True)
    be = d.pick.rule.break_even
    assert AT_30.p_harmful < be < AT_30.p_helpful
    assert all(AT_30.p_harmful < f.rule.break_even < AT_30.p_helpful for f in d.frontier)


@pytest.mark.parametrize("family", ["baseline", "posterior"])
def test_alternative_families_are_designed_exactly(family):
    d = design_rule(AT_60, family)
    assert d.feasible and d.pick.meets(AT_60)
    recheck(d.pick, AT_60)
    for f in d.frontier[:: max(1, len(d.frontier) // 4)]:
        recheck(f, AT_60)
    assert d.pick.rule.break_even_rate(0.6) == 0.6


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"keep": 1.0}, "keep"),
        ({"keep": 0.0}, "keep"),
        ({"exclude": 1.2}, "exclude"),
        ({"within": 0}, "within"),
        ({"within": 2.5}, "within"),
        ({"base": 1.5}, "base"),
        ({"helpful_lift": 0.5}, "helpful_lift"),
        ({"harmful_lift": 0.2}, "harmful_lift"),
        ({"harmful_lift": -0.7}, "harmful_lift"),
    ],
)
def test_bad_targets_name_the_field(kwargs, field):
    with pytest.raises(ParameterError) as info:
        RuleTargets(**kwargs)
    assert info.value.field == field


def test_bad_family_and_objective_fail_before_any_work():
    with pytest.raises(ParameterError, match="family"):
        design_rule(AT_30, "nope")
    with pytest.raises(ParameterError, match="objective"):
        design_rule(AT_30, "confidence", objective="fast")


def test_a_counts_member_starting_below_its_threshold_shows_a_harmful_procedure_never():
    """A posterior member whose start is below its threshold never shows a procedure: kept
    0, excluded 1, and 0 harmful sessions (``by_fate`` counted the first session as shown
    whatever the start, 1 session; audit4b), as ``FlatFate.shown_by_session`` says."""
    targets = RuleTargets(base=0.3, helpful_lift=0.1, harmful_lift=-0.1, within=10)
    grid = FLAT_RULES.get("posterior", "family").design_grid(0.3)
    table, _ = by_fate(grid, targets, targets.within)
    below = table.initial < table.threshold
    assert below.sum() >= 5
    assert (table.sessions[below] == 0).all()
    assert (table.kept[below] == 0).all() and (table.excluded[below] == 1).all()
    above = ~below  # the others: the expected sessions shown, from flat_fate directly
    i = int(np.flatnonzero(above)[0])
    rule, t = grid[int(table.space[i])].rule, float(table.threshold[i])
    fx = flat_fate(targets.p_harmful, targets.within, rule, t, targets.base)
    assert table.sessions[i] == pytest.approx(fx.shown_by_session.sum(), rel=1e-12)
