"""Levels recalibrated for the ledger a revision has: one rule for every calibrated gate.

A calibrated gate (``TwoSampleGate``, ``CalibratedSPRTGate``) computes its revert and
final levels for a prior's ledger of ``ledger`` runs (``gates.calibrate``), so that

    max over p0 in [p0_low, p0_high] of P_p0(revert | no change) <= alpha

holds with that ledger. A real prior's ledger grows. ``LedgerLevels.levels(m)`` gives the
levels for a ledger of ``m`` runs: the gate's own at its design ledger (or with
``recalibrate`` off), else the same calibration run for ``m`` (the gate module's cached
``_calibrated``, certified between grid points), so the guarantee holds at every size;
the accept level, set for power at the design ledger, is kept. ``ledger_profile`` shows
the guarantee per size.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from procmem_core.gates.base import field_values, gate_key
from procmem_core.gates.calibrate import Calibration
from procmem_core.gates.worst import WorstCase


class LedgerLevels(ABC):
    """Per-ledger levels for a dataclass gate with fields ``ledger``, ``recalibrate``,
    ``revert_level``, ``final_level`` and a cached calibration (``calibration``)."""

    ledger: int
    recalibrate: bool
    revert_level: float
    final_level: float

    @abstractmethod
    def calibration(self, key: tuple) -> Calibration:
        """The gate module's cached calibration for the parameters ``key`` (a gate also
        is a ``Gate`` (``base.field_values``), and ``certificate()``)."""

    @property
    def smallest_ledger(self) -> int:
        """The fewest ledger runs the gate's calibration takes (smaller: own levels)."""
        return 0

    def levels(self, ledger: int) -> tuple[float, float]:
        """``(revert_level, final_level)`` with a ledger of ``ledger`` runs: the gate's own
        at ``self.ledger`` (or with ``recalibrate`` off), else calibrated for that ledger
        from the gate's own early revert level (certified, cached per size)."""
        m = int(ledger)
        if m == self.ledger or not self.recalibrate or m < self.smallest_ledger:
            return float(self.revert_level), float(self.final_level)
        cal = self.calibration(self.key_at(m))
        return cal.revert_level, cal.final_level

    def key_at(self, ledger: int) -> tuple:
        """The calibration key of this gate's boundaries for a ledger of ``ledger`` runs."""
        at = {
            **field_values(self),
            "ledger": int(ledger),
            "final_level": None,
            "recalibrate": False,
        }
        return tuple(at.items())

    def recursion_key(self, ledger: int) -> tuple:
        """``base.gate_key`` of this gate's recursion with a ledger of ``ledger`` runs,
        ``recalibrate`` read as False where it does not matter: at the design ledger both
        settings use the gate's own levels (``levels``), so a design's gate and the equal
        gate its calibration certified (built with ``recalibrate=False``) share one."""
        m = int(ledger)
        own = m == self.ledger or m < self.smallest_ledger
        if self.recalibrate and not own:
            return gate_key(self, m)
        return gate_key(self, m, recalibrate=False)

    def certificate_at(self, ledger: int) -> WorstCase | None:
        """The worst case certifying the levels used with a ledger of ``ledger`` runs."""
        if int(ledger) == self.ledger or not self.recalibrate:
            return self.certificate() if int(ledger) == self.ledger else None
        if int(ledger) < self.smallest_ledger:
            return None
        return self.calibration(self.key_at(ledger)).worst
