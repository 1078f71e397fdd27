"""A calibrated gate's guarantee against the size of the prior's ledger, exactly.

A ``TwoSampleGate`` or ``CalibratedSPRTGate`` is designed for a ledger of ``ledger`` runs,
but a real prior's ledger grows. With ``recalibrate`` (the default) the gate, shown a
ledger of ``m`` runs, uses revert and final levels calibrated for ``m``
(``recalibrate.LedgerLevels.levels``: the same calibration as at construction, certified
between grid points, cached per size), so

    max over p0 in [p0_low, p0_high] of P_p0(revert | no change, ledger m) <= alpha

at every ``m``; its accept level (set for power at the design ledger) is kept, so power
and runs move with ``m``. ``ledger_profile`` shows this per size: the certified bound with
the recalibrated levels, the bound of the same gate with its levels kept
(``recalibrate=False``: the former behaviour, which exceeds alpha for longer ledgers),
the least power at the drop (a bound below) and the worst expected pairs when nothing
changed (grid). In the concurrent design the gate reads pairs (the revision's i-th run
with the prior's i-th concurrent run), so none of these depends on the concurrent share;
the share sets only how many sessions the pairs take (``arms.arm_runs``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from procmem_core.errors import ParameterError
from procmem_core.gates.calibrated_sprt import CalibratedSPRTGate
from procmem_core.gates.recalibrate import LedgerLevels
from procmem_core.gates.two_sample import TwoSampleGate
from procmem_core.gates.worst import P0Range, worst_case

LEDGER_SIZES = (0, 20, 30, 50, 100)
"""The ledger sizes a profile shows by default (0: a procedure's first revision)."""


def check_ledger_sizes(
    sizes: object, field: str = "ledger_sizes", minimum: int = 0
) -> tuple[int, ...]:
    """``sizes`` as a sorted tuple: a non-empty collection of distinct whole numbers
    ``>= minimum``; anything else is a ``ParameterError`` naming ``field``."""
    allowed = f"a non-empty list of distinct whole numbers >= {minimum}"
    if isinstance(sizes, str | bytes) or not isinstance(sizes, Sequence | np.ndarray):
        raise ParameterError(field, sizes, allowed)
    values = list(sizes)
    ok = bool(values) and all(
        isinstance(v, int | np.integer) and not isinstance(v, bool) and v >= minimum for v in values
    )
    if not ok or len(set(values)) != len(values):
        raise ParameterError(field, sizes, allowed)
    return tuple(sorted(int(v) for v in values))


@dataclass(frozen=True)
class LedgerRow:
    """One ledger size: ``false_revert`` (certified bound, levels for this size),
    ``false_revert_kept`` (bound with the levels for the design ledger), ``power`` (bound
    below, at the gate's ``min_drop``; NaN when ``min_drop >= p0_low``), ``runs_null``
    (largest expected pairs over the grid when nothing changed) and the levels used."""

    ledger: int
    false_revert: float
    false_revert_kept: float
    power: float
    runs_null: float
    revert_level: float
    final_level: float


def ledger_profile(
    gate: TwoSampleGate | CalibratedSPRTGate, sizes: Sequence[int] = LEDGER_SIZES
) -> tuple[LedgerRow, ...]:
    """The gate's exact worst cases over its p0 range at each ledger size (module
    docstring). Bad sizes are refused before any work."""
    if not isinstance(gate, LedgerLevels):
        raise ParameterError("gate", type(gate).__name__, "a TwoSampleGate or CalibratedSPRTGate")
    sizes = check_ledger_sizes(sizes, minimum=gate.smallest_ledger)
    rng = P0Range(gate.p0_low, gate.p0_high)
    live = dataclasses.replace(gate, recalibrate=True)
    kept = dataclasses.replace(gate, recalibrate=False)
    rows = []
    for m in sizes:
        null = live.certificate_at(m)  # the calibration's own certificate, when it ran
        if null is None:
            null = worst_case(live, 0.0, m, rng, target=gate.alpha)
        old = worst_case(kept, 0.0, m, rng, target=gate.alpha)
        power = np.nan  # undefined where p0 - min_drop <= 0 lies in the range
        if gate.min_drop < rng.low:
            power = worst_case(live, gate.min_drop, m, rng, target=1.0 - gate.beta).bound
        revert, final = live.levels(m)
        row = (null.bound, old.bound, power, null.curve.expected_runs.max())
        rows.append(LedgerRow(m, *(float(x) for x in row), revert, final))
    return tuple(rows)
