"""A rule that compares against having no procedure: move by outcome minus the baseline.

The seed's rule keeps a procedure whose sessions succeed more often than
``penalty / (reward + penalty)`` (0.652), whatever the agent achieves without it: a
procedure that lifts a 0.50 task to 0.60 is excluded and one that lowers a 0.90 task to
0.80 is kept. ``BaselineRule`` moves the confidence by ``step * (y - b)``, where ``y`` is
the session's outcome (1 or 0) and ``b`` the task's success rate without the procedure,
estimated from withheld sessions (``baseline_estimate``). The expected move is
``step * (p - b)``: "helpful" means "better than nothing", and the break-even success
rate is the baseline itself.

The baseline estimate is the withheld sessions' success rate shrunk towards a prior,
``(s + w * b0) / (n + w)`` with ``b0 = baseline_prior`` and ``w = baseline_weight``
pseudo-sessions: before any withheld session the rule assumes ``b0``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.errors import ParameterError, check_number, check_probability
from procmem_core.flat.rule import DESIGN_INITIALS, DESIGN_THRESHOLDS, DesignSpace, StepRule


def prior_weighted_rate(
    successes: ArrayLike, sessions: ArrayLike, prior: float, weight: float
) -> np.ndarray | float:
    """``(s + weight * prior) / (n + weight)``: a success rate shrunk towards ``prior``
    by ``weight`` pseudo-sessions (Laplace's rule of succession at prior 1/2, weight 2)."""
    out = (np.asarray(successes, dtype=float) + weight * prior) / (
        np.asarray(sessions, dtype=float) + weight
    )
    return float(out) if out.ndim == 0 else out


def check_baseline_prior(prior: float, weight: float) -> None:
    """``baseline_prior`` in (0, 1) and ``baseline_weight`` > 0 (shared by the rules that
    estimate a baseline)."""
    check_probability("baseline_prior", prior, open_low=True, open_high=True)
    check_number("baseline_weight", weight, minimum=0.0, open_low=True)


@dataclass(frozen=True)
class BaselineRule(StepRule):
    """``c <- clamp(c + step * (y - b))``: up ``step * (1 - b)``, down ``step * b``.

    Drift ``step * (p - b)``; break-even success rate ``b`` (the no-procedure rate). The
    caller supplies ``b`` (``update(..., baseline=b)``), an estimate from withheld
    sessions (``baseline_estimate``).
    """

    initial: float = 0.6
    step: float = 0.2
    floor: float = 0.0
    ceiling: float = 1.0
    baseline_prior: float = 0.6
    baseline_weight: float = 2.0
    name: ClassVar[str] = "baseline"
    needs_baseline: ClassVar[bool] = True

    def __post_init__(self) -> None:
        self.check_bounds()
        step = check_number("step", self.step)
        if not 0.0 < step <= 1.0:
            raise ParameterError("step", self.step, "expected 0 < step <= 1")
        check_baseline_prior(self.baseline_prior, self.baseline_weight)

    def steps(self, baseline: ArrayLike | None = None) -> tuple:
        """``(step * (1 - b), step * b)``; ``b`` is required (a number or an array)."""
        if baseline is None:
            self.check_evidence(None, None, None)
        b = np.asarray(baseline, dtype=float)
        if np.any((b < 0) | (b > 1)) or np.any(np.isnan(b)):
            raise ParameterError("baseline", baseline, "expected values in [0, 1]")
        if b.ndim == 0:
            return self.step * (1.0 - float(b)), self.step * float(b)
        return self.step * (1.0 - b), self.step * b

    def break_even_rate(self, baseline: float | None = None) -> float:
        """The baseline itself (NaN without one: it depends on the task)."""
        return float("nan") if baseline is None else float(baseline)

    def baseline_estimate(self, successes: ArrayLike, sessions: ArrayLike) -> np.ndarray | float:
        """``(s + w b0) / (n + w)`` from the withheld sessions' successes and count."""
        return prior_weighted_rate(successes, sessions, self.baseline_prior, self.baseline_weight)

    def describe(self) -> str:
        return f"baseline-relative step {self.step:g} from {self.initial:g}"

    @classmethod
    def design_grid(cls, base: float) -> list[DesignSpace]:
        """Step 0.02-0.60 by 0.02 at a known baseline ``base`` (the prior, with no withheld
        session yet), every design threshold and initial confidence."""
        return [
            DesignSpace(cls(1.0, s / 50, baseline_prior=base), DESIGN_THRESHOLDS, DESIGN_INITIALS)
            for s in range(1, 31)
        ]
