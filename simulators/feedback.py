"""Feedback: how a true session outcome becomes the signal the engine sees.

RecSim's response model, reduced to what procmem's rules consume: one boolean signal per
session, or none.

- Label flips with separate rates: a success is reported as a failure with probability
  ``false_negative``, a failure as a success with probability ``false_positive`` (a
  biased judge has ``false_negative != false_positive``). A signal is positive with
  probability ``q (1 - false_negative) + (1 - q) false_positive`` for true rate ``q``.
- Missing feedback: with probability ``missing`` there is no signal, so no update.
- Delay: the signal of session ``t`` arrives at session ``t + delay`` (``DelayLine``);
  signals due after the horizon never arrive.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from procmem_core.errors import check_int, check_probability


@dataclass(frozen=True)
class FeedbackModel:
    """Noise between a true outcome and the observed signal. Defaults: a perfect judge."""

    false_negative: float = 0.0
    false_positive: float = 0.0
    missing: float = 0.0
    delay: int = 0

    def __post_init__(self) -> None:
        check_probability("false_negative", self.false_negative)
        check_probability("false_positive", self.false_positive)
        check_probability("missing", self.missing, open_high=True)
        check_int("delay", self.delay, minimum=0)

    @property
    def noiseless(self) -> bool:
        """True when the signal is the outcome, always and at once."""
        return (
            self.false_negative == 0
            and self.false_positive == 0
            and self.missing == 0
            and self.delay == 0
        )

    @property
    def flips(self) -> bool:
        return self.false_negative > 0 or self.false_positive > 0

    def positive_rate(self, q: np.ndarray | float) -> np.ndarray | float:
        """P(signal positive | observed) at true success rate q."""
        return np.multiply(q, 1.0 - self.false_negative) + np.multiply(
            np.subtract(1.0, q), self.false_positive
        )

    def signal(self, rng: np.random.Generator, outcomes: np.ndarray) -> np.ndarray:
        """The reported label of each outcome (flipped at the two rates).

        Draws nothing when there are no flips, so a noiseless run uses the same random
        stream as a run without a feedback model.
        """
        outcomes = np.asarray(outcomes, dtype=bool)
        if not self.flips:
            return outcomes
        u = rng.random(outcomes.shape)
        return np.where(outcomes, u >= self.false_negative, u < self.false_positive)

    def observed(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray | None:
        """Which sessions report a signal at all; None means all of them (draws nothing)."""
        if self.missing == 0:
            return None
        return rng.random(shape) >= self.missing


class DelayLine:
    """A FIFO of ``delay`` sessions: push what session ``t`` produced, get session ``t - delay``.

    Items are arbitrary (typically a tuple of arrays: who was shown, the signal, whether
    it was observed). ``push`` returns None until the line is full.
    """

    def __init__(self, delay: int) -> None:
        self.delay = check_int("delay", delay, minimum=0)
        self._queue: deque = deque()

    def push(self, item: object) -> object | None:
        if self.delay == 0:
            return item
        self._queue.append(item)
        if len(self._queue) > self.delay:
            return self._queue.popleft()
        return None

    def __len__(self) -> int:
        return len(self._queue)
