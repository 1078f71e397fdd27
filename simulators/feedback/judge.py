"""``BiasedJudge``: a judge whose errors depend on who the user is (a halo effect)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from procmem_core.errors import check_probability
from simulators.feedback.base import LABEL, FeedbackChannel


@dataclass(frozen=True)
class BiasedJudge(FeedbackChannel):
    """A judge lenient with users who usually succeed and harsh with those who do not.

    For a user with base success rate ``b``: a failure is reported as a success with
    probability ``leniency * b``, a success as a failure with probability
    ``harshness * (1 - b)``. So the judge's error correlates with the user, which no
    label-only noise model can express; at ``leniency = harshness = 0`` it reports the
    truth and draws nothing.
    """

    leniency: float = 0.0
    harshness: float = 0.0
    name: ClassVar[str] = "judge"
    stage: ClassVar[int] = LABEL

    def __post_init__(self) -> None:
        check_probability("leniency", self.leniency)
        check_probability("harshness", self.harshness)

    @property
    def active(self) -> bool:
        return self.leniency > 0 or self.harshness > 0

    def _rates(self, user: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        b = np.asarray(user, dtype=float)
        return self.harshness * (1.0 - b), self.leniency * b

    def relabel(
        self, rng: np.random.Generator, label: np.ndarray, user: np.ndarray | float
    ) -> np.ndarray:
        fn, fp = self._rates(user)
        u = rng.random(label.shape)
        return np.where(label, u >= fn, u < fp)

    def positive_rate(self, q: np.ndarray | float, user: np.ndarray | float) -> np.ndarray:
        fn, fp = self._rates(user)
        return np.multiply(q, 1.0 - fn) + np.multiply(np.subtract(1.0, q), fp)
