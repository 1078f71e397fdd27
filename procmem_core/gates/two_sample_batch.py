"""``TwoSampleGate``'s paths for many revisions at once (the simulators'): the cells
``(k, a, B, n)`` after every run of every row, read through the gate's one ``rule``."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.gates import arms
from procmem_core.gates.lattice import check_outcomes
from procmem_core.gates.twostats import drop_statistics
from procmem_core.gates.verdicts import BatchDecision, first_codes, ledger_counts


class TwoSampleBatch:
    """Mixin of ``TwoSampleGate`` (needs ``design``, ``max_runs``, ``min_drop``, ``rule``
    and ``reasons``): the vectorized paths."""

    def cells(self, outcomes, ledger_successes, ledger_runs, concurrent):
        """``(k, a, B, n)`` after every run of every row (``(rows, T)`` arrays)."""
        outcomes = check_outcomes(outcomes)
        rows = outcomes.shape[0]
        s0 = ledger_counts(ledger_successes, rows, ledger_runs)
        t = min(outcomes.shape[1], self.max_runs)
        if self.design == "concurrent":
            conc = arms.check_concurrent(concurrent, outcomes)
            t = min(t, conc.shape[1])
            b = s0[:, None] + np.cumsum(conc[:, :t], axis=1)
        k = np.arange(1, t + 1)[None, :]
        a = np.cumsum(outcomes[:, :t], axis=1)
        if self.design == "fixed":
            b = np.broadcast_to(s0[:, None], a.shape)
        n = ledger_runs + (k if self.design == "concurrent" else 0)
        return np.broadcast_to(k, a.shape), a, b, np.broadcast_to(n, a.shape)

    def run_codes(
        self, outcomes, p0=None, costs=None, prior_costs=None, *,
        ledger_successes=None, ledger_runs: int = 0, concurrent=None,
    ) -> np.ndarray:  # fmt: skip
        """The verdict after each run (pair), ``(rows, min(T, max_runs))`` int8."""
        k, a, b, n = self.cells(outcomes, ledger_successes, ledger_runs, concurrent)
        return np.asarray(self.rule(k, a, b, n), dtype=np.int8)

    def decide_batch(
        self, outcomes, p0=None, costs=None, prior_costs=None, *,
        ledger_successes=None, ledger_runs: int = 0, concurrent=None,
    ) -> BatchDecision:  # fmt: skip
        """First decision of each row: ``runs_used`` counts revision runs (pairs)."""
        k, a, b, n = self.cells(outcomes, ledger_successes, ledger_runs, concurrent)
        codes = np.asarray(self.rule(k, a, b, n), dtype=np.int8)
        verdict, runs = first_codes(codes)
        rows = np.arange(codes.shape[0])
        col = np.clip(runs - 1, 0, max(codes.shape[1] - 1, 0))
        if codes.shape[1] == 0:
            zero = np.zeros(codes.shape[0])
            return BatchDecision(verdict, runs, zero, np.full(zero.shape, "too_few_runs", object))
        at = (k[rows, col], a[rows, col], b[rows, col], n[rows, col])
        lam = drop_statistics(*at, self.min_drop)[0]
        return BatchDecision(verdict, runs, lam, self.reasons(*at, verdict))

    def decide_evidence(
        self, outcomes, *, p0=None, ledger_successes=None, ledger_runs: int = 0, concurrent=None
    ) -> BatchDecision:
        return self.decide_batch(
            outcomes, ledger_successes=ledger_successes, ledger_runs=ledger_runs,
            concurrent=concurrent,
        )  # fmt: skip

    def arm_runs(self, runs_used: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        runs = np.asarray(runs_used, dtype=np.int64)
        return runs, runs if self.design == "concurrent" else np.zeros_like(runs)
