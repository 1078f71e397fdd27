"""``SPRTGate``: Wald's sequential probability ratio test on a revision (the seed's default).

H0: the revision succeeds like the prior, with p0 (keep it); H1: with
``p1 = p0 - min_drop`` (revert it). The LLR and the per-run rule are the pure functions of
``gates.llr``; docs/statistics.md, "The SPRT revision gate".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.errors import check_choice
from procmem_core.gates import llr
from procmem_core.gates.base import OperatingPoint
from procmem_core.gates.defaults import ALPHA, BETA, MAX_RUNS, MIN_DROP, MIN_RUNS
from procmem_core.gates.lattice_gate import LatticeGate
from procmem_core.gates.targets import check_fields
from procmem_core.gates.verdicts import Evidence, RevisionStats, check_counts
from procmem_core.gates.wald import wald_point

CAP_WORDS = {
    "llr": "follow the LLR at the cap",
    "accept": "accept at the cap",
    "revert": "revert at the cap",
}


@dataclass(frozen=True)
class SPRTGate(LatticeGate):
    """Wald's SPRT of H0 ``p = p0`` (keep) against H1 ``p = p0 - min_drop`` (revert).

    LLR after n runs with s successes: ``s ln(p1/p0) + (n-s) ln((1-p1)/(1-p0))``; revert
    when it reaches ``ln((1-beta)/alpha)``, accept when it falls to
    ``ln(beta/(1-alpha))`` (Wald 1945), from run ``min_runs`` on; at ``max_runs`` an
    undecided test follows ``at_cap``. p0, unless given, is estimated from the prior's
    ledger: ``prior="plugin"``: ``(s+1)/(n+2)``; ``"lower_bound"``: the one-sided
    Clopper-Pearson lower bound at level ``alpha``; ``"ml"``: ``s/n`` (``llr.prior_estimate``).
    """

    min_drop: float = MIN_DROP
    alpha: float = ALPHA
    beta: float = BETA
    max_runs: int = MAX_RUNS
    min_runs: int = MIN_RUNS
    at_cap: str = "llr"
    prior: str = "plugin"
    name: ClassVar[str] = "sprt"
    label: ClassVar[str] = "SPRT"
    wald_nominal: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_fields(self)
        check_choice("at_cap", self.at_cap, llr.AT_CAP_RULES)
        check_choice("prior", self.prior, llr.PRIOR_ESTIMATES)

    def describe(self) -> str:
        return f"SPRT, {CAP_WORDS[self.at_cap]}"

    @property
    def boundaries(self) -> tuple[float, float]:
        """``(ln A, ln B)``."""
        return llr.sprt_boundaries(self.alpha, self.beta)

    def estimate_p0(self, successes: ArrayLike, runs: ArrayLike) -> np.ndarray:
        """p0 from the prior's counts (scalars or arrays), by the ``prior`` method."""
        check_counts(successes, runs)
        return llr.prior_estimate(self.prior, successes, runs, self.alpha)

    def prior_source(self, prior: RevisionStats) -> str:
        counts = f"prior {prior.successes}/{prior.runs}"
        if self.prior == "plugin":
            return f"plugin estimate from {counts}"
        if self.prior == "ml":
            return f"maximum-likelihood estimate from {counts}"
        return f"Clopper-Pearson {1 - self.alpha:g} lower bound from {counts}"

    def rule(self, successes: ArrayLike, runs: ArrayLike, p0: ArrayLike) -> np.ndarray:
        """Verdict codes at ``(runs, successes)``: the one rule every path calls."""
        return llr.sprt_verdict(
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
        ln_s, ln_f = llr.sprt_increments(p0, self.min_drop)
        return llr.sprt_llr(successes, runs, ln_s, ln_f)

    def crossed(
        self, successes: ArrayLike, runs: ArrayLike, p0: ArrayLike
    ) -> tuple[np.ndarray, np.ndarray]:
        return self.crossed_at(self.statistic(successes, runs, p0))

    def crossed_at(self, statistic: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ln_a, ln_b = self.boundaries
        return llr.sprt_crossed(statistic, ln_a, ln_b)

    def explain(self, reason_code: str, evidence: Evidence) -> str:
        successes, runs = evidence.successes, evidence.runs
        p0, source = evidence.p0, evidence.source
        ln_a, ln_b = self.boundaries
        value = float(self.statistic(successes, runs, p0))
        p0c, p1 = (float(x) for x in llr.sprt_hypotheses(p0, self.min_drop))
        head = f"p0={p0c:.4g} ({source}), p1={p1:.4g}; LLR={value:.4f} after {successes}/{runs}"
        why = {  # each sentence formatted only when it is the one asked for
            "too_few_runs": lambda: f"fewer than min_runs={self.min_runs} runs",
            "revert_boundary": lambda: f"LLR >= ln A={ln_a:.4f}: the revision is worse by min_drop",
            "accept_boundary": lambda: f"LLR <= ln B={ln_b:.4f}: evidence of no drop of min_drop",
            "at_cap": lambda: f"undecided at max_runs={self.max_runs}; at_cap={self.at_cap!r}",
            "undecided": lambda: f"ln B={ln_b:.4f} < LLR < ln A={ln_a:.4f}",
        }[reason_code]()
        note = llr.degenerate_p0_note(p0, self.min_drop)
        return f"{why}; {head}" + (f"; {note}" if note else "")

    def wald_operating_point(self, p: float | np.ndarray, p0: float) -> OperatingPoint:
        """Wald's untruncated approximations at this gate's boundaries (``gates.wald``)."""
        return wald_point(p, p0, self.min_drop, self.alpha, self.beta)

    def approximate_operating_point(self, p: float | np.ndarray, p0: float) -> OperatingPoint:
        return self.wald_operating_point(p, p0)
