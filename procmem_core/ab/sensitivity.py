"""When does a planned explore rate still reach its power? Its fixed-n power with the
true lift or the horizon moved (issue 30, "holds if / breaks when").

The planner (``ab.planner.plan``) picks an explore rate ``eps`` for a ``Design`` (a lift
over a base rate, a level, a target power) and a horizon ``H``. This module re-evaluates
the picked rate, unchanged, with one of them moved: ``fixed_power(Design(lift', base),
H, eps)`` and ``fixed_power(design, H', eps)``, exact (Newcombe's interval over the
binomial lattice) where the smaller arm is expected to hold at most ``EXACT_ARM``
sessions, else the normal formula ``Phi(|lift| / sqrt(v / n) - z_{1-alpha/2})`` (the
figure's ``method`` says which). ``holds``: power >= the design's target. A lift move is
skipped where ``base + lift'`` leaves [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from procmem_core.ab.planner import EXACT_ARM, Design, fixed_power
from procmem_core.errors import ParameterError, check_int, check_probability
from procmem_core.holds import SensitivityRow, relative_shift

LIFT_FACTORS = (0.5, 0.75, 1.25)
"""True lifts tried, as multiples of the design's."""
HORIZON_FACTORS = (0.5, 0.75, 1.5)
"""Horizons tried, as multiples of the planned one."""


def _method(sessions: int, rate: float) -> str:
    return "exact" if min(rate, 1 - rate) * sessions <= EXACT_ARM else "normal approx."


def _row(assumption: str, value: str, design: Design, n: int, rate: float, shift: float):
    power = fixed_power(design, n, rate)
    return SensitivityRow(
        assumption, value, {"power": power}, power >= design.power, shift, _method(n, rate)
    )


def explore_sensitivity(
    design: Design,
    horizon: int,
    rate: float,
    lift_factors: Sequence[float] = LIFT_FACTORS,
    horizon_factors: Sequence[float] = HORIZON_FACTORS,
) -> tuple[SensitivityRow, ...]:
    """The plan's own row (lift, horizon), then each true lift ``f * lift`` and each
    horizon ``round(f * horizon)`` (module docstring)."""
    horizon = check_int("horizon", horizon, minimum=2)
    rate = check_probability("rate", rate, open_low=True, open_high=True)
    rows = [_row("as planned", f"lift {design.lift:+g}, {horizon} sessions", design, horizon,
                 rate, math.nan)]  # fmt: skip
    for f in lift_factors:
        lift = round(f * design.lift, 12)
        try:
            moved = replace(design, lift=lift)
        except ParameterError:
            continue  # base + lift outside [0, 1]
        shift = relative_shift(lift, design.lift)
        rows.append(_row("true lift", f"{lift:+g}", moved, horizon, rate, shift))
    for f in horizon_factors:
        n = max(2, round(f * horizon))
        shift = relative_shift(n, horizon)
        rows.append(_row("horizon", f"{n} sessions", design, n, rate, shift))
    return tuple(rows)
