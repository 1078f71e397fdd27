"""When does a prescribed gate's guarantee hold? Its exact worst cases when one assumption
of the design question changes (issue 30, "holds if / breaks when").

A gate is designed for a question (``DesignQuestion``): a drop ``min_drop`` to detect, a
range ``[p0_low, p0_high]`` of prior rates, a ledger. This module re-evaluates the same
gate, unchanged, with one of them moved:

- the true drop ``d`` (the revision is worse by ``d``, not by ``min_drop``): the power
  ``min over p0 of P(revert | p0, p0 - d)``; the false revert does not depend on it;
- the p0 range (the prior's true rate may lie outside the range it was certified for):
  the worst false revert ``max over p0 of P(revert | p0, p0)`` and the power, over the
  new range (the power is undefined when ``p0 - min_drop <= 0`` lies in it).

Each figure is ``worst_case`` (exact on a grid, bounded between grid points). The
ledger's own row set is ``ledger_profile``; the concurrent share moves sessions, not the
gate's error rates (the gate reads pairs). ``holds`` is the design's test: false revert
``<= alpha`` and power ``>= 1 - beta`` with the certification margin.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from procmem_core.errors import ParameterError
from procmem_core.gates.base import Gate
from procmem_core.gates.design import DesignQuestion
from procmem_core.gates.tolerance import at_least, at_most
from procmem_core.gates.worst import P0Range, worst_case
from procmem_core.holds import SensitivityRow, relative_shift

DROPS = (0.10, 0.20, 0.25)
"""True drops tried beside the design's ``min_drop`` (0.15 in the seeds' question)."""
RANGES = ((0.1, 0.95), (0.5, 0.95))
"""p0 ranges tried beside the design's (the seeds' question: [0.3, 0.95])."""


__all__ = ["DROPS", "RANGES", "SensitivityRow", "sensitivity"]


def _row(
    assumption: str, value: str, fr: float, pw: float, q: DesignQuestion, shift: float = math.nan
) -> SensitivityRow:
    """A row of the shared type (``procmem_core.holds``) with figures ``false_revert``
    (worst) and ``power`` (worst; NaN: not defined)."""
    ok = bool(at_most(fr, q.alpha)) and (math.isnan(pw) or bool(at_least(pw, 1.0 - q.beta)))
    return SensitivityRow(assumption, value, {"false_revert": float(fr), "power": float(pw)}, ok,
                          shift)  # fmt: skip


def sensitivity(
    gate: Gate,
    q: DesignQuestion,
    prior_runs: int | None,
    drops: Sequence[float] = DROPS,
    ranges: Sequence[tuple[float, float]] = RANGES,
) -> tuple[SensitivityRow, ...]:
    """The design's own row, then each true drop in ``drops`` and each p0 range in
    ``ranges`` that differs from the question's (module docstring). ``prior_runs``: the
    ledger the gate is evaluated with, as the design question evaluates it (0 for a
    0-run ledger); None (p0 known) is refused where the gate's rule then reads the true
    p0 (paired gates, the SPRT), whose worst case has no certified bound."""
    design = P0Range(q.p0_low, q.p0_high)
    fr = worst_case(gate, 0.0, prior_runs, design, target=q.alpha).bound
    if fr is None:  # the curve uses the true p0 (p0 known): no bound between grid points
        raise ParameterError(
            "prior_runs", prior_runs,
            "a ledger size (with p0 known this gate's rule uses the true p0, so its worst "
            "case has no bound between grid points)",
        )  # fmt: skip
    pw = worst_case(gate, q.min_drop, prior_runs, design, target=1 - q.beta).bound
    rows = [_row("as designed", f"drop {q.min_drop:g}, p0 in [{q.p0_low:g}, {q.p0_high:g}]",
                 fr, pw, q)]  # fmt: skip
    for d in (d for d in drops if d != q.min_drop and 0 < d < design.low):
        power = worst_case(gate, d, prior_runs, design, target=1 - q.beta).bound
        rows.append(_row("true drop", f"{d:g}", fr, power, q, relative_shift(d, q.min_drop)))
    for low, high in (r for r in ranges if r != (q.p0_low, q.p0_high)):
        rng = P0Range(low, high)
        null = worst_case(gate, 0.0, prior_runs, rng, target=q.alpha).bound
        power = math.nan
        if q.min_drop < low:
            power = worst_case(gate, q.min_drop, prior_runs, rng, target=1 - q.beta).bound
        rows.append(_row("p0 range", f"[{low:g}, {high:g}]", null, power, q))
    return tuple(rows)
