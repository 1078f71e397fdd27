"""``MarginGate``: revert a revision whose success rate falls below the prior's by a margin."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.errors import check_probability
from procmem_core.gates.defaults import MAX_RUNS
from procmem_core.gates.lattice_gate import LatticeGate
from procmem_core.gates.targets import check_fields
from procmem_core.gates.verdicts import (
    ACCEPT_CODE,
    REVERT_CODE,
    Evidence,
    RevisionStats,
    raw_rate,
)

MARGIN_TOLERANCE = 1e-12
"""A rate difference within this of the margin counts as equal (so 0.8 - 0.75 does not
exceed 0.05 through float rounding)."""


@dataclass(frozen=True)
class MarginGate(LatticeGate):
    """Revert when the revision's success rate is below the prior's by more than ``margin``.

    From run ``min_runs`` of the revision on, at every run: revert if
    ``p_prior - s/n > margin``; at ``max_runs`` (or later) a revision never reverted is
    accepted; otherwise continue. The prior's rate is its raw ``s/n`` unless ``p0`` is
    given; a prior with no runs has no rate, so the gate only accepts at ``max_runs``.
    The statistic is ``p_prior - s/n``. The seed's server default is the SPRT
    (``gate_mode="sprt"``); the margin gate is its ``gate_mode="margin"``, here with the
    values the seed's SDK sends (``gate_min_runs=5``, ``gate_margin=0.05``).
    """

    margin: float = 0.05
    min_runs: int = 5
    max_runs: int = MAX_RUNS
    name: ClassVar[str] = "margin"
    label: ClassVar[str] = "margin gate"

    def __post_init__(self) -> None:
        check_probability("margin", self.margin, open_high=True)
        check_fields(self)

    def describe(self) -> str:
        return f"margin gate, margin {self.margin:g}"

    def estimate_p0(self, successes: ArrayLike, runs: ArrayLike) -> np.ndarray:
        """The prior's raw rate ``s/n`` (NaN with no runs: no rate to compare with)."""
        return raw_rate(successes, runs)

    def prior_source(self, prior: RevisionStats) -> str:
        if prior.runs == 0:
            return "prior has no runs, so no rate to compare"
        return f"prior {prior.successes}/{prior.runs}"

    def rule(self, successes: ArrayLike, runs: ArrayLike, p0: ArrayLike) -> np.ndarray:
        """Verdict codes at ``(runs, successes)`` against prior rate ``p0`` (NaN: no rate)."""
        runs = np.asarray(runs)
        revert, _ = self.crossed(successes, runs, p0)
        revert &= runs >= self.min_runs
        accept = (runs >= self.max_runs) & ~revert
        return revert.astype(np.int8) * REVERT_CODE + accept.astype(np.int8) * ACCEPT_CODE

    def statistic(self, successes: ArrayLike, runs: ArrayLike, p0: ArrayLike) -> np.ndarray:
        """``p0 - s/n`` (with no runs, the rate counts as 0)."""
        runs = np.asarray(runs, dtype=float)
        rate = np.asarray(successes, dtype=float) / np.maximum(runs, 1.0)
        return np.asarray(p0, dtype=float) - rate

    def crossed(
        self, successes: ArrayLike, runs: ArrayLike, p0: ArrayLike
    ) -> tuple[np.ndarray, np.ndarray]:
        gap = self.statistic(successes, runs, p0)
        revert = np.asarray(gap > self.margin + MARGIN_TOLERANCE)
        return revert, np.zeros_like(revert)

    def explain(self, reason_code: str, evidence: Evidence) -> str:
        gap, s, n, p0 = evidence.statistic, evidence.successes, evidence.runs, evidence.p0
        why = {
            "revert_boundary": f"success rate {s}/{n} is below the prior's by {gap:.4f} > "
            f"{self.margin:g}",
            "at_cap": f"not reverted by max_runs={self.max_runs}",
            "too_few_runs": f"fewer than min_runs={self.min_runs} runs",
            "undecided": f"gap {gap:.4f} <= margin {self.margin:g}",
        }[reason_code]
        return f"{why}; baseline {p0:.4g} ({evidence.source})"
