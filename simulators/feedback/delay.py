"""``DelayedRatings``: every rating arrives a fixed number of sessions late."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from procmem_core.errors import check_int
from simulators.feedback.base import ARRIVAL, FeedbackChannel


@dataclass(frozen=True)
class DelayedRatings(FeedbackChannel):
    """The rating of session ``t`` arrives at session ``t + delay``; ratings due after the
    horizon never arrive. Draws nothing."""

    delay: int = 0
    name: ClassVar[str] = "delay"
    stage: ClassVar[int] = ARRIVAL

    def __post_init__(self) -> None:
        check_int("delay", self.delay, minimum=0)

    @property
    def active(self) -> bool:
        return self.delay > 0

    @property
    def lag(self) -> int:
        return int(self.delay)
