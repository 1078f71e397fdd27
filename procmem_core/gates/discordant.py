"""``DiscordantSPRTGate``: Wald's two-sample SPRT on discordant pairs (concurrent design).

Among discordant pairs the revision is the one that failed with probability
``theta = p0 (1 - p) / (p0 (1 - p) + (1 - p0) p)``: 1/2 under no change, whatever p0,
and ``theta1`` at ``p = p1 = p0 - min_drop`` (Wald 1947, "Sequential analysis", ch. 5:
the SPRT for two binomials through the odds ratio). The test is Wald's SPRT of
``theta = 1/2`` against ``theta1`` on the discordant pairs: with ``W`` worse and ``B``
better pairs, ``LLR = W ln(2 theta1) + B ln(2 (1 - theta1))``; revert at
``ln((1-beta)/alpha)``, accept at ``ln(beta/(1-alpha))``, from pair ``min_runs`` on; at
``max_runs`` pairs (or ``max_discordant`` discordant ones) an undecided test follows
``at_cap`` ("accept" or "llr"). ``theta1`` is set at p0 when p0 is known, else at
``design_p0``: either way the null is a fair coin on the discordant pairs, so the
false-revert rate depends on p0 only through how many pairs are discordant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.errors import check_choice
from procmem_core.gates.defaults import ALPHA, BETA, MAX_RUNS, MIN_DROP, MIN_RUNS
from procmem_core.gates.llr import EPS, LLR_TOLERANCE, sprt_boundaries, sprt_crossed
from procmem_core.gates.paired import PairedGate
from procmem_core.gates.targets import check_fields
from procmem_core.gates.verdicts import ACCEPT_CODE, REVERT_CODE, Evidence

CAP_RULES = ("accept", "llr")


def discordant_theta(p0: ArrayLike, min_drop: float) -> np.ndarray:
    """``theta1 = p0 (1 - p1) / (p0 (1 - p1) + (1 - p0) p1)``, ``p1 = max(p0 - d, EPS)``."""
    p0 = np.clip(np.asarray(p0, dtype=float), 2 * EPS, 1 - EPS)
    p1 = np.maximum(p0 - min_drop, EPS)
    worse, better = p0 * (1 - p1), (1 - p0) * p1
    return worse / (worse + better)


@dataclass(frozen=True)
class DiscordantSPRTGate(PairedGate):
    """Wald's SPRT on discordant pairs (module docstring). Guarantee: the null law of the
    decision is that of a fair coin on the discordant pairs, for every p0."""

    min_drop: float = MIN_DROP
    alpha: float = ALPHA
    beta: float = BETA
    max_runs: int = MAX_RUNS
    min_runs: int = MIN_RUNS
    max_discordant: int | None = None
    at_cap: str = "accept"
    design_p0: float = 0.8
    name: ClassVar[str] = "discordant_sprt"
    label: ClassVar[str] = "discordant-pairs SPRT"

    def __post_init__(self) -> None:
        check_fields(self)
        check_choice("at_cap", self.at_cap, CAP_RULES)
        self.check_pairing()

    def describe(self) -> str:
        return f"discordant-pairs SPRT, {self.at_cap} at the cap"

    def statistic_of(self, worse: ArrayLike, better: ArrayLike, p0: ArrayLike) -> np.ndarray:
        """``LLR = W ln(2 theta1) + B ln(2 (1 - theta1))``."""
        theta = discordant_theta(p0, self.min_drop)
        w, b = np.asarray(worse, dtype=float), np.asarray(better, dtype=float)
        return w * np.log(2 * theta) + b * np.log(2 * (1 - theta))

    def crossed_at(self, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ln_a, ln_b = sprt_boundaries(self.alpha, self.beta)
        return sprt_crossed(value, ln_a, ln_b)

    def at_cap_code(self, value: np.ndarray) -> np.ndarray:
        if self.at_cap == "accept":
            return np.full(np.shape(value), ACCEPT_CODE, dtype=np.int8)
        return np.where(value > LLR_TOLERANCE, REVERT_CODE, ACCEPT_CODE).astype(np.int8)

    def explain(self, reason_code: str, evidence: Evidence) -> str:
        k, w, b = evidence.runs, evidence.worse, evidence.better
        p0, value = evidence.p0, evidence.statistic
        ln_a, ln_b = sprt_boundaries(self.alpha, self.beta)
        theta = float(discordant_theta(p0, self.min_drop))
        head = (
            f"LLR={value:.4f} after {k} pairs ({w} worse, {b} better; "
            f"theta1={theta:.4f} at p0={p0:.4g})"
        )
        why = {
            "too_few_runs": f"fewer than min_runs={self.min_runs} pairs",
            "revert_boundary": f"LLR >= ln A={ln_a:.4f}: the revision fails more often",
            "accept_boundary": f"LLR <= ln B={ln_b:.4f}: no drop of min_drop",
            "at_cap": f"undecided at the cap; at_cap={self.at_cap!r}",
            "undecided": f"ln B={ln_b:.4f} < LLR < ln A={ln_a:.4f}",
        }[reason_code]
        return f"{why}; {head}"
