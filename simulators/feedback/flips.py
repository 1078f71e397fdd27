"""``LabelFlips``: a judge that reports a success as a failure with probability
``false_negative`` and a failure as a success with probability ``false_positive``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from procmem_core.errors import check_probability
from simulators.feedback.base import LABEL, FeedbackChannel


@dataclass(frozen=True)
class LabelFlips(FeedbackChannel):
    """Label flips at two rates; ``false_negative != false_positive`` is a biased judge.

    A signal is positive with probability ``q (1 - false_negative) + (1 - q)
    false_positive`` for true rate ``q``. One uniform per session when active.
    """

    false_negative: float = 0.0
    false_positive: float = 0.0
    name: ClassVar[str] = "flips"
    stage: ClassVar[int] = LABEL

    def __post_init__(self) -> None:
        check_probability("false_negative", self.false_negative)
        check_probability("false_positive", self.false_positive)

    @property
    def active(self) -> bool:
        return self.false_negative > 0 or self.false_positive > 0

    def relabel(
        self, rng: np.random.Generator, label: np.ndarray, user: np.ndarray | float
    ) -> np.ndarray:
        u = rng.random(label.shape)
        return np.where(label, u >= self.false_negative, u < self.false_positive)

    def positive_rate(self, q: np.ndarray | float, user: np.ndarray | float) -> np.ndarray:
        return np.multiply(q, 1.0 - self.false_negative) + np.multiply(
            np.subtract(1.0, q), self.false_positive
        )
