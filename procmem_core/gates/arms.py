"""The two arms' evidence as gates that compare them read it (the store's contract).

``RevisionStats`` of the prior counts every run of the prior revision (``runs``,
``successes``), those recorded while the revision was pending included, and lists the
latter in ledger order as ``concurrent``; the revision's ``outcomes`` are its runs in
ledger order. The *ledger* is what the prior had when the revision was proposed: its runs
minus the concurrent ones. A paired gate pairs the revision's ``i``-th run with the
prior's ``i``-th concurrent run, so its decision after ``k`` pairs depends on the first
``k`` runs of each arm only, however the store interleaves them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from procmem_core.errors import ParameterError
from procmem_core.gates.base import GateError
from procmem_core.gates.lattice import check_outcomes
from procmem_core.gates.twolattice import expected_arm_runs
from procmem_core.gates.verdicts import RevisionStats

if TYPE_CHECKING:
    from procmem_core.gates.base import Gate, OperatingCurve


def ledger_of(prior: RevisionStats) -> tuple[int, int]:
    """``(runs, successes)`` of the prior's ledger: its runs before the revision was proposed."""
    runs = prior.runs - len(prior.concurrent)
    successes = prior.successes - sum(prior.concurrent)
    if runs < 0 or not 0 <= successes <= runs:
        raise ParameterError(
            "prior.concurrent",
            f"{len(prior.concurrent)} concurrent runs, {sum(prior.concurrent)} successes",
            f"included in the prior's counts ({prior.runs} runs, {prior.successes} successes)",
        )
    return runs, successes


def pairs_of(prior: RevisionStats, revision: RevisionStats) -> tuple[np.ndarray, np.ndarray]:
    """``(revision outcomes, prior concurrent outcomes)`` of the complete pairs so far."""
    if revision.runs and not revision.outcomes:
        raise GateError("a paired gate needs the revision's outcomes in ledger order")
    k = min(len(revision.outcomes), len(prior.concurrent))
    return (
        np.asarray(revision.outcomes[:k], dtype=bool),
        np.asarray(prior.concurrent[:k], dtype=bool),
    )


def check_concurrent(concurrent: np.ndarray | None, outcomes: np.ndarray) -> np.ndarray:
    """The prior's concurrent outcomes, one row per row of ``outcomes``."""
    if concurrent is None:
        raise ParameterError(
            "concurrent", None, "the prior's concurrent outcomes (the concurrent design)"
        )
    conc = check_outcomes(concurrent)
    if conc.shape[0] != outcomes.shape[0]:
        raise ParameterError(
            "concurrent", f"{conc.shape[0]} rows", f"one row per replication ({outcomes.shape[0]})"
        )
    return conc


def arm_runs(gate: Gate, curve: OperatingCurve, share: float) -> tuple[np.ndarray, np.ndarray]:
    """Expected runs ``(revision, prior)`` at each grid p0 when the prior serves a share
    ``share`` of the sessions: the runs a decision needs (``gate.arm_runs``) plus those
    the other arm accrues meanwhile (``twolattice.expected_arm_runs``); a one-sample
    gate needs none of the prior's, which then holds ``E[runs] share / (1 - share)``."""
    if curve.stop is None:
        extra = share / (1.0 - share)
        return curve.expected_runs, curve.expected_runs * extra
    k = np.arange(curve.stop.shape[1])
    need_rev, need_prior = gate.arm_runs(k)
    if share == 0.0:
        return curve.stop @ need_rev, curve.stop @ need_prior
    rev, prior = expected_arm_runs(need_rev, need_prior, share)
    return curve.stop @ rev, curve.stop @ prior
