"""``LatticeGate``: the gate base for a verdict that depends only on the revision's (runs,
successes) and p0 (the SPRT, the margin gate, the calibrated SPRT).

A subclass gives its per-run ``rule``, its ``statistic``, which boundary was ``crossed``
and the sentence that ``explain``s it; this class derives every verb of ``Gate`` from
them, with the exact ``operating_point`` by forward recursion over the lattice
(``gates.lattice``; docs/statistics.md, "Exact operating points").
"""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from procmem_core.errors import check_int, check_probability
from procmem_core.gates import lattice, mixture
from procmem_core.gates.base import (
    Gate,
    OperatingCurve,
    OperatingPoint,
    Recursions,
    check_p_values,
    gate_key,
    ledger_and_runs,
    make_point,
)
from procmem_core.gates.verdicts import (
    CONTINUE_CODE,
    VERDICT_NAMES,
    BatchDecision,
    Evidence,
    GateDecision,
    RevisionStats,
    check_p0,
    check_stats,
)

_REASON_ORDER = np.array(
    ["too_few_runs", "revert_boundary", "accept_boundary", "at_cap", "undecided"], dtype=object
)
"""``LatticeGate.reason_codes``' vocabulary, first match wins."""
TABLES_KEPT = 256
"""Per-p0 decision tables a lattice gate keeps for ``decide_batch`` (~2.6 kB each at 50
runs); past it they are dropped and recomputed."""


LEDGER_MASSES = Recursions()
"""``LatticeGate.ledger_masses`` per gate parameters and ledger size."""


class LatticeGate(Gate):
    """A gate whose verdict depends only on the revision's (runs, successes) and p0.

    Subclasses define ``min_runs``, ``max_runs``, ``rule``, ``statistic``, ``crossed`` and
    ``explain``; this class gives them ``decide``, ``decide_batch``, ``run_codes``,
    ``reason_codes`` and the exact ``operating_point`` (p0 known, or estimated from a
    prior ledger of ``prior_runs`` runs, mixed in exactly).
    """

    exact: ClassVar[bool] = True
    min_runs: int
    max_runs: int

    @abstractmethod
    def rule(self, successes: ArrayLike, runs: ArrayLike, p0: ArrayLike) -> np.ndarray:
        """Verdict codes at ``(runs, successes)`` given p0: the one rule every path calls."""

    @abstractmethod
    def statistic(self, successes: ArrayLike, runs: ArrayLike, p0: ArrayLike) -> np.ndarray:
        """The gate's test statistic at ``(runs, successes)``."""

    @abstractmethod
    def crossed(
        self, successes: ArrayLike, runs: ArrayLike, p0: ArrayLike
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(past the revert boundary, past the accept boundary)`` before the cap rule."""

    @abstractmethod
    def explain(self, reason_code: str, evidence: Evidence) -> str:
        """The sentence for one decision (its numbers, where p0 came from)."""

    def prior_source(self, prior: RevisionStats) -> str:
        """Where p0 came from, for the sentence (override to name the estimator)."""
        return f"prior {prior.successes}/{prior.runs}"

    def crossed_at(self, statistic: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """``crossed`` from the statistic already computed at the cells, for a gate whose
        boundaries read only its statistic (None: ask ``crossed``)."""
        return None

    def reason_codes(
        self, successes: ArrayLike, runs: ArrayLike, p0: ArrayLike, verdict: ArrayLike
    ) -> np.ndarray:
        """The reason code of each verdict reached at ``(runs, successes)``: too few runs,
        else the revert boundary, else the accept boundary, else at the cap or undecided."""
        runs = np.asarray(runs)
        return self._reasons(runs, *self.crossed(successes, runs, p0), verdict)

    def _reasons(self, runs, rev, acc, verdict) -> np.ndarray:
        undecided = np.asarray(np.asarray(verdict) == CONTINUE_CODE)
        which = np.empty(undecided.shape, dtype=np.int8)
        np.add(undecided.view(np.int8), 3, out=which)  # at_cap 3, undecided 4
        np.copyto(which, 2, where=acc)
        np.copyto(which, 1, where=rev)
        np.copyto(which, 0, where=np.asarray(runs) < self.min_runs)
        return np.asarray(_REASON_ORDER.take(which), dtype=object)

    def _reason_code(
        self, successes: int, runs: int, p0: float, verdict: int, statistic: ArrayLike | None = None
    ) -> str:
        """``reason_codes`` at one cell, as Python values: too few runs, else the revert
        boundary, else the accept boundary, else at the cap or undecided (``statistic``:
        the one at the cell, when already computed: ``crossed_at`` reads it)."""
        crossed = None if statistic is None else self.crossed_at(statistic)
        rev, acc = self.crossed(successes, runs, p0) if crossed is None else crossed
        if runs < self.min_runs:
            return "too_few_runs"
        if rev:
            return "revert_boundary"
        if acc:
            return "accept_boundary"
        return "at_cap" if verdict != CONTINUE_CODE else "undecided"

    def decide(
        self, prior: RevisionStats, revision: RevisionStats, p0: float | None = None
    ) -> GateDecision:
        """Verdict after the revision's runs so far; runs past ``max_runs`` count as they are
        (the cap rule then applies). p0, unless given, is ``estimate_p0`` of the prior."""
        check_stats(prior, revision)
        if p0 is not None:
            p0_value, source = check_p0(p0), "given"
        else:
            p0_value = float(self.estimate_p0(prior.successes, prior.runs))
            source = self.prior_source(prior)
        n, s = revision.runs, revision.successes
        code = np.int8(self.rule(s, n, p0_value))
        raw = self.statistic(s, n, p0_value)  # once, for the reason and the record
        reason = self._reason_code(s, n, p0_value, code, raw)
        stat = float(raw) if p0_value == p0_value else 0.0
        return GateDecision(
            verdict=VERDICT_NAMES[int(code)],
            reason_code=reason,
            reason=self.explain(reason, Evidence(n, s, p0_value, stat, source)),
            runs_used=n,
            statistic=stat,
            gate=self.name,
            p0=p0_value,
        )

    def verdict(self, prior: RevisionStats, revision: RevisionStats) -> str:
        """``decide``'s verdict: the rule at the revision's counts and the prior's p0 (a
        subclass that answers ``decide`` its own way is asked through its ``decide``)."""
        if type(self).decide is not LatticeGate.decide:
            return super().verdict(prior, revision)
        p0 = float(self.estimate_p0(prior.successes, prior.runs))
        return VERDICT_NAMES[int(self.rule(revision.successes, revision.runs, p0))]

    def run_codes(
        self,
        outcomes: np.ndarray,
        p0: float | np.ndarray,
        costs: np.ndarray | None = None,
        prior_costs: np.ndarray | None = None,
    ) -> np.ndarray:
        outcomes = lattice.check_outcomes(outcomes)
        p0 = lattice.check_p0_array(p0, outcomes.shape[0])
        t = min(outcomes.shape[1], self.max_runs)
        counts = np.cumsum(outcomes[:, :t], axis=1)
        n = np.arange(1, t + 1)[None, :]
        return np.asarray(self.rule(counts, n, p0[:, None]), dtype=np.int8)

    def decide_batch(
        self,
        outcomes: np.ndarray,
        p0: float | np.ndarray,
        costs: np.ndarray | None = None,
        prior_costs: np.ndarray | None = None,
    ) -> BatchDecision:
        """First decision of each row of ``outcomes`` (replications x runs, bool).

        ``p0`` is a scalar or one value per row (e.g. ``estimate_p0`` of simulated prior
        ledgers). Rows undecided within ``min(T, max_runs)`` runs stay "continue"; runs
        past ``max_runs`` are ignored. ``statistic`` is the gate's statistic at the decision.
        """
        outcomes = lattice.check_outcomes(outcomes)
        p0 = lattice.check_p0_array(p0, outcomes.shape[0])
        verdict, runs_used, successes = lattice.first_decisions(
            outcomes, p0, self.rule, self.min_runs, self.max_runs, self._decision_tables
        )
        t = min(outcomes.shape[1], self.max_runs)
        if t > 0 and lattice.one_value(p0):  # one p0 for every row: look the cells up
            stat_table, reason_table = self._cell_details(t, p0[:1])
            cell = runs_used * (t + 1) + successes
            stat, reason = stat_table.take(cell), reason_table.take(cell)
        else:
            stat = self.statistic(successes, runs_used, p0)
            crossed = self.crossed_at(stat)
            if crossed is None:
                crossed = self.crossed(successes, runs_used, p0)
            reason = self._reasons(runs_used, *crossed, verdict)
        return BatchDecision(verdict, runs_used, stat, reason, successes)

    def _cell_details(self, t: int, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(statistic, reason code)`` at every lattice cell ``n * (t + 1) + s`` for one
        p0, where a row can stop: the verdict there is the decision table's (continue
        where a row ends undecided). The same functions on the same numbers as row by row
        with that p0 (a scalar), so the same doubles; kept like ``_decision_tables``."""
        kept = self.__dict__.setdefault("_details", {})
        key = (t, value.tobytes())
        details = kept.get(key)
        if details is None:
            n = np.arange(t + 1)[:, None]
            s = np.arange(t + 1)[None, :]
            p0 = value[0]
            verdicts = self._decision_tables(value, t)[0]
            stat = np.broadcast_to(self.statistic(s, n, p0), verdicts.shape)
            reason = self.reason_codes(s, n, p0, verdicts)
            details = (np.ascontiguousarray(stat, dtype=float).ravel(), reason.ravel())
            if len(kept) >= TABLES_KEPT:
                kept.clear()
            kept[key] = details
        return details

    def _decision_tables(self, values: np.ndarray, t: int) -> np.ndarray:
        """``lattice.decision_tables`` of this gate's rule, kept per ``(T, p0)``: the gate
        is frozen, so its rule's table at a p0 never changes (at most
        ``TABLES_KEPT`` are kept)."""
        kept = self.__dict__.setdefault("_tables", {})
        keys = [(t, v.tobytes()) for v in np.asarray(values, dtype=float)]
        found = [kept.get(k) for k in keys]
        missing = [i for i, table in enumerate(found) if table is None]
        if missing:
            new = lattice.decision_tables(self.rule, values[missing], t, self.min_runs)
            if len(kept) + len(missing) > TABLES_KEPT:
                kept.clear()
            for i, table in zip(missing, new, strict=True):
                found[i] = kept[keys[i]] = table
        return np.stack(found)

    def operating_point(
        self, p: float | np.ndarray, p0: float, prior_runs: int | None = None
    ) -> OperatingPoint:
        """Exact operating point by forward recursion over the (runs, successes) lattice.

        With ``prior_runs`` the prior's successes ``S ~ Binomial(prior_runs, p0)`` set
        ``p0_hat = estimate_p0(S, prior_runs)`` and the result is the exact mixture
        ``sum_k P(S = k) * point(p, p0_hat(k))``: O(prior_runs * max_runs^2).
        """
        arr = check_p_values(p)
        p0 = check_probability("p0", p0)
        if prior_runs is None:
            hats, weights = np.array([p0]), np.array([1.0])
        else:
            prior_runs = check_int("prior_runs", prior_runs, minimum=0)
            k, hats = self.ledger_estimates(prior_runs)
            weights = stats.binom.pmf(k, prior_runs, p0)
        tables = lattice.verdict_table(self.rule, hats, self.max_runs)
        revert, accept, runs = (np.zeros(arr.size) for _ in range(3))
        for w, table in zip(weights, tables, strict=True):
            if w == 0.0:
                continue
            a, r, n = lattice.lattice_absorption(table, arr.ravel())
            accept += w * a
            revert += w * r
            runs += w * n
        return make_point(arr, p0, revert, accept, runs, "exact", prior_runs)

    def ledger_estimates(self, prior_runs: int) -> tuple[np.ndarray, np.ndarray]:
        """``(k, estimate_p0(k, prior_runs))`` for every possible ledger count
        ``k = 0..prior_runs``: the p0 each ledger outcome gives (the exact mixture's support)."""
        prior_runs = lattice.check_ledger_size("prior_runs", prior_runs, self.max_runs)
        k = np.arange(prior_runs + 1)
        return k, np.asarray(self.estimate_p0(k, prior_runs), dtype=float)

    def ledger_masses(self, prior_runs: int) -> mixture.LedgerMasses:
        """The recursion at 1/2 with a ledger of ``prior_runs`` runs
        (``mixture.ledger_masses``), computed once per gate parameters and ledger size
        (``base.Recursions``: a design search builds equal gates several times)."""
        prior_runs = check_int("prior_runs", prior_runs, minimum=0)

        def compute() -> mixture.LedgerMasses:
            return mixture.ledger_masses(self.ledger_tables(prior_runs), prior_runs)

        return LEDGER_MASSES.get(self.recursion_key(prior_runs), compute)

    def recursion_key(self, prior_runs: int) -> tuple:
        """What ``ledger_masses`` is remembered under: ``base.gate_key`` (a calibrated gate
        reads ``recalibrate`` as False where it does not matter, ``recalibrate``)."""
        return gate_key(self, prior_runs)

    def ledger_tables(self, prior_runs: int) -> np.ndarray | mixture.Steps:
        """The verdict table per ledger count (``lattice.verdict_table`` at every
        ``estimate_p0(k, prior_runs)``) that ``ledger_masses`` walks; a gate may give
        ``mixture.Steps`` of the same rows instead, computed when the recursion reads them."""
        _, hats = self.ledger_estimates(prior_runs)
        return lattice.verdict_table(self.rule, hats, self.max_runs)

    def operating_curve(
        self, p0: ArrayLike, drop: float = 0.0, prior_runs: int | None = None
    ) -> OperatingCurve:
        """Exact OC at ``p = max(0, p0 - drop)`` for every p0 in one recursion
        (``gates.mixture``): one verdict table per p0 when p0 is known, one per ledger
        count (shared by every p0, weighted by Binomial(prior_runs, p0)) otherwise."""
        p0s = check_p_values(p0).ravel()
        drop = check_probability("drop", drop)
        p = np.maximum(p0s - drop, 0.0)
        if prior_runs is None:
            tables = lattice.verdict_table(self.rule, p0s, self.max_runs)
            res = mixture.diagonal_pass(tables, p)
        else:
            res = mixture.ledger_curve(self.ledger_masses(prior_runs), p0s, p)
        return OperatingCurve(
            p0s,
            drop,
            res.revert,
            res.accept,
            res.runs,
            np.zeros_like(res.runs),
            prior_runs,
            ledger_and_runs(self, prior_runs),
            prior_runs is None,
        )
