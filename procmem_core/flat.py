"""The flat procedural-memory design (seed: notebook-procedural-memory.txt).

A procedure carries a confidence. After a session in which it was applied, the
confidence moves by ``+reward`` on a good session and ``-penalty`` on a bad one, clamped
to ``[floor, ceiling]``. Only procedures at or above ``threshold`` enter the system
prompt, at most ``limit`` of them, highest confidence first.

Every rule here is one function that takes a scalar or a numpy array alike, so the object
API and the vectorized simulators call the same code ("One rule, two speeds").

Exactness: ``0.6 + 5 * 0.08 - 3 * 0.15`` is 0.55 in arithmetic but 0.5499999999999999 in
binary floats. Confidences are therefore snapped to a decimal grid of
``GRID_DECIMALS`` places after every update (``snap``), and threshold comparisons allow
``THRESHOLD_TOLERANCE`` (far below any grid step the rule can produce), so a procedure
landing exactly on the threshold is shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.errors import ParameterError, check_int, check_probability

GRID_DECIMALS = 12
THRESHOLD_TOLERANCE = 1e-9

BASE_PROMPT = (
    "You are FinCoach, a personal financial advisor assistant for users in India. "
    "Never recommend specific stocks. Answer in at most 120 words."
)
"""The seed's FinCoach base prompt."""

PROCEDURES_HEADING = "LEARNED OPERATIONAL PROCEDURES (apply these in relevant situations):"

Conf = TypeVar("Conf", float, np.ndarray)


def snap(confidence: Conf) -> Conf:
    """Round a confidence (scalar or array) onto the exact decimal grid."""
    if isinstance(confidence, np.ndarray):
        return np.round(confidence, GRID_DECIMALS)
    return round(float(confidence), GRID_DECIMALS)


def passes_threshold(confidence: ArrayLike, threshold: float) -> np.ndarray | bool:
    """``confidence >= threshold`` up to ``THRESHOLD_TOLERANCE`` (scalar or array)."""
    out = np.asarray(confidence) >= threshold - THRESHOLD_TOLERANCE
    return bool(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class ConfidenceRule:
    """The seed's confidence update: ``c <- clamp(c + reward)`` or ``clamp(c - penalty)``.

    Expected drift per applied session at success probability p is
    ``p * reward - (1 - p) * penalty``; it is positive only above ``break_even``
    (``penalty / (reward + penalty)``, 15/23 = 0.652 for the seed's numbers).
    """

    initial: float = 0.6
    reward: float = 0.08
    penalty: float = 0.15
    floor: float = 0.0
    ceiling: float = 1.0

    def __post_init__(self) -> None:
        for name in ("initial", "reward", "penalty", "floor", "ceiling"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float | np.floating):
                raise ParameterError(name, value, "expected a number")
            if value != value:
                raise ParameterError(name, value, "expected a number, not NaN")
        if not 0.0 <= self.floor < self.ceiling <= 1.0:
            raise ParameterError(
                "floor", (self.floor, self.ceiling), "need 0 <= floor < ceiling <= 1"
            )
        if not self.floor <= self.initial <= self.ceiling:
            raise ParameterError(
                "initial",
                self.initial,
                f"expected floor <= initial <= ceiling ([{self.floor}, {self.ceiling}])",
            )
        if self.reward < 0:
            raise ParameterError("reward", self.reward, "expected reward >= 0")
        if self.penalty < 0:
            raise ParameterError("penalty", self.penalty, "expected penalty >= 0")

    def update(self, confidence: Conf, positive: bool | np.ndarray) -> Conf:
        """Apply one outcome to a confidence (a float and a bool, or arrays that broadcast).

        Returns a float for scalar input and an array otherwise, snapped to the grid.
        """
        if isinstance(confidence, np.ndarray) or isinstance(positive, np.ndarray):
            # one fresh (broadcast) array, then in place: half the time of where + clip +
            # round with their copies
            moved = np.asarray(np.add(np.where(positive, self.reward, -self.penalty), confidence))
            np.minimum(moved, self.ceiling, out=moved)
            np.maximum(moved, self.floor, out=moved)
            return np.round(moved, GRID_DECIMALS, out=moved)
        step = self.reward if positive else -self.penalty
        return snap(min(self.ceiling, max(self.floor, float(confidence) + step)))

    @property
    def break_even(self) -> float:
        """Success rate at which the expected drift is zero: penalty / (reward + penalty)."""
        total = self.reward + self.penalty
        return self.penalty / total if total > 0 else float("nan")

    def drift(self, p: ArrayLike) -> np.ndarray | float:
        """Expected change per applied session: ``p * reward - (1 - p) * penalty``."""
        p = np.asarray(p, dtype=float)
        out = p * self.reward - (1.0 - p) * self.penalty
        return float(out) if out.ndim == 0 else out


DEFAULT_RULE = ConfidenceRule()


@dataclass
class Procedure:
    """A flat procedure: a directive for the agent with a confidence that follows outcomes."""

    title: str
    trigger: str  # when the procedure applies
    description: str  # the instruction, written to the agent
    confidence: float = 0.6
    successes: int = 0
    failures: int = 0
    metadata: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.title, str) or not self.title.strip():
            raise ParameterError("title", self.title, "expected a non-empty string")
        self.confidence = check_probability("confidence", self.confidence)
        self.successes = check_int("successes", self.successes)
        self.failures = check_int("failures", self.failures)

    def record_outcome(self, positive: bool, rule: ConfidenceRule = DEFAULT_RULE) -> None:
        """Record one session in which the procedure was applied (the seed's semantics)."""
        if positive:
            self.successes += 1
        else:
            self.failures += 1
        self.confidence = rule.update(self.confidence, bool(positive))


def _check_filter(threshold: float, limit: int) -> tuple[float, int]:
    return check_probability("threshold", threshold), check_int("limit", limit)


def shown_mask(confidences: ArrayLike, threshold: float = 0.55, limit: int = 6) -> np.ndarray:
    """Which procedures enter the prompt (last axis = procedures).

    A procedure is shown when its confidence passes ``threshold`` and it is among the
    ``limit`` highest such confidences; ties keep input order (a stable sort), exactly as
    ``build_system_prompt`` selects.
    """
    threshold, limit = _check_filter(threshold, limit)
    conf = np.asarray(confidences, dtype=float)
    active = np.asarray(passes_threshold(conf, threshold))
    n = conf.shape[-1] if conf.ndim else 1
    if limit >= n:
        return active
    key = np.where(active, -conf, np.inf)
    order = np.argsort(key, axis=-1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.broadcast_to(np.arange(n), order.shape), axis=-1)
    return active & (ranks < limit)


def prompt_order(
    procedures: Sequence[Procedure], threshold: float = 0.55, limit: int = 6
) -> list[Procedure]:
    """The procedures ``build_system_prompt`` shows, in the order it shows them."""
    for i, p in enumerate(procedures):
        check_probability(f"procedures[{i}].confidence", p.confidence)
    if not procedures:
        _check_filter(threshold, limit)
        return []
    conf = np.array([p.confidence for p in procedures], dtype=float)
    mask = shown_mask(conf, threshold, limit)
    chosen = [i for i in np.argsort(-conf, kind="stable") if mask[i]]
    return [procedures[i] for i in chosen]


def build_system_prompt(
    procedures: Sequence[Procedure],
    threshold: float = 0.55,
    limit: int = 6,
    base_prompt: str = BASE_PROMPT,
) -> str:
    """The seed's prompt: the base prompt, then the shown procedures under a heading.

    Returns ``base_prompt`` alone when no procedure passes the threshold.
    """
    active = prompt_order(procedures, threshold, limit)
    if not active:
        return base_prompt
    lines = [
        f"{i}. {p.title}\n   Trigger: {p.trigger}\n   {p.description}"
        for i, p in enumerate(active, 1)
    ]
    return base_prompt + "\n\n" + PROCEDURES_HEADING + "\n" + "\n".join(lines)
