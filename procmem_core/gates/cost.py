"""``CostGate``: revert a revision whose successful runs cost too much more than the prior's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.errors import check_int, check_number
from procmem_core.gates.base import Gate
from procmem_core.gates.lattice import check_outcomes, check_p0_array
from procmem_core.gates.verdicts import (
    CONTINUE,
    CONTINUE_CODE,
    REVERT,
    REVERT_CODE,
    BatchDecision,
    GateDecision,
    RevisionStats,
    check_p0,
    check_stats,
    first_decision,
    raw_rate,
)

COST_TOLERANCE = 1e-12
"""Relative slack on the cost limit: a revision mean within ``1e-12`` of ``mean(prior) *
(1 + tolerance)`` is at the limit, not above it (0.09 * 1.25 is 0.11249999999999999 in
binary floats, so revision costs of 0.1125, exactly 25 % above, read as more; the margin
gate's ``MARGIN_TOLERANCE`` is the same rule for a rate difference)."""


def exceeds(prior_mean: ArrayLike, revision_mean: ArrayLike, tolerance: float) -> ArrayLike:
    """``revision_mean > prior_mean * (1 + tolerance)`` beyond ``COST_TOLERANCE`` (scalars
    or arrays): the cost gate's revert rule, in ``decide`` and ``run_codes`` alike."""
    limit = np.multiply(prior_mean, 1.0 + tolerance)
    out = np.greater(revision_mean, limit + COST_TOLERANCE * np.abs(limit))
    return bool(out) if np.ndim(out) == 0 else out


@dataclass(frozen=True)
class CostGate(Gate):
    """Revert a revision whose successful runs cost more than ``tolerance`` above the prior's.

    Once both revisions have at least ``min_samples`` successful runs with a cost:
    revert if ``mean(revision costs) > mean(prior costs) * (1 + tolerance)`` (beyond a
    relative ``COST_TOLERANCE``: ``exceeds``). It never
    accepts on its own: with no objection (or too few samples) it answers "continue",
    leaving acceptance to the success-rate gate (``veto_only``). The statistic is the
    relative excess ``mean_rev / mean_prior - 1`` (+inf when the prior's mean is 0 and
    the revision's is not, 0 when both are 0). It has no exact operating point: that
    depends on the law of the costs.
    """

    tolerance: float = 0.25
    min_samples: int = 5
    name: ClassVar[str] = "cost"
    label: ClassVar[str] = "cost gate"
    veto_only: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_number("tolerance", self.tolerance, minimum=0.0)
        check_int("min_samples", self.min_samples, minimum=1)

    def describe(self) -> str:
        return f"cost gate, tolerance {self.tolerance:g}"

    def estimate_p0(self, successes: ArrayLike, runs: ArrayLike) -> np.ndarray:
        """The prior's raw rate (unused by the verdict; reported beside it)."""
        return raw_rate(successes, runs)

    @staticmethod
    def excess(prior_mean: ArrayLike, revision_mean: ArrayLike) -> np.ndarray:
        """``m1 / m0 - 1`` (+inf for m0 = 0 < m1, 0 for m0 = m1 = 0)."""
        m0 = np.asarray(prior_mean, dtype=float)
        m1 = np.asarray(revision_mean, dtype=float)
        ratio = np.divide(m1, m0, out=np.zeros(np.broadcast(m0, m1).shape), where=m0 > 0)
        return np.where(m0 > 0, ratio - 1.0, np.where(m1 > 0, np.inf, 0.0))

    def verdict(self, prior: RevisionStats, revision: RevisionStats) -> str:
        """``decide``'s verdict: "continue" while either side has fewer than ``min_samples``
        costed successes, else ``decide``'s (a subclass's own ``decide`` is asked)."""
        few = min(len(prior.success_costs), len(revision.success_costs)) < self.min_samples
        if few and type(self).decide is CostGate.decide:
            return CONTINUE
        return self.decide(prior, revision).verdict

    def decide(
        self, prior: RevisionStats, revision: RevisionStats, p0: float | None = None
    ) -> GateDecision:
        """Verdict from the success costs (``p0`` is unused; kept so gates share one call)."""
        check_stats(prior, revision)
        if p0 is not None:
            check_p0(p0)
        k0, k1 = len(prior.success_costs), len(revision.success_costs)
        if min(k0, k1) < self.min_samples:
            reason = (
                f"too few costed successes (prior {k0}, revision {k1}; "
                f"need {self.min_samples} each)"
            )
            return GateDecision(
                verdict=CONTINUE,
                reason_code="too_few_costs",
                reason=reason,
                runs_used=revision.runs,
                statistic=0.0,
                gate=self.name,
            )
        m0 = float(np.mean(prior.success_costs))
        m1 = float(np.mean(revision.success_costs))
        excess = float(self.excess(m0, m1))
        if exceeds(m0, m1, self.tolerance):
            verdict, code = REVERT, "cost_exceeded"
            why = f"mean success cost {m1:.4g} > prior {m0:.4g} x {1 + self.tolerance:g}"
        else:
            verdict, code = CONTINUE, "cost_within"
            why = f"mean success cost {m1:.4g} within {1 + self.tolerance:g} x prior {m0:.4g}"
        return GateDecision(
            verdict=verdict,
            reason_code=code,
            reason=why,
            runs_used=revision.runs,
            statistic=excess,
            gate=self.name,
        )

    def decide_batch(
        self,
        outcomes: np.ndarray,
        p0: float | np.ndarray,
        costs: np.ndarray | None = None,
        prior_costs: np.ndarray | None = None,
    ) -> BatchDecision:
        """First decision of each row of ``outcomes``, from ``run_codes``."""
        outcomes = check_outcomes(outcomes)
        p0 = check_p0_array(p0, outcomes.shape[0])
        return first_decision(self, self.run_codes(outcomes, p0, costs, prior_costs), outcomes, p0)

    def run_codes(
        self,
        outcomes: np.ndarray,
        p0: float | np.ndarray,
        costs: np.ndarray | None = None,
        prior_costs: np.ndarray | None = None,
    ) -> np.ndarray:
        """The verdict after each run: ``costs`` holds each run's cost (NaN where it failed
        or reported none), ``prior_costs`` each row's prior success costs (NaN-padded)."""
        outcomes = check_outcomes(outcomes)
        rows, t = outcomes.shape
        if costs is None or prior_costs is None:
            return np.zeros((rows, t), dtype=np.int8)
        costs = np.where(outcomes, np.asarray(costs, dtype=float), np.nan)
        has = np.isfinite(costs)
        k1 = np.cumsum(has, axis=1)
        m1 = np.cumsum(np.where(has, costs, 0.0), axis=1) / np.maximum(k1, 1)
        prior = np.asarray(prior_costs, dtype=float).reshape(rows, -1)
        k0 = np.isfinite(prior).sum(axis=1)[:, None]
        m0 = (np.nansum(prior, axis=1)[:, None] / np.maximum(k0, 1)) if prior.size else 0.0
        enough = (k1 >= self.min_samples) & (k0 >= self.min_samples)
        over = enough & exceeds(m0, m1, self.tolerance)
        return np.where(over, REVERT_CODE, CONTINUE_CODE).astype(np.int8)

    def statistic(self, successes: ArrayLike, runs: ArrayLike, p0: ArrayLike) -> np.ndarray:
        """NaN at every ``(runs, successes)``: the verdict reads the costs, not the counts."""
        return np.full(np.broadcast(successes, runs, p0).shape, np.nan)

    def reason_codes(
        self, successes: ArrayLike, runs: ArrayLike, p0: ArrayLike, verdict: ArrayLike
    ) -> np.ndarray:
        verdict = np.asarray(verdict)
        return np.where(verdict == REVERT_CODE, "cost_exceeded", "cost_within").astype(object)
