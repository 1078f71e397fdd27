"""When does a designed flat rule still meet its targets? Its exact kept and excluded
shares with the world's base rate or one lift moved (issue 30, "holds if / breaks when").

A rule is designed (``flat.design.design_rule``) for ``RuleTargets``: a base success rate,
a helpful and a harmful lift, a horizon, and the shares to keep and exclude. This module
re-evaluates the picked rule, unchanged (its parameters, initial confidence and
threshold), with one of them moved: ``evaluate(rule, threshold, moved)`` gives the exact

    kept = 1 - P(helpful excluded within ``within`` | p = base' + helpful')
    excluded = P(harmful excluded within ``within`` | p = base' + harmful')

(``flat_fate``'s forward recursion; a rule that reads a baseline reads the moved base).
``holds``: the rule meets both targets there (``DesignedRule.meets``). A move is skipped
where the moved world is not one (a success rate outside [0, 1], or the harmful lift not
below the helpful one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from procmem_core.errors import ParameterError
from procmem_core.flat.design import evaluate
from procmem_core.flat.rule import FlatRule
from procmem_core.flat.targets import RuleTargets
from procmem_core.holds import SensitivityRow, relative_shift

BASE_MOVES = (-0.10, -0.05, 0.05, 0.10)
"""Moves of the base rate tried (success-rate points, added to the world's)."""
LIFT_MOVES = (-0.05, 0.05)
"""Moves of each lift tried (success-rate points, added to the world's)."""
ASSUMPTIONS = {"base": "base rate", "helpful_lift": "helpful lift", "harmful_lift": "harmful lift"}


def _row(rule: FlatRule, threshold: float, t: RuleTargets, name: str, shift: float):
    d = evaluate(rule, threshold, t, runs=False)  # kept and excluded: no run lengths
    if not name:
        label, shown = (
            "as designed",
            f"base {t.base:g}, lifts {t.helpful_lift:+g} / {t.harmful_lift:+g}",
        )
    else:
        value = getattr(t, name)
        label, shown = ASSUMPTIONS[name], f"{value:g}" if name == "base" else f"{value:+g}"
    return SensitivityRow(label, shown, {"kept": d.kept, "excluded": d.excluded}, d.meets(t), shift)


def rule_sensitivity(
    rule: FlatRule,
    threshold: float,
    targets: RuleTargets,
    base_moves: Sequence[float] = BASE_MOVES,
    lift_moves: Sequence[float] = LIFT_MOVES,
) -> tuple[SensitivityRow, ...]:
    """The design's own row, then the base rate moved by each of ``base_moves``, then the
    helpful and the harmful lift each moved by each of ``lift_moves`` (module docstring)."""
    rows = [_row(rule, threshold, targets, "", float("nan"))]
    for name, moves in (("base", base_moves), ("helpful_lift", lift_moves),
                        ("harmful_lift", lift_moves)):  # fmt: skip
        for move in moves:
            assumed = getattr(targets, name)
            value = round(assumed + move, 12)
            try:
                moved = replace(targets, **{name: value})
            except ParameterError:
                continue  # not a world: a success rate outside [0, 1], or lifts crossed
            rows.append(_row(rule, threshold, moved, name, relative_shift(value, assumed)))
    return tuple(rows)
