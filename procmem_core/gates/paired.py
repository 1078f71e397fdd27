"""Paired gates: the revision's ``i``-th run against the prior's ``i``-th concurrent run.

A pair is *discordant* when exactly one arm succeeded: "worse" (the prior succeeded, the
revision failed, probability ``p0 (1 - p)``) or "better" (``(1 - p0) p``); it is
concordant otherwise. Under no change (``p = p0``) a discordant pair is worse with
probability 1/2 whatever p0, so a test of the discordant pairs has a null free of the
prior's rate (Wald 1947, "Sequential analysis", ch. 5). ``PairedGate`` is the base of
gates whose verdict after ``k`` pairs depends only on ``(k, worse W, better B)`` (and,
for the SPRT, the p0 its alternative is set at): it gives them ``decide``,
``decide_batch``, ``run_codes`` and the exact operating point by the forward recursion

    m_k(W, B) = pc m_{k-1}(W, B) + pw m_{k-1}(W-1, B) + pb m_{k-1}(W, B-1),

decided cells absorbed, for many ``(p0, p)`` at once (``pw = p0 (1-p)``,
``pb = (1-p0) p``, ``pc = 1 - pw - pb``). ``max_discordant`` caps the test at that many
discordant pairs (the cap rule then applies, from pair ``min_runs`` on: nothing is decided
before it), as well as ``max_runs`` pairs.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.errors import check_int, check_probability
from procmem_core.gates import arms
from procmem_core.gates.base import (
    Gate,
    OperatingCurve,
    OperatingPoint,
    Recursions,
    check_p_values,
    gate_key,
    make_point,
)
from procmem_core.gates.lattice import check_outcomes, check_p0_array
from procmem_core.gates.mixture import sparse_cells
from procmem_core.gates.paired_cells import decided_pairs, take_cells, weighted_masses
from procmem_core.gates.verdicts import (
    ACCEPT_CODE,
    CONTINUE_CODE,
    REVERT_CODE,
    VERDICT_NAMES,
    BatchDecision,
    Evidence,
    GateDecision,
    RevisionStats,
    check_p0,
    check_stats,
    first_codes,
    raw_rate,
)

PAIR_MASSES = Recursions()
PAIRED_MAX_RUNS = math.floor(1022 * math.log(2) / math.log(3))
"""The most pairs (644) whose exact analysis is finite: ``pair_masses`` keeps each cell's
mass at ``pw = pb = pc = 1/3``, at least ``3^-k`` after ``k`` pairs, and reweighs it by
``(3 pc)^k <= 3^k``; past 644 pairs the first underflows a double's normal range (mass lost:
power 0.524 where a direct recursion gives 0.652, max_runs 900) and the second overflows
(P(revert) inf or NaN when nothing changed at p0 0.9, max_runs 700-1000)."""
"""``pair_masses`` per gate parameters and design p0, shared by equal gates."""


class PairedGate(Gate):
    """Base of gates on discordant pairs (module docstring). Subclasses define
    ``max_runs``, ``min_runs``, ``max_discordant``, ``statistic_of``, ``crossed_at`` and
    ``at_cap_code``; p0 (given, else ``design_p0``) reaches only ``statistic_of``."""

    designs: ClassVar[tuple[str, ...]] = ("concurrent",)
    exact: ClassVar[bool] = True
    max_runs_limit: ClassVar[tuple[int, str]] = (
        PAIRED_MAX_RUNS,
        "for a paired gate: its exact recursion holds a cell's mass at 1/3 per pair (at "
        "least 3^-max_runs) in a double",
    )
    """``targets.check_fields`` keeps ``max_runs`` within it (``PAIRED_MAX_RUNS``)."""
    compares_arms: ClassVar[bool] = True
    max_runs: int
    min_runs: int
    max_discordant: int | None
    design_p0: float

    def check_pairing(self) -> None:
        """The pairing fields: ``max_discordant`` (None or >= 1) and ``design_p0`` in (0, 1)."""
        if self.max_discordant is not None:
            check_int("max_discordant", self.max_discordant, minimum=1)
        check_probability("design_p0", self.design_p0, open_low=True, open_high=True)

    @abstractmethod
    def statistic_of(self, worse: ArrayLike, better: ArrayLike, p0: ArrayLike) -> np.ndarray:
        """The test statistic after ``worse`` and ``better`` discordant pairs."""

    @abstractmethod
    def crossed_at(self, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(revert, accept)`` boundaries crossed by statistic ``value``."""

    @abstractmethod
    def at_cap_code(self, value: np.ndarray) -> np.ndarray:
        """The verdict at the cap of a still-undecided test with statistic ``value``."""

    def estimate_p0(self, successes: ArrayLike, runs: ArrayLike) -> np.ndarray:
        """The prior's raw rate ``s/n`` (reported only: the null does not depend on it)."""
        return raw_rate(successes, runs)

    def rule(self, k: ArrayLike, worse: ArrayLike, better: ArrayLike, p0: ArrayLike) -> np.ndarray:
        """Verdict codes after ``k`` pairs: the one rule every path calls."""
        return self.rule_at(k, worse, better, self.statistic_of(worse, better, p0))

    def rule_at(self, k: ArrayLike, worse: ArrayLike, better: ArrayLike, value) -> np.ndarray:
        """``rule`` with the statistic already computed (it does not depend on ``k``)."""
        k = np.asarray(k)
        revert, accept = self.crossed_at(value)
        live = k >= self.min_runs
        codes = np.where(live & revert, REVERT_CODE, np.where(live & accept, ACCEPT_CODE, 0))
        cap = k >= self.max_runs
        if self.max_discordant is not None:  # a cap too: nothing is decided before min_runs
            discordant = np.asarray(worse) + np.asarray(better) >= self.max_discordant
            cap = cap | (live & discordant)
        undecided = cap & (codes == CONTINUE_CODE)
        return np.where(undecided, self.at_cap_code(value), codes).astype(np.int8)

    def reasons(self, k, worse, better, p0, verdict) -> np.ndarray:
        value = self.statistic_of(worse, better, p0)
        revert, accept = self.crossed_at(value)
        k = np.asarray(k)
        out = np.where(np.asarray(verdict) != CONTINUE_CODE, "at_cap", "undecided").astype(object)
        live = np.broadcast_to(k >= self.min_runs, out.shape)
        out[live & accept] = "accept_boundary"
        out[live & revert] = "revert_boundary"
        out[~live] = "too_few_runs"
        return out

    # --- one revision ------------------------------------------------------------------

    def decide(
        self, prior: RevisionStats, revision: RevisionStats, p0: float | None = None
    ) -> GateDecision:
        """Verdict after the complete pairs so far (``arms.pairs_of``)."""
        check_stats(prior, revision)
        rev, conc = arms.pairs_of(prior, revision)
        design = self.design_p0 if p0 is None else check_p0(p0)
        source = "design_p0" if p0 is None else "given"
        k, w, b = rev.size, int(np.sum(conc & ~rev)), int(np.sum(rev & ~conc))
        code = int(self.rule(k, w, b, design))
        reason = str(self.reasons(np.array([k]), w, b, design, np.array([code]))[0])
        value = float(self.statistic_of(w, b, design))
        evidence = Evidence(k, int(rev.sum()), design, value, source, worse=w, better=b)
        return GateDecision(
            verdict=VERDICT_NAMES[code],
            reason_code=reason,
            reason=self.explain(reason, evidence),
            runs_used=k,
            statistic=value,
            gate=self.name,
            p0=design,
        )

    def explain(self, reason_code: str, evidence: Evidence) -> str:
        """The sentence for one decision (subclasses add their boundaries)."""
        e = evidence
        pairs = f"{e.runs} pairs ({e.worse} worse, {e.better} better)"
        return f"{reason_code}: statistic {e.statistic:.4f} after {pairs}"

    # --- many revisions ----------------------------------------------------------------

    def _counts(self, outcomes, concurrent, p0):
        outcomes = check_outcomes(outcomes)
        conc = arms.check_concurrent(concurrent, outcomes)
        t = min(outcomes.shape[1], conc.shape[1], self.max_runs)
        rev, pri = outcomes[:, :t], conc[:, :t]
        design = check_p0_array(self.design_p0 if p0 is None else p0, outcomes.shape[0])
        worse = np.cumsum(pri & ~rev, axis=1)
        better = np.cumsum(rev & ~pri, axis=1)
        k = np.broadcast_to(np.arange(1, t + 1)[None, :], worse.shape)
        return k, worse, better, design[:, None]

    def run_codes(
        self, outcomes, p0=None, costs=None, prior_costs=None, *,
        ledger_successes=None, ledger_runs: int = 0, concurrent=None,
    ) -> np.ndarray:  # fmt: skip
        """The verdict after each pair, ``(rows, min(T, max_runs))`` int8."""
        k, w, b, design = self._counts(outcomes, concurrent, p0)
        return self.rule(k, w, b, design)

    def decide_batch(
        self, outcomes, p0=None, costs=None, prior_costs=None, *,
        ledger_successes=None, ledger_runs: int = 0, concurrent=None,
    ) -> BatchDecision:  # fmt: skip
        """First decision of each row; ``runs_used`` counts pairs."""
        k, w, b, design = self._counts(outcomes, concurrent, p0)
        codes = self.rule(k, w, b, design)
        verdict, runs = first_codes(codes)
        if codes.shape[1] == 0:
            zero = np.zeros(codes.shape[0])
            return BatchDecision(verdict, runs, zero, np.full(zero.shape, "too_few_runs", object))
        rows = np.arange(codes.shape[0])
        col = np.clip(runs - 1, 0, codes.shape[1] - 1)
        at = (k[rows, col], w[rows, col], b[rows, col], design[:, 0])
        value = self.statistic_of(at[1], at[2], at[3])
        return BatchDecision(verdict, runs, value, self.reasons(*at, verdict))

    def decide_evidence(
        self, outcomes, *, p0=None, ledger_successes=None, ledger_runs: int = 0, concurrent=None
    ) -> BatchDecision:
        return self.decide_batch(outcomes, p0, concurrent=concurrent)

    def arm_runs(self, runs_used: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        runs = np.asarray(runs_used, dtype=np.int64)
        return runs, runs.copy()

    # --- exact ---------------------------------------------------------------------------

    def observations(self, prior_runs: int | None) -> int:
        return 2 * int(self.max_runs)

    def pair_masses(self, design: float) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The recursion at ``pw = pb = pc = 1/3``: the mass each cell ``(W, B)`` decides
        at pair ``k`` (revert, accept), for the alternative set at ``design`` (cached).
        After ``k - 1`` pairs only cells with ``W, B < k`` hold mass, so step ``k`` works
        on that corner; the verdict codes change with ``k`` only at ``min_runs`` and the
        cap, so each regime's decided cells are found once (``decided_pairs``)."""
        return PAIR_MASSES.get(gate_key(self, float(design)), lambda: self._pair_masses(design))

    def _pair_masses(self, design: float) -> tuple[list, list]:
        cap = self.max_runs  # W, B <= max(max_discordant, min_runs): none decides before min_runs
        if self.max_discordant is not None:
            cap = min(cap, max(self.max_discordant, self.min_runs))
        cells = np.arange(cap + 1)
        w, b = cells[:, None], cells[None, :]
        value = self.statistic_of(w, b, design)
        regimes: dict[tuple, tuple] = {}
        # two buffers in turn (zero outside the corner a step writes) and one for the terms
        mass, spare, term = (np.zeros((cap + 1, cap + 1)) for _ in range(3))
        mass[0, 0] = 1.0
        revert, accept = [sparse_cells(np.zeros_like(mass))], [sparse_cells(np.zeros_like(mass))]
        before: tuple = ("start",)
        for k in range(1, self.max_runs + 1):
            e, nxt = min(k + 1, cap + 1), spare
            third = np.divide(mass[:e, :e], 3.0, out=term[:e, :e])  # once: the same values
            nxt[:e, :e] = third
            nxt[1:e, :e] += third[: e - 1, :e]
            nxt[:e, 1:e] += third[:e, : e - 1]
            now = (k >= self.min_runs, k >= self.max_runs)
            if (before, now) not in regimes:
                held = mass != 0 if before == ("start",) else ~regimes[before][2]
                regimes[before, now] = decided_pairs(self.rule_at(k, w, b, value), held)
                regimes[now] = regimes[before, now]
            rev, acc, _ = regimes[before, now]
            before = now
            revert.append(take_cells(nxt, rev))
            accept.append(take_cells(nxt, acc))
            # a cell holding mass is within one step of a held cell: the decided ones among
            # them are ``rev`` and ``acc``, every other decided cell holds 0 already
            nxt[rev] = 0.0
            nxt[acc] = 0.0
            mass, spare = nxt, mass
        return revert, accept

    def reverts_by_pair(self, p0: ArrayLike, p: ArrayLike, design: ArrayLike) -> np.ndarray:
        """``out[g, k]`` = P(revert at pair k) at ``(p0[g], p[g])``."""
        p0, p, design = (np.asarray(x, dtype=float).ravel() for x in (p0, p, design))
        out = np.zeros((p0.size, self.max_runs + 1))
        for value in np.unique(design):
            rows = np.flatnonzero(design == value)
            out[rows] = weighted_masses(self.pair_masses(float(value))[0], p0[rows], p[rows])
        return out

    def pair_pass(self, p0: np.ndarray, p: np.ndarray, design: np.ndarray):
        """``(revert, accept, E[pairs], stop)`` at each ``(p0[g], p[g])`` with the
        alternative set at ``design[g]``; ``stop[g, k]`` = P(decision at pair k). A cell's
        mass at ``(pw, pb, pc)`` is its mass at 1/3 times
        ``(3 pc)^k (pw / pc)^W (pb / pc)^B`` (``pair_masses``, one recursion per design)."""
        p0, p, design = (np.asarray(x, dtype=float).ravel() for x in (p0, p, design))
        rev = np.zeros((p0.size, self.max_runs + 1))
        acc = np.zeros((p0.size, self.max_runs + 1))
        for value in np.unique(design):
            rows = np.flatnonzero(design == value)
            masses = self.pair_masses(float(value))
            rev[rows], acc[rows] = (weighted_masses(m, p0[rows], p[rows]) for m in masses)
        stop = rev + acc
        return rev.sum(axis=1), acc.sum(axis=1), stop @ np.arange(self.max_runs + 1), stop

    def operating_point(
        self, p: float | np.ndarray, p0: float, prior_runs: int | None = None
    ) -> OperatingPoint:
        """Exact operating point at revision rate(s) ``p``; the alternative is set at the
        true p0 when ``prior_runs`` is None (p0 known), else at ``design_p0``."""
        arr = check_p_values(p)
        p0 = check_probability("p0", p0)
        flat = arr.ravel()
        design = np.full(flat.size, p0 if prior_runs is None else self.design_p0)
        rev, acc, runs, _ = self.pair_pass(np.full(flat.size, p0), flat, design)
        point = make_point(arr, p0, rev, acc, runs, "exact", prior_runs)
        return OperatingPoint(**{**point.__dict__, "expected_prior_runs": point.expected_runs})

    def operating_curve(
        self, p0: ArrayLike, drop: float = 0.0, prior_runs: int | None = None
    ) -> OperatingCurve:
        p0s = check_p_values(p0).ravel()
        drop = check_probability("drop", drop)
        design = p0s if prior_runs is None else np.full(p0s.size, self.design_p0)
        rev, acc, runs, stop = self.pair_pass(p0s, np.maximum(p0s - drop, 0.0), design)
        return OperatingCurve(
            p0s, drop, rev, acc, runs, runs.copy(), prior_runs, self.observations(prior_runs),
            prior_runs is None, stop,
        )  # fmt: skip
