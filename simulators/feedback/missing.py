"""``MissingRatings``: a share of sessions is never rated."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from procmem_core.errors import check_probability
from simulators.feedback.base import ARRIVAL, FeedbackChannel


@dataclass(frozen=True)
class MissingRatings(FeedbackChannel):
    """Each session is unrated with probability ``missing``, independently.

    Collecting k ratings then takes ``k + NB(k, 1 - missing)`` sessions (the negative
    binomial counts the unrated ones before the k-th rating).
    """

    missing: float = 0.0
    name: ClassVar[str] = "missing"
    stage: ClassVar[int] = ARRIVAL

    def __post_init__(self) -> None:
        check_probability("missing", self.missing, open_high=True)

    @property
    def active(self) -> bool:
        return self.missing > 0

    def observe(
        self, rng: np.random.Generator, outcome: np.ndarray, user: np.ndarray | float
    ) -> np.ndarray:
        return rng.random(np.shape(outcome)) >= self.missing

    def extra_sessions(self, rng: np.random.Generator, reports: np.ndarray) -> np.ndarray:
        reports = np.asarray(reports)
        extra = rng.negative_binomial(np.maximum(reports, 1), 1.0 - self.missing)
        return np.where(reports > 0, extra, 0)
