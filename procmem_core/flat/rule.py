"""The flat design's learning rules (seed: notebook-procedural-memory.txt).

A procedure carries a confidence. After a session in which it was applied, a rule moves
the confidence by the session's outcome. ``FlatRule`` is the base every such rule
implements (``initial``, ``update``, ``break_even``, ``drift``); ``ConfidenceRule`` is the
seed's: ``+reward`` on a good session and ``-penalty`` on a bad one, clamped to
``[floor, ceiling]``.

Every rule is one function that takes a scalar or a numpy array alike, so the object API
and the vectorized simulators call the same code ("One rule, two speeds"); the exact fate
(``flat.fate``) walks the same ``update``.

Exactness: ``0.6 + 5 * 0.08 - 3 * 0.15`` is 0.55 in arithmetic but 0.5499999999999999 in
binary floats. Confidences are therefore snapped to a decimal grid of
``GRID_DECIMALS`` places after every update (``snap``), and threshold comparisons allow
``THRESHOLD_TOLERANCE`` (far below any grid step the rule can produce), so a procedure
landing exactly on the threshold is shown.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.errors import ParameterError, check_number
from procmem_core.registry import Registry

GRID_DECIMALS = 12
THRESHOLD_TOLERANCE = 1e-9

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


FLAT_RULES: Registry[FlatRule] = Registry("rule", "procmem_core.flat")
"""Every flat learning rule by name (``confidence``, the seed's, ...)."""


class FlatRule(ABC):
    """What every flat learning rule provides: a start, an update, its drift and break-even.

    ``update(confidence, positive)`` works on a float and a bool, or on arrays that
    broadcast, and returns values on the ``snap`` grid. A subclass with a ``name`` joins
    ``FLAT_RULES`` by itself.
    """

    name: ClassVar[str]
    initial: float

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            FLAT_RULES.add(cls)

    @abstractmethod
    def update(self, confidence: Conf, positive: bool | np.ndarray) -> Conf:
        """The confidence after one applied session with outcome ``positive``."""

    @property
    @abstractmethod
    def break_even(self) -> float:
        """The success rate at which the expected move is zero."""

    @abstractmethod
    def drift(self, p: ArrayLike) -> np.ndarray | float:
        """Expected move per applied session at success probability ``p`` (away from clamps)."""


@dataclass(frozen=True)
class ConfidenceRule(FlatRule):
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
    name: ClassVar[str] = "confidence"

    def __post_init__(self) -> None:
        for name in ("initial", "reward", "penalty", "floor", "ceiling"):
            check_number(name, getattr(self, name))
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
"""The seed's rule: initial 0.6, reward 0.08, penalty 0.15, clamped to [0, 1]."""
