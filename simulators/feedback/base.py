"""Feedback: how a true session outcome becomes the signal the engine sees, and when.

RecSim's response model, split into small channels on one base. A channel sees the
outcome and the user (the user's base success rate, the trait every simulated user has)
and does one thing:

- a *label* channel changes what is reported (``LabelFlips``, ``BiasedJudge``);
- an *arrival* channel changes whether and when a report arrives (``MissingRatings``,
  ``DelayedRatings``, ``InformativeMissing``: the chance of a report depends on the
  outcome, so the reported sessions are a biased sample of the sessions).

``Feedback`` composes channels (label channels first, then arrival ones, each in name
order) and owns arrival timing for every scenario: ``transmit`` gives the reported
labels, which sessions report at all and their delay; ``ArrivalLine`` hands session-by-
session scenarios the reports that are due; ``arrived_by`` cuts a fixed horizon;
``sessions_to_collect`` says how many sessions it takes to collect k reports. A channel
at its no-op settings draws nothing, so a noiseless run uses the same random stream as a
run with no feedback at all. A subclass with a ``name`` joins ``CHANNELS`` by itself.
"""

from __future__ import annotations

from abc import ABC
from collections import deque
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from procmem_core.errors import ParameterError, check_int
from procmem_core.registry import Registry

CHANNELS: Registry[FeedbackChannel] = Registry("feedback channel", "simulators.feedback")
"""Every feedback channel by name (``flips``, ``judge``, ``missing``, ``delay``, ...)."""

LABEL, ARRIVAL = 0, 1


@dataclass(frozen=True, kw_only=True)
class Signals:
    """What the engine is told about a batch of sessions.

    ``label``: the reported outcome (bool, the outcomes' shape); ``observed``: which
    sessions report at all (None: every one); ``delay``: sessions until a report arrives.
    """

    label: np.ndarray
    observed: np.ndarray | None = None
    delay: int = 0

    def reported(self) -> np.ndarray:
        """``observed`` as an array (all True where it is None)."""
        if self.observed is None:
            return np.ones(np.shape(self.label), dtype=bool)
        return self.observed


class FeedbackChannel(ABC):
    """One step between outcome and signal; override the verbs of its stage."""

    name: ClassVar[str]
    stage: ClassVar[int] = LABEL

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            CHANNELS.add(cls)

    @property
    def active(self) -> bool:
        """False at the channel's no-op settings (then it draws nothing)."""
        return True

    def relabel(
        self, rng: np.random.Generator, label: np.ndarray, user: np.ndarray | float
    ) -> np.ndarray:
        """The reported labels (a label channel overrides this)."""
        return label

    def positive_rate(self, q: np.ndarray | float, user: np.ndarray | float) -> np.ndarray:
        """P(reported positive) when the true success rate is ``q`` (label channels)."""
        return np.asarray(q, dtype=float)

    informative: ClassVar[bool] = False
    """True when whether a session reports depends on its outcome (then the reported
    sessions' success rate is not the sessions', ``reported_rate``)."""

    def observe(
        self, rng: np.random.Generator, outcome: np.ndarray, user: np.ndarray | float
    ) -> np.ndarray | None:
        """Which of the sessions with true ``outcome``s (bool array) of users with base
        success rate ``user`` report (None: all; an arrival channel overrides this)."""
        return None

    def reported_rate(self, outcome: bool, user: np.ndarray | float) -> np.ndarray | float:
        """P(a session reports | its outcome) (an informative arrival channel overrides
        this; a constant rate cancels out of every conditional rate)."""
        return 1.0

    @property
    def lag(self) -> int:
        """Sessions between a session and its report (an arrival channel overrides this)."""
        return 0

    def extra_sessions(self, rng: np.random.Generator, reports: np.ndarray) -> np.ndarray:
        """Sessions beyond ``reports`` it takes to collect that many reports."""
        return np.zeros(np.shape(reports))


@dataclass(frozen=True)
class Feedback:
    """Channels applied in order (label channels, then arrival channels). ``Feedback()``
    is a perfect judge: every outcome reported, at once, unflipped."""

    channels: tuple[FeedbackChannel, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        chans = tuple(self.channels)
        for i, c in enumerate(chans):
            if not isinstance(c, FeedbackChannel):
                raise ParameterError(f"channels[{i}]", c, "expected a FeedbackChannel")
        names = [c.name for c in chans]
        if len(set(names)) != len(names):
            raise ParameterError("channels", names, "each channel at most once")
        order = sorted(chans, key=lambda c: (c.stage, c.name))
        object.__setattr__(self, "channels", tuple(order))

    @classmethod
    def of(cls, **params: Any) -> Feedback:
        """Channels by their parameters: ``Feedback.of(false_negative=0.1, missing=0.3)``.

        Each keyword is a field of exactly one registered channel; a channel is built when
        any of its fields is given.
        """
        owner = {f: name for name, c in CHANNELS.items() for f in c.__dataclass_fields__}
        chosen: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            if key not in owner:
                raise ParameterError(key, value, f"a field of a channel: {sorted(owner)}")
            chosen.setdefault(owner[key], {})[key] = value
        return cls(tuple(CHANNELS.build(n, **kw) for n, kw in chosen.items()))

    def channel(self, name: str) -> FeedbackChannel | None:
        """The channel named ``name``, if present."""
        return next((c for c in self.channels if c.name == name), None)

    @property
    def noiseless(self) -> bool:
        """True when the signal is the outcome, always and at once."""
        return not any(c.active for c in self.channels)

    @property
    def relabels(self) -> bool:
        """True when some label channel may change what is reported."""
        return any(c.active and c.stage == LABEL for c in self.channels)

    @property
    def delay(self) -> int:
        """Sessions between a session and its report."""
        return sum(c.lag for c in self.channels)

    @property
    def informative(self) -> bool:
        """True when whether a session reports depends on its outcome."""
        return any(c.active and c.informative for c in self.channels)

    def positive_rate(self, q: np.ndarray | float, user: np.ndarray | float = 0.5) -> np.ndarray:
        """P(reported positive | reported) at true success rate ``q``. With an informative
        arrival channel, Bayes over the outcome: ``(q r1 a + (1 - q) r0 b) / (q r1 +
        (1 - q) r0)``, ``r1``/``r0`` the report rates after a success/failure and ``a``/
        ``b`` the label channels' positive rates at ``q = 1``/``0``."""
        rate = np.asarray(q, dtype=float)
        if self.informative:
            a, b = self._label_rate(1.0, user), self._label_rate(0.0, user)
            r1, r0 = self._report_rates(user)
            w1, w0 = rate * r1, (1.0 - rate) * r0
            return (w1 * a + w0 * b) / (w1 + w0)
        return self._label_rate(rate, user)

    def report_weight(self, q: np.ndarray | float, user: np.ndarray | float = 0.5) -> np.ndarray:
        """P(a session reports) at true success rate ``q``, ``q r1 + (1 - q) r0``, up to a
        factor that does not depend on the outcome (a channel whose reports do not depend
        on it, ``MissingRatings``, counts as 1): the weight of a session among the rated
        ones, so ``sum(w_i g_i) / sum(w_i)`` is the expected rated success share of
        sessions at rates ``q_i`` (``g`` = ``positive_rate``)."""
        rate = np.asarray(q, dtype=float)
        r1, r0 = self._report_rates(user)
        return rate * r1 + (1.0 - rate) * r0

    def _report_rates(self, user: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """``(r1, r0)``: P(a report | success), P(a report | failure) over the arrival
        channels (each channel's ``reported_rate``, multiplied)."""
        arrival = [c for c in self.channels if c.active and c.stage == ARRIVAL]
        r1 = np.prod([c.reported_rate(True, user) for c in arrival], axis=0)
        r0 = np.prod([c.reported_rate(False, user) for c in arrival], axis=0)
        return np.asarray(r1, dtype=float), np.asarray(r0, dtype=float)

    def _label_rate(self, q: np.ndarray | float, user: np.ndarray | float) -> np.ndarray:
        """P(reported positive) at true rate ``q`` through the label channels."""
        rate = np.asarray(q, dtype=float)
        for c in self.channels:
            if c.stage == LABEL and c.active:
                rate = c.positive_rate(rate, user)
        return rate

    def relabel(
        self, rng: np.random.Generator, outcome: np.ndarray, user: np.ndarray | float
    ) -> np.ndarray:
        """The reported labels of true ``outcome``s of users with base success rate ``user``
        (the label channels only: what a report says, whether or when it arrives aside)."""
        label = np.asarray(outcome, dtype=bool)
        for c in self.channels:
            if c.active and c.stage == LABEL:
                label = c.relabel(rng, label, user)
        return label

    def transmit(
        self, rng: np.random.Generator, outcome: np.ndarray, user: np.ndarray | float
    ) -> Signals:
        """Labels, then which sessions report, for a batch of true ``outcome``s of users
        with base success rate ``user`` (an array broadcasting against it, or a number)."""
        outcome = np.asarray(outcome, dtype=bool)
        label = self.relabel(rng, outcome, user)
        observed = None
        for c in self.channels:
            if c.active and c.stage == ARRIVAL:
                mask = c.observe(rng, outcome, user)
                if mask is not None:
                    observed = mask if observed is None else observed & mask
        return Signals(label=label, observed=observed, delay=self.delay)

    def sessions_to_collect(self, rng: np.random.Generator, reports: np.ndarray) -> np.ndarray:
        """Sessions until ``reports`` reports have arrived (each array entry on its own);
        not defined when reporting depends on the outcome (``informative``)."""
        if self.informative:
            raise ParameterError(
                "feedback",
                self,
                "channels whose reports do not depend on the outcome here: "
                "the sessions behind k reports then depend on what the sessions were",
            )
        reports = np.asarray(reports)
        sessions = reports.astype(float)
        for c in self.channels:
            if c.active and c.stage == ARRIVAL:
                sessions = sessions + c.extra_sessions(rng, reports)
        return sessions + self.delay

    def arrived_by(self, signals: Signals, horizon: int) -> np.ndarray:
        """Which sessions' reports (last axis = session) arrive within ``horizon`` sessions."""
        arrived = signals.reported().copy()
        if self.delay:
            arrived[..., max(horizon - self.delay, 0) :] = False  # due after the horizon
        return arrived


class ArrivalLine:
    """Reports in flight: push what session ``t`` produced, get back what arrives now
    (what session ``t - delay`` produced), or None while nothing is due."""

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
