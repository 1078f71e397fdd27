"""Revision gates: should a revised procedure graph be kept or reverted? (seed: loom).

``ProcedureStore.evolve`` asks a gate after runs of a pending revision land, passing the
prior revision's and the revision's ledger statistics; the gate answers with a
``GateDecision`` (accept, revert, or continue collecting runs). Three gates, as in the
seed:

- ``SPRTGate`` (default): Wald's sequential probability ratio test (``sprt.py``);
- ``MarginGate``: revert a revision whose success rate falls below the prior's by more
  than a fixed margin;
- ``CostGate``: revert a revision whose successful runs cost too much more.

The SPRT and margin gates also decide a whole matrix of outcome sequences at once
(``decide_batch``) with the same per-run rule as ``decide`` (``sequential.py``).
See docs/gates.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Protocol

import numpy as np
from numpy.typing import ArrayLike

from procmem_core import sprt
from procmem_core.errors import ParameterError, check_int, check_probability
from procmem_core.sequential import (
    ACCEPT,
    ACCEPT_CODE,
    CONTINUE,
    REVERT,
    REVERT_CODE,
    VERDICT_CODES,
    VERDICT_NAMES,
    BatchDecision,
    check_outcomes,
    check_p0_array,
    first_decisions,
)

__all__ = [
    "ACCEPT",
    "CONTINUE",
    "REVERT",
    "VERDICT_CODES",
    "VERDICT_NAMES",
    "BatchDecision",
    "CostGate",
    "Gate",
    "GateDecision",
    "MarginGate",
    "RevisionStats",
    "SPRTGate",
    "make_gate",
]

MARGIN_TOLERANCE = 1e-12
"""A rate difference within this of the margin counts as equal (so 0.8 - 0.75 does not
exceed 0.05 through float rounding)."""


@dataclass(frozen=True)
class RevisionStats:
    """Ledger statistics of one revision: runs, successes, and the cost of each
    successful run that reported a cost."""

    runs: int
    successes: int
    success_costs: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        check_int("runs", self.runs)
        check_int("successes", self.successes, maximum=int(self.runs))
        try:
            costs = tuple(float(c) for c in self.success_costs)
        except (TypeError, ValueError):
            raise ParameterError(
                "success_costs", self.success_costs, "a sequence of numbers"
            ) from None
        if any(not math.isfinite(c) or c < 0.0 for c in costs):
            raise ParameterError("success_costs", self.success_costs, "finite numbers >= 0")
        if len(costs) > self.successes:
            raise ParameterError(
                "success_costs",
                f"{len(costs)} costs",
                f"at most one cost per successful run ({self.successes})",
            )
        object.__setattr__(self, "success_costs", costs)

    @property
    def success_rate(self) -> float:
        """``successes / runs`` (NaN with no runs)."""
        return self.successes / self.runs if self.runs else float("nan")


@dataclass(frozen=True)
class GateDecision:
    """One gate's answer: ``verdict`` in {accept, revert, continue} and why."""

    verdict: str
    reason: str
    runs_used: int
    statistic: float
    gate: str

    def __post_init__(self) -> None:
        if self.verdict not in VERDICT_CODES:
            raise ParameterError("verdict", self.verdict, f"one of {VERDICT_NAMES}")


class Gate(Protocol):
    """What ``ProcedureStore.evolve`` needs from a gate."""

    name: ClassVar[str]

    def decide(
        self, prior: RevisionStats, revision: RevisionStats, p0: float | None = None
    ) -> GateDecision: ...


def _check_known_p0(p0: float | None) -> float | None:
    return None if p0 is None else check_probability("p0", p0)


def _decide_batch(
    gate: SPRTGate | MarginGate, outcomes: np.ndarray, p0: float | np.ndarray
) -> BatchDecision:
    """``decide_batch`` of a success-rate gate: its per-run ``rule`` over every row's
    cumulative counts (``first_decisions``), with its ``statistic`` at the decision."""
    outcomes = check_outcomes(outcomes)
    p0 = check_p0_array(p0, outcomes.shape[0])
    verdict, runs_used, successes = first_decisions(
        outcomes, p0, gate.rule, gate.min_runs, gate.max_runs
    )
    return BatchDecision(verdict, runs_used, gate.statistic(successes, runs_used, p0))


@dataclass(frozen=True)
class SPRTGate:
    """Wald's SPRT of H0 ``p = p0`` (keep) against H1 ``p = p0 - min_drop`` (revert).

    LLR after n runs with s successes: ``s ln(p1/p0) + (n-s) ln((1-p1)/(1-p0))``; revert
    when it reaches ``ln((1-beta)/alpha)``, accept when it falls to
    ``ln(beta/(1-alpha))`` (Wald 1945), from run ``min_runs`` on; at ``max_runs`` an
    undecided test follows ``at_cap``. p0, unless given, is estimated from the prior's
    ledger: ``prior="plugin"``: ``(s+1)/(n+2)``; ``"lower_bound"``: the one-sided
    Clopper-Pearson lower bound at level ``alpha``.
    """

    min_drop: float = 0.15
    alpha: float = 0.05
    beta: float = 0.20
    max_runs: int = 50
    min_runs: int = 3
    at_cap: str = "llr"
    prior: str = "plugin"
    name: ClassVar[str] = "sprt"

    def __post_init__(self) -> None:
        check_probability("min_drop", self.min_drop, open_low=True, open_high=True)
        check_probability("alpha", self.alpha, open_low=True, open_high=True)
        check_probability("beta", self.beta, open_low=True, open_high=True)
        if self.alpha + self.beta >= 1.0:
            raise ParameterError(
                "alpha", (self.alpha, self.beta), "need alpha + beta < 1 (so ln B < 0 < ln A)"
            )
        check_int("min_runs", self.min_runs, minimum=1)
        check_int("max_runs", self.max_runs, minimum=int(self.min_runs))
        if self.at_cap not in sprt.AT_CAP_RULES:
            raise ParameterError("at_cap", self.at_cap, f"one of {sprt.AT_CAP_RULES}")
        if self.prior not in sprt.PRIOR_ESTIMATES:
            raise ParameterError("prior", self.prior, f"one of {sprt.PRIOR_ESTIMATES}")

    @property
    def boundaries(self) -> tuple[float, float]:
        """``(ln A, ln B)``."""
        return sprt.sprt_boundaries(self.alpha, self.beta)

    def estimate_p0(self, successes: ArrayLike, runs: ArrayLike) -> np.ndarray:
        """p0 from the prior's counts (scalars or arrays), by the ``prior`` method."""
        if self.prior == "plugin":
            return sprt.plugin_p0(successes, runs)
        return sprt.lower_bound_p0(successes, runs, self.alpha)

    def rule(self, successes: ArrayLike, runs: ArrayLike, p0: ArrayLike) -> np.ndarray:
        """Verdict codes at ``(runs, successes)``: the one rule both paths call."""
        return sprt.sprt_verdict(
            successes,
            runs,
            p0,
            min_drop=self.min_drop,
            alpha=self.alpha,
            beta=self.beta,
            min_runs=self.min_runs,
            max_runs=self.max_runs,
            at_cap=self.at_cap,
        )

    def statistic(self, successes: ArrayLike, runs: ArrayLike, p0: ArrayLike) -> np.ndarray:
        """The LLR at ``(runs, successes)``."""
        ln_s, ln_f = sprt.sprt_increments(p0, self.min_drop)
        return sprt.sprt_llr(successes, runs, ln_s, ln_f)

    def decide(
        self, prior: RevisionStats, revision: RevisionStats, p0: float | None = None
    ) -> GateDecision:
        """Verdict after the revision's runs so far (call it after every run).

        Runs past ``max_runs`` are counted as they are (the cap rule then applies).
        """
        given = _check_known_p0(p0)
        if given is None:
            p0_value = float(self.estimate_p0(prior.successes, prior.runs))
            source = (
                f"{self.prior} estimate from prior {prior.successes}/{prior.runs}"
                if self.prior == "plugin"
                else f"Clopper-Pearson {1 - self.alpha:g} lower bound from prior "
                f"{prior.successes}/{prior.runs}"
            )
        else:
            p0_value, source = given, "given"
        n, s = revision.runs, revision.successes
        code = int(self.rule(s, n, p0_value))
        llr = float(self.statistic(s, n, p0_value))
        ln_a, ln_b = self.boundaries
        p0c, p1 = (float(x) for x in sprt.sprt_hypotheses(p0_value, self.min_drop))
        head = f"p0={p0c:.4g} ({source}), p1={p1:.4g}; LLR={llr:.4f} after {s}/{n}"
        if n < self.min_runs:
            why = f"fewer than min_runs={self.min_runs} runs"
        elif llr >= ln_a:
            why = f"LLR >= ln A={ln_a:.4f}: the revision is worse by min_drop"
        elif llr <= ln_b:
            why = f"LLR <= ln B={ln_b:.4f}: evidence of no drop of min_drop"
        elif n >= self.max_runs:
            why = f"undecided at max_runs={self.max_runs}; at_cap={self.at_cap!r}"
        else:
            why = f"ln B={ln_b:.4f} < LLR < ln A={ln_a:.4f}"
        note = sprt.degenerate_p0_note(p0_value, self.min_drop)
        reason = f"{why}; {head}" + (f"; {note}" if note else "")
        return GateDecision(VERDICT_NAMES[code], reason, n, llr, self.name)

    def decide_batch(self, outcomes: np.ndarray, p0: float | np.ndarray) -> BatchDecision:
        """First decision of each row of ``outcomes`` (replications x runs, bool).

        ``p0`` is a scalar or one value per row (e.g. ``estimate_p0`` of simulated prior
        ledgers). Rows undecided within ``min(T, max_runs)`` runs stay "continue";
        runs past ``max_runs`` are ignored. ``statistic`` is the LLR at the decision.
        """
        return _decide_batch(self, outcomes, p0)


@dataclass(frozen=True)
class MarginGate:
    """Revert when the revision's success rate is below the prior's by more than ``margin``.

    From run ``min_runs`` of the revision on, at every run: revert if
    ``p_prior - s/n > margin``; at ``max_runs`` (or later) a revision never reverted is
    accepted; otherwise continue. The prior's rate is its raw ``s/n`` unless ``p0`` is
    given; a prior with no runs has no rate, so the gate only accepts at ``max_runs``.
    The statistic is ``p_prior - s/n``. Seed SDK defaults: margin 0.05, min runs 5.
    """

    margin: float = 0.05
    min_runs: int = 5
    max_runs: int = 50
    name: ClassVar[str] = "margin"

    def __post_init__(self) -> None:
        check_probability("margin", self.margin, open_high=True)
        check_int("min_runs", self.min_runs, minimum=1)
        check_int("max_runs", self.max_runs, minimum=int(self.min_runs))

    def rule(self, successes: ArrayLike, runs: ArrayLike, p0: ArrayLike) -> np.ndarray:
        """Verdict codes at ``(runs, successes)`` against prior rate ``p0`` (NaN: no rate)."""
        runs = np.asarray(runs)
        gap = self.statistic(successes, runs, p0)
        live = runs >= self.min_runs
        revert = live & (gap > self.margin + MARGIN_TOLERANCE)
        accept = (runs >= self.max_runs) & ~revert
        return revert.astype(np.int8) * REVERT_CODE + accept.astype(np.int8) * ACCEPT_CODE

    def statistic(self, successes: ArrayLike, runs: ArrayLike, p0: ArrayLike) -> np.ndarray:
        """``p0 - s/n`` (with no runs, the rate counts as 0)."""
        runs = np.asarray(runs, dtype=float)
        rate = np.asarray(successes, dtype=float) / np.maximum(runs, 1.0)
        return np.asarray(p0, dtype=float) - rate

    def decide(
        self, prior: RevisionStats, revision: RevisionStats, p0: float | None = None
    ) -> GateDecision:
        """Verdict after the revision's runs so far (call it after every run)."""
        given = _check_known_p0(p0)
        if given is not None:
            base, source = given, "given"
        elif prior.runs > 0:
            base, source = prior.successes / prior.runs, f"prior {prior.successes}/{prior.runs}"
        else:
            base, source = float("nan"), "prior has no runs, so no rate to compare"
        n, s = revision.runs, revision.successes
        code = int(self.rule(s, n, base))
        gap = float(self.statistic(s, n, base)) if base == base else 0.0
        if code == REVERT_CODE:
            why = f"success rate {s}/{n} is below the prior's by {gap:.4f} > {self.margin:g}"
        elif code == ACCEPT_CODE:
            why = f"not reverted by max_runs={self.max_runs}"
        elif n < self.min_runs:
            why = f"fewer than min_runs={self.min_runs} runs"
        else:
            why = f"gap {gap:.4f} <= margin {self.margin:g}"
        reason = f"{why}; baseline {base:.4g} ({source})"
        return GateDecision(VERDICT_NAMES[code], reason, n, gap, self.name)

    def decide_batch(self, outcomes: np.ndarray, p0: float | np.ndarray) -> BatchDecision:
        """First decision of each row of ``outcomes`` against prior rate(s) ``p0``.

        Same conventions as ``SPRTGate.decide_batch``; statistic ``p0 - s/n``.
        """
        return _decide_batch(self, outcomes, p0)


@dataclass(frozen=True)
class CostGate:
    """Revert a revision whose successful runs cost more than ``tolerance`` above the prior's.

    Once both revisions have at least ``min_samples`` successful runs with a cost:
    revert if ``mean(revision costs) > mean(prior costs) * (1 + tolerance)``. It never
    accepts on its own: with no objection (or too few samples) it answers "continue",
    leaving acceptance to the success-rate gate. The statistic is the relative excess
    ``mean_rev / mean_prior - 1`` (+inf when the prior's mean is 0 and the revision's
    is not, 0 when both are 0).
    """

    tolerance: float = 0.25
    min_samples: int = 5
    name: ClassVar[str] = "cost"

    def __post_init__(self) -> None:
        if isinstance(self.tolerance, bool) or not isinstance(
            self.tolerance, int | float | np.floating
        ):
            raise ParameterError("tolerance", self.tolerance, "a finite number >= 0")
        if not (math.isfinite(self.tolerance) and self.tolerance >= 0.0):
            raise ParameterError("tolerance", self.tolerance, "a finite number >= 0")
        check_int("min_samples", self.min_samples, minimum=1)

    def decide(
        self, prior: RevisionStats, revision: RevisionStats, p0: float | None = None
    ) -> GateDecision:
        """Verdict from the success costs (``p0`` is unused; kept so gates share one call)."""
        _check_known_p0(p0)
        k0, k1 = len(prior.success_costs), len(revision.success_costs)
        if min(k0, k1) < self.min_samples:
            reason = (
                f"too few costed successes (prior {k0}, revision {k1}; "
                f"need {self.min_samples} each)"
            )
            return GateDecision(CONTINUE, reason, revision.runs, 0.0, self.name)
        m0 = float(np.mean(prior.success_costs))
        m1 = float(np.mean(revision.success_costs))
        if m0 > 0.0:
            excess = m1 / m0 - 1.0
        elif m1 > 0.0:
            excess = math.inf
        else:
            excess = 0.0
        if m1 > m0 * (1.0 + self.tolerance):
            verdict = REVERT
            why = f"mean success cost {m1:.4g} > prior {m0:.4g} x {1 + self.tolerance:g}"
        else:
            verdict = CONTINUE
            why = f"mean success cost {m1:.4g} within {1 + self.tolerance:g} x prior {m0:.4g}"
        return GateDecision(verdict, why, revision.runs, excess, self.name)


GATES: dict[str, type] = {g.name: g for g in (SPRTGate, MarginGate, CostGate)}


def make_gate(name: str, **params: Any) -> SPRTGate | MarginGate | CostGate:
    """Build a gate by name ("sprt", "margin", "cost") with its parameters."""
    if name not in GATES:
        raise ParameterError("gate", name, f"one of {tuple(GATES)}")
    cls = GATES[name]
    allowed = tuple(f.name for f in fields(cls))
    for key in params:
        if key not in allowed:
            raise ParameterError(key, params[key], f"not a parameter of the {name} gate {allowed}")
    return cls(**params)
