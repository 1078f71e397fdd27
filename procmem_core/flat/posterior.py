"""A Beta-posterior rule: hide a procedure once its lift over the baseline is credibly < 0.

The procedure's success rate when applied, p, has a Beta prior centred on the baseline
``b`` (no lift) worth ``prior_sessions`` sessions: ``Beta(w b, w (1 - b))``. After ``s``
successes and ``f`` failures in applied sessions the posterior is
``Beta(w b + s, w (1 - b) + f)``, and the rule's confidence is the posterior
probability that the procedure helps,

    confidence = P(p > b | s, f) = I_{1-b}(w (1 - b) + f, w b + s)

(``I`` the regularized incomplete beta function). With the prompt filter's threshold
``alpha`` a procedure is shown while the one-sided ``1 - alpha`` upper credible bound on
its lift ``p - b`` stays at or above 0 and hidden once it falls below 0
(``confidence < alpha``); one whose lower bound is above 0 (``confidence > 1 - alpha``)
is credibly helpful and ranks first. (Showing a procedure only while its *lower* bound is
above 0 would never show a new one, so it could never gather evidence.) The baseline is
plugged in as known, from withheld sessions (``baseline_estimate``, as
``flat.baseline``); its own uncertainty is not propagated. Checked after every session,
the credible bound is not a frequentist level: the exact fate (``flat_fate``) gives the
real error rates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from procmem_core.errors import ParameterError, check_number
from procmem_core.flat.baseline import check_baseline_prior, prior_weighted_rate
from procmem_core.flat.rule import Conf, DesignSpace, FlatRule, snap


@dataclass(frozen=True)
class PosteriorRule(FlatRule):
    """Confidence = posterior probability of a positive lift (see the module docstring)."""

    prior_sessions: float = 2.0
    baseline_prior: float = 0.6
    baseline_weight: float = 2.0
    name: ClassVar[str] = "posterior"
    needs_baseline: ClassVar[bool] = True
    needs_counts: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_number("prior_sessions", self.prior_sessions, minimum=0.0, open_low=True)
        check_baseline_prior(self.baseline_prior, self.baseline_weight)

    @property
    def initial(self) -> float:
        """The confidence before any session, at the prior baseline."""
        return float(self.start(self.baseline_prior))

    def probability_helps(
        self, successes: ArrayLike, failures: ArrayLike, baseline: ArrayLike
    ) -> np.ndarray:
        """``P(p > b | s, f)`` under the posterior ``Beta(w b + s, w (1 - b) + f)``.

        At ``b = 0`` every p > 0 helps (1); at ``b = 1`` none does (0).
        """
        s = np.asarray(successes, dtype=float)
        f = np.asarray(failures, dtype=float)
        b = np.asarray(baseline, dtype=float)
        if np.any((b < 0) | (b > 1)) or np.any(np.isnan(b)):
            raise ParameterError("baseline", baseline, "expected values in [0, 1]")
        if np.any(s < 0) or np.any(f < 0):
            raise ParameterError("successes", (successes, failures), "counts >= 0")
        inside = np.clip(b, 1e-12, 1 - 1e-12)
        w = self.prior_sessions
        p = special.betainc(w * (1 - inside) + f, w * inside + s, 1 - inside)
        return np.where(b <= 0, 1.0, np.where(b >= 1, 0.0, p))

    def start(self, baseline: ArrayLike | None = None) -> float | np.ndarray:
        b = self.baseline_prior if baseline is None else baseline
        out = snap(np.asarray(self.probability_helps(0.0, 0.0, b), dtype=float))
        return float(out) if out.ndim == 0 else out

    def update(
        self,
        confidence: Conf,
        positive: bool | np.ndarray,
        *,
        successes: ArrayLike | None = None,
        failures: ArrayLike | None = None,
        baseline: ArrayLike | None = None,
    ) -> Conf:
        """The posterior probability of a positive lift after the session; ``successes``
        and ``failures`` already count it (the confidence passed in is not read)."""
        self.check_evidence(successes, failures, baseline)
        out = snap(np.asarray(self.probability_helps(successes, failures, baseline)))
        if not any(isinstance(v, np.ndarray) for v in (confidence, successes, failures, baseline)):
            return float(out)
        return np.broadcast_to(out, np.broadcast_shapes(np.shape(confidence), out.shape)).copy()

    def break_even_rate(self, baseline: float | None = None) -> float:
        """In the long run it hides a procedure whose success rate is below the baseline:
        the break-even rate is the baseline (NaN without one)."""
        return float("nan") if baseline is None else float(baseline)

    def baseline_estimate(self, successes: ArrayLike, sessions: ArrayLike) -> np.ndarray | float:
        """``(s + w b0) / (n + w)``, as ``BaselineRule``."""
        return prior_weighted_rate(successes, sessions, self.baseline_prior, self.baseline_weight)

    def describe(self) -> str:
        return f"posterior, prior {self.prior_sessions:g} sessions"

    def with_initial(self, initial: float) -> PosteriorRule:
        """Its start is the prior's probability of a positive lift, not a parameter."""
        raise ParameterError("initial", initial, "the posterior rule's start is not a parameter")

    @classmethod
    def design_grid(cls, base: float) -> list[DesignSpace]:
        """Prior weights 0.5-128 sessions x hiding levels alpha (the threshold) 0.005-0.5,
        at a known baseline ``base``."""
        levels = (0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)
        return [
            DesignSpace(cls(w, baseline_prior=base), levels, ())
            for w in (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)
        ]
