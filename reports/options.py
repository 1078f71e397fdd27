"""What a report aims at: the targets of its recommendations (all settable on the
command line, ``python -m reports --help``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from procmem_core.errors import ParameterError, check_int, check_number
from reports.recommend import GateTargets, check_target

SESSIONS_PER_DAY = 100.0
"""Default session rate for calendar time (``--sessions-per-day``): the sessions one
procedure serves per day, both arms together; set it to your own traffic."""


@dataclass(frozen=True)
class ReportOptions:
    """Targets the recommendations aim at (all settable on the command line)."""

    gate: GateTargets = field(default_factory=GateTargets)
    target_power: float = 0.8
    target_excluded: float = 0.9
    target_sessions: int | None = None
    target_kept: float = 0.9
    sessions_per_day: float = SESSIONS_PER_DAY

    def __post_init__(self) -> None:
        if not isinstance(self.gate, GateTargets):
            raise ParameterError("gate", self.gate, "expected a reports.recommend.GateTargets")
        check_number("sessions_per_day", self.sessions_per_day, minimum=0.0, open_low=True)
        for name in ("target_power", "target_excluded", "target_kept"):
            check_target(name, getattr(self, name))
        if self.target_sessions is not None:
            check_int("target_sessions", self.target_sessions, minimum=1)
