"""The flat design's learning rules (seed: notebook-procedural-memory.txt).

A procedure carries a confidence. After a session in which it was applied, a rule moves
the confidence by the session's outcome. ``FlatRule`` is the base every such rule
implements: ``start`` (the confidence of a procedure never applied), ``update`` and
``break_even_rate`` (the success rate at which the rule is indifferent). ``StepRule`` is
the family that moves by a fixed step up or down, clamped to ``[floor, ceiling]``;
``ConfidenceRule`` is the seed's (``+reward`` on a good session, ``-penalty`` on a bad
one). The alternatives live in their own modules (``flat.baseline``,
``flat.posterior``) and join ``FLAT_RULES`` by defining a ``name``.

What a rule reads besides the outcome is declared, not guessed: ``needs_baseline`` (the
no-procedure success rate, estimated from withheld sessions: ``baseline_estimate``) and
``needs_counts`` (the procedure's own successes and failures in applied sessions, after
the session being recorded). Callers that cannot supply them get a ``ParameterError``.

Every rule is one function that takes a scalar or a numpy array alike, so the object API
(``Procedure.record_outcome``) and the vectorized simulators call the same code ("One
rule, two speeds"); the exact analyses (``flat.fate``, ``flat.chain``, ``flat.design``)
walk the same ``update``.

Arithmetic (docs/flat.md, "Float or grid"): the seed's code adds and compares raw binary
floats, so after five successes and three failures from 0.6 (in the seed's order) its
confidence is 0.5499999999999997, below 0.55, and the procedure is hidden. A rule's
``arithmetic`` says which reading it computes: ``"float"`` (the seed's code, bit for bit:
``min(1.0, c + 0.08)``, ``max(0.0, c - 0.15)``, no rounding; the default of the seed's
rule) or ``"grid"`` (the confidence is snapped to ``GRID_DECIMALS`` decimals after every
update, ``snap``, so that walk sits on 0.55 and is shown). The threshold test is the
seed's ``confidence >= threshold`` in both (``passes_threshold``); on the grid a snapped
confidence equal in decimals to a threshold of at most ``GRID_DECIMALS`` decimals is the
same double, so it passes. The baseline and posterior rules (procmem's, not the seed's)
always use the grid.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.errors import ParameterError, check_choice, check_number
from procmem_core.registry import Registry

GRID_DECIMALS = 12
ARITHMETICS = ("float", "grid")
"""How a rule computes: the seed's raw binary floats, or snapped to the decimal grid."""

Conf = TypeVar("Conf", float, np.ndarray)


def snap(confidence: Conf) -> Conf:
    """Round a confidence (scalar or array) onto the exact decimal grid."""
    if isinstance(confidence, np.ndarray):
        return np.round(confidence, GRID_DECIMALS)
    return round(float(confidence), GRID_DECIMALS)


def passes_threshold(confidence: ArrayLike, threshold: float) -> np.ndarray | bool:
    """``confidence >= threshold`` (scalar or array): the seed's comparison, raw."""
    out = np.asarray(confidence) >= threshold
    return bool(out) if out.ndim == 0 else out


FLAT_RULES: Registry[FlatRule] = Registry("rule", "procmem_core.flat")
"""Every flat learning rule by name (``confidence``, the seed's; ``baseline``; ``posterior``)."""


DESIGN_THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(1, 20))
"""Thresholds the exact design search tries for the rules whose confidence is a score
(0.05 to 0.95 by 0.05)."""
DESIGN_INITIALS = tuple(round(0.01 * i, 2) for i in range(1, 101))
"""Initial confidences it tries (0.01 to 1 by 0.01; those below the threshold are
never shown, so they are left out)."""


@dataclass(frozen=True)
class DesignSpace:
    """One family member the design search evaluates: ``rule`` (its ``initial`` is
    replaced by each of ``initials``), at each of ``thresholds``."""

    rule: FlatRule
    thresholds: tuple[float, ...]
    initials: tuple[float, ...]


def _is_array(*values: object) -> bool:
    return any(isinstance(v, np.ndarray) for v in values)


def _step(confidence, positive, up, down, floor, ceiling, arithmetic: str) -> np.ndarray:
    """A step rule's update on arrays (``StepRule.update``, ``StepMoves``):
    ``clamp(c + up)`` or ``clamp(c - down)``, ``snap``ped on the grid. One fresh
    (broadcast) array, then in place: half the time of where + clip + round with their
    copies."""
    moved = np.asarray(np.add(np.where(positive, up, -down), confidence))
    np.minimum(moved, ceiling, out=moved)
    np.maximum(moved, floor, out=moved)
    if arithmetic == "grid":
        np.round(moved, GRID_DECIMALS, out=moved)
    return moved


class FlatRule(ABC):
    """What every flat learning rule provides (see the module docstring).

    ``update(confidence, positive, successes=, failures=, baseline=)`` works on floats
    and bools, or on arrays that broadcast, and returns values ``settle``d by the rule's
    ``arithmetic`` (raw floats, or on the ``snap`` grid). A subclass with a ``name`` joins
    ``FLAT_RULES`` by itself.
    """

    name: ClassVar[str]
    needs_baseline: ClassVar[bool] = False
    needs_counts: ClassVar[bool] = False
    initial: float
    arithmetic: str = "grid"

    def settle(self, confidence: Conf) -> Conf:
        """A computed confidence as the rule keeps it: ``snap``ped on the grid, the raw
        float (a Python float for scalar input) in float arithmetic."""
        if self.arithmetic == "grid":
            return snap(confidence)
        return confidence if isinstance(confidence, np.ndarray) else float(confidence)

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            FLAT_RULES.add(cls)

    def start(self, baseline: ArrayLike | None = None) -> float | np.ndarray:
        """The confidence of a procedure never applied (an array for an array baseline)."""
        c = self.settle(self.initial)
        return c if baseline is None or np.ndim(baseline) == 0 else np.full(np.shape(baseline), c)

    @abstractmethod
    def update(
        self,
        confidence: Conf,
        positive: bool | np.ndarray,
        *,
        successes: ArrayLike | None = None,
        failures: ArrayLike | None = None,
        baseline: ArrayLike | None = None,
    ) -> Conf:
        """The confidence after one applied session with outcome ``positive``."""

    @abstractmethod
    def break_even_rate(self, baseline: float | None = None) -> float:
        """The success rate at which the rule is indifferent, on a task whose success rate
        without the procedure is ``baseline`` (NaN when it depends on an unknown baseline)."""

    @abstractmethod
    def describe(self) -> str:
        """A short label a report can print (``confidence +0.08/-0.15 from 0.6``)."""

    @property
    def break_even(self) -> float:
        """``break_even_rate()`` without a baseline: the seed rule's 15/23, NaN for the
        rules whose break-even is the (task-dependent) baseline."""
        return self.break_even_rate(None)

    @classmethod
    def design_grid(cls, base: float) -> list[DesignSpace]:
        """The members of this family the exact design search tries, for a task whose
        success rate without the procedure is ``base`` (a family without a grid says so)."""
        raise ParameterError("family", cls.name, "a rule family with a design grid")

    def with_initial(self, initial: float) -> FlatRule:
        """The same rule started at ``initial`` (for the rules where it is a parameter)."""
        return dataclasses.replace(self, initial=initial)

    def baseline_estimate(self, successes: ArrayLike, sessions: ArrayLike) -> np.ndarray | float:
        """The no-procedure success rate from ``successes`` of ``sessions`` withheld
        sessions (rules that need a baseline override this)."""
        raise ParameterError(
            "rule", self.name, "a rule that reads a baseline (needs_baseline) estimates one"
        )

    def check_evidence(self, successes: object, failures: object, baseline: object) -> None:
        """A ``ParameterError`` naming what this rule reads and was not given."""
        if self.needs_baseline and baseline is None:
            raise ParameterError(
                "baseline",
                None,
                f"the {self.name} rule needs the no-procedure success rate "
                "(estimate it from withheld sessions: rule.baseline_estimate)",
            )
        if self.needs_counts and (successes is None or failures is None):
            raise ParameterError(
                "successes" if successes is None else "failures",
                None,
                f"the {self.name} rule needs the procedure's successes and failures",
            )


class StepRule(FlatRule):
    """A rule that moves the confidence up by ``up`` on a good session and down by ``down``
    on a bad one (``steps(baseline)``), clamped to ``[floor, ceiling]``.

    Expected move per applied session at success probability p (away from the clamps):
    ``p * up - (1 - p) * down``; it is zero at ``down / (up + down)``.
    """

    floor: float
    ceiling: float

    @abstractmethod
    def steps(self, baseline: ArrayLike | None = None) -> tuple:
        """``(up, down)``: the move on a good and on a bad session (both >= 0)."""

    def check_bounds(self) -> None:
        """``0 <= floor < ceiling <= 1``, ``floor <= initial <= ceiling`` and a known
        ``arithmetic``."""
        check_choice("arithmetic", self.arithmetic, ARITHMETICS)
        for name in ("initial", "floor", "ceiling"):
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

    def update(
        self,
        confidence: Conf,
        positive: bool | np.ndarray,
        *,
        successes: ArrayLike | None = None,
        failures: ArrayLike | None = None,
        baseline: ArrayLike | None = None,
    ) -> Conf:
        """``clamp(c + up)`` or ``clamp(c - down)``, ``settle``d; a float for scalar input.

        In float arithmetic this is the seed's ``min(1.0, c + 0.08)`` and ``max(0.0, c -
        0.15)`` bit for bit (``c + (-d)`` is ``c - d`` in IEEE arithmetic, and the other
        clamp never binds), on scalars and arrays alike."""
        self.check_evidence(successes, failures, baseline)
        up, down = self.steps(baseline)
        if _is_array(confidence, positive, up):
            return _step(confidence, positive, up, down, self.floor, self.ceiling, self.arithmetic)
        step = up if positive else -down
        return self.settle(min(self.ceiling, max(self.floor, float(confidence) + step)))

    def drift(self, p: ArrayLike, baseline: float | None = None) -> np.ndarray | float:
        """Expected change per applied session: ``p * up - (1 - p) * down``."""
        up, down = self.steps(baseline)
        p = np.asarray(p, dtype=float)
        out = p * up - (1.0 - p) * down
        return float(out) if out.ndim == 0 else out

    def break_even_rate(self, baseline: float | None = None) -> float:
        """The success rate at which the expected drift is zero: ``down / (up + down)``."""
        up, down = self.steps(baseline)
        total = up + down
        return float(down / total) if total > 0 else float("nan")


class StepMoves:
    """The updates of many step rules at once (the design's confidence spaces):
    ``moves(confidence, member, positive)`` is ``rules[member].update(confidence,
    positive, baseline=baseline)`` element by element, the same arithmetic (``_step``)
    with each rule's own ``steps``, ``floor`` and ``ceiling``. The rules share one
    ``arithmetic``."""

    def __init__(self, rules: Sequence[StepRule], baseline: float | None = None) -> None:
        kinds = {r.arithmetic for r in rules}
        if len(kinds) > 1:
            raise ParameterError("arithmetic", sorted(kinds), "one arithmetic for all rules")
        for r in rules:
            r.check_evidence(0, 0, baseline)
        steps = [r.steps(baseline) for r in rules]
        self.up = np.array([float(s[0]) for s in steps])
        self.down = np.array([float(s[1]) for s in steps])
        self.floor = np.array([float(r.floor) for r in rules])
        self.ceiling = np.array([float(r.ceiling) for r in rules])
        self.arithmetic = kinds.pop() if kinds else "grid"

    def __call__(self, confidence: np.ndarray, member: np.ndarray, positive: bool) -> np.ndarray:
        at = np.asarray(member, dtype=np.int64)
        step = self.up[at] if positive else self.down[at]
        up, down = (step, 0.0) if positive else (0.0, step)
        return _step(
            np.asarray(confidence, dtype=float), positive, up, down, self.floor[at],
            self.ceiling[at], self.arithmetic,
        )  # fmt: skip


@dataclass(frozen=True)
class ConfidenceRule(StepRule):
    """The seed's confidence update: ``c <- clamp(c + reward)`` or ``clamp(c - penalty)``,
    in the seed's raw float arithmetic by default (``arithmetic="grid"``: the decimal
    reading, snapped after every update; module docstring).

    Expected drift per applied session at success probability p is
    ``p * reward - (1 - p) * penalty``; it is positive only above ``break_even``
    (``penalty / (reward + penalty)``, 15/23 = 0.652 for the seed's numbers), whatever
    the agent achieves without the procedure.
    """

    initial: float = 0.6
    reward: float = 0.08
    penalty: float = 0.15
    floor: float = 0.0
    ceiling: float = 1.0
    arithmetic: str = "float"
    name: ClassVar[str] = "confidence"

    def __post_init__(self) -> None:
        self.check_bounds()
        for name in ("reward", "penalty"):
            value = check_number(name, getattr(self, name))
            if not 0.0 <= value <= 1.0:
                raise ParameterError(name, value, f"expected 0 <= {name} <= 1")

    def steps(self, baseline: ArrayLike | None = None) -> tuple[float, float]:
        return self.reward, self.penalty

    def describe(self) -> str:
        grid = ", decimal grid" if self.arithmetic == "grid" else ""
        return f"confidence +{self.reward:g}/-{self.penalty:g} from {self.initial:g}{grid}"

    @classmethod
    def design_grid(cls, base: float) -> list[DesignSpace]:
        """Reward 0.01-0.30 by 0.01 x penalty 0.01-0.40 by 0.01, every design threshold
        and initial confidence (the walk does not depend on ``base``), in float arithmetic."""
        return [
            DesignSpace(cls(1.0, r / 100, q / 100), DESIGN_THRESHOLDS, DESIGN_INITIALS)
            for r in range(1, 31)
            for q in range(1, 41)
        ]


DEFAULT_RULE = ConfidenceRule()
"""The seed's rule: initial 0.6, reward 0.08, penalty 0.15, clamped to [0, 1], in the
seed's float arithmetic."""
