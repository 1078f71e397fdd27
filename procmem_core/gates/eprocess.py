"""``MixtureEGate``: an anytime-valid gate on discordant pairs (concurrent design).

Under no change a discordant pair is "worse" (the revision failed, the prior succeeded)
with probability 1/2 whatever p0 (``gates.paired``). With ``W`` worse among ``m``
discordant pairs, the beta-binomial mixture likelihood ratio of ``theta > 1/2`` (uniform
on [1/2, 1]) against ``theta = 1/2`` is

    M = 2^m * 2 * int_{1/2}^{1} theta^W (1 - theta)^(m - W) d theta
      = 2^(m+1) B(W+1, m-W+1) I_{1/2}(m-W+1, W+1),

a nonnegative martingale with ``M_0 = 1`` under the null, pair by pair (a concordant
pair leaves it unchanged). Ville's inequality gives ``P(sup_k M_k >= 1/alpha) <= alpha``
for every p0: the gate reverts when ``M >= 1/alpha``, and the guarantee holds under
optional stopping and continuation (stopping early to accept, or running past
``max_runs``, cannot raise it; Robbins 1970; Ramdas, Grünwald, Vovk and Shafer 2023,
"Game-theoretic statistics and safe anytime-valid inference"). It accepts when ``M``
falls to ``accept_below`` (0: never) and at ``max_runs`` pairs. Statistic: ``ln M``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from procmem_core.errors import check_number
from procmem_core.gates.defaults import ALPHA, MAX_RUNS, MIN_DROP
from procmem_core.gates.paired import PairedGate
from procmem_core.gates.targets import check_fields
from procmem_core.gates.verdicts import ACCEPT_CODE, Evidence


def log_mixture(worse: ArrayLike, better: ArrayLike) -> np.ndarray:
    """``ln M`` of the module docstring (``-inf`` where ``I_{1/2}`` underflows)."""
    w = np.asarray(worse, dtype=float)
    m = w + np.asarray(better, dtype=float)
    tail = special.betainc(m - w + 1.0, w + 1.0, 0.5)
    with np.errstate(divide="ignore"):
        return (m + 1.0) * math.log(2.0) + special.betaln(w + 1.0, m - w + 1.0) + np.log(tail)


@dataclass(frozen=True)
class MixtureEGate(PairedGate):
    """Anytime-valid mixture test on discordant pairs (module docstring). Guarantee:
    ``P(ever revert | no change) <= alpha`` for every p0, whatever the stopping rule."""

    alpha: float = ALPHA
    max_runs: int = MAX_RUNS
    min_runs: int = 1
    accept_below: float = 0.0
    min_drop: float = MIN_DROP
    max_discordant: int | None = None
    design_p0: float = 0.8
    name: ClassVar[str] = "eprocess"
    label: ClassVar[str] = "anytime-valid mixture test"

    def __post_init__(self) -> None:
        check_fields(self)
        check_number("accept_below", self.accept_below, minimum=0.0, maximum=1.0)
        self.check_pairing()

    def describe(self) -> str:
        return "anytime-valid mixture test (discordant pairs)"

    def statistic_of(self, worse: ArrayLike, better: ArrayLike, p0: ArrayLike) -> np.ndarray:
        return log_mixture(worse, better)

    def crossed_at(self, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        revert = value >= -math.log(self.alpha)
        with np.errstate(divide="ignore"):
            floor = math.log(self.accept_below) if self.accept_below > 0 else -math.inf
        return revert, (value <= floor) & (self.accept_below > 0)

    def at_cap_code(self, value: np.ndarray) -> np.ndarray:
        return np.full(np.shape(value), ACCEPT_CODE, dtype=np.int8)

    def explain(self, reason_code: str, evidence: Evidence) -> str:
        e = evidence
        head = f"ln M={e.statistic:.4f} after {e.runs} pairs ({e.worse} worse, {e.better} better)"
        why = {
            "too_few_runs": f"fewer than min_runs={self.min_runs} pairs",
            "revert_boundary": f"M >= 1/alpha={1 / self.alpha:g} (Ville): the revision fails more",
            "accept_boundary": f"M <= {self.accept_below:g}: no evidence of a drop",
            "at_cap": f"undecided at max_runs={self.max_runs} pairs: accept",
            "undecided": f"M below 1/alpha={1 / self.alpha:g}",
        }[reason_code]
        return f"{why}; {head}"
