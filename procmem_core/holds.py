"""One row of a prescription's "holds if / breaks when" table (issue 30): the prescription,
unchanged, evaluated exactly with one assumption of its world moved.

Every prescription (the gate, the flat rule, the explore rate, the review policy) assumed
a world; its table re-evaluates it where one parameter takes another value. A row names
the assumption and the value it took, carries the exact figures there (named, NaN where a
figure is not defined), and says whether the prescription still meets its targets
(``holds``; None where no exact answer exists for that assumption, with ``note`` saying
why). ``shift`` is the relative move ``value / assumed - 1`` (NaN for the design's own row
and where the move is not a number), by which ``first_break`` names the assumption that
breaks the prescription with the smallest move.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

_FIELDS = ("assumption", "value", "holds", "shift", "note")


@dataclass(frozen=True)
class SensitivityRow:
    """The prescription's exact figures with one assumption moved (module docstring)."""

    assumption: str
    value: str
    figures: Mapping[str, float] = field(default_factory=dict)
    holds: bool | None = None
    shift: float = math.nan
    note: str = ""

    def figure(self, name: str) -> float:
        """One exact figure (NaN where the row has none of that name)."""
        return float(self.figures.get(name, math.nan))

    def to_json(self) -> dict:
        """Plain JSON: the fields, the figures as a dict (NaN kept as NaN)."""
        return {
            "assumption": self.assumption,
            "value": self.value,
            "figures": {k: float(v) for k, v in self.figures.items()},
            "holds": None if self.holds is None else bool(self.holds),
            "shift": float(self.shift),
            "note": self.note,
        }

    @classmethod
    def from_json(cls, data: Mapping) -> SensitivityRow:
        """A row back from ``to_json``; also reads the gate's older flat rows, whose
        figures (``false_revert``, ``power``) stood beside the fields."""
        figures = data.get("figures")
        if figures is None:
            figures = {k: v for k, v in data.items() if k not in _FIELDS}
        shift = data.get("shift")
        return cls(
            str(data["assumption"]),
            str(data["value"]),
            {k: float(v) for k, v in figures.items()},
            None if data.get("holds") is None else bool(data["holds"]),
            math.nan if shift is None else float(shift),
            str(data.get("note", "")),
        )


def relative_shift(value: float, assumed: float) -> float:
    """``value / assumed - 1`` (NaN when ``assumed`` is 0)."""
    return math.nan if assumed == 0 else float(value) / float(assumed) - 1.0


def first_break(rows: Sequence[SensitivityRow]) -> SensitivityRow | None:
    """The row that breaks the prescription with the smallest relative move (rows without
    an exact answer or a numeric move are passed over); None when none breaks."""
    broken = [r for r in rows if r.holds is False and not math.isnan(r.shift)]
    return min(broken, key=lambda r: abs(r.shift)) if broken else None
