"""``CalibratedSPRTGate``: the seed's SPRT with boundaries that hold at the worst case.

The seed's SPRT, with p0 plugged in from the prior's ledger (procmem's default: the seed
does not say how p0 is estimated, docs/seed-fidelity.md), uses Wald's boundaries, so its
false-revert rate is alpha only when p0 is known; estimated from a 20-run ledger it is
0.13-0.16 (docs/statistics.md). This gate keeps the SPRT's statistic (the LLR of
``p1 = p0_hat - min_drop`` against ``p0_hat``, ``p0_hat`` the ledger's estimate by
``prior``, clipped as in ``gates.llr``) and the fixed-ledger design, and computes its
boundaries exactly for a ledger of ``ledger`` runs: before the cap it reverts when
``LLR >= revert_level`` and accepts when ``LLR <= accept_level`` (defaults Wald's
``ln((1-beta)/alpha)`` and ``ln(beta/(1-alpha))``); at ``max_runs`` it reverts exactly
when ``LLR >= final_level``, calibrated (``gates.calibrate``) so that the false-revert
rate is at most alpha at every p0 in ``[p0_low, p0_high]``, the ledger's
Binomial(ledger, p0) mixed in exactly. Power is whatever that leaves: with a short
ledger no boundaries give power 0.8 (``gates.design`` says what would).

Shown a ledger of another size ``m`` (``decide``: the prior's runs; ``operating_curve``,
``operating_point``: ``prior_runs``), the gate with ``recalibrate`` (the default) uses the
revert and final levels calibrated for ``m`` (``at_ledger``, the rule of
``recalibrate.LedgerLevels`` that ``TwoSampleGate`` uses), so its guarantee holds at the
ledger a revision has (``ledger_profile``); ledger 0 is allowed (p0 then estimated from
no runs; the calibration may leave no revert). ``decide_evidence`` (the simulators' path) uses them
for the ledger it is given; ``decide_batch`` and ``run_codes`` take p0 without a ledger
size and use the gate's own levels (``at_ledger(m).decide_batch`` for another size).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.errors import ParameterError, check_choice
from procmem_core.gates import lattice, llr, mixture
from procmem_core.gates.base import OperatingPoint, Recursions
from procmem_core.gates.calibrate import (
    TRIALS,
    Calibration,
    NullPass,
    calibrate,
    fill_levels,
    grid_calibrated_gate,
)
from procmem_core.gates.calibration_store import stored
from procmem_core.gates.defaults import (
    ALPHA,
    BETA,
    LEDGER,
    MAX_RUNS,
    MIN_DROP,
    MIN_RUNS,
    P0_HIGH,
    P0_LOW,
)
from procmem_core.gates.lattice_gate import LatticeGate
from procmem_core.gates.recalibrate import LedgerLevels
from procmem_core.gates.revert_limit import RevertLimit
from procmem_core.gates.targets import check_fields
from procmem_core.gates.verdicts import (
    BatchDecision,
    Evidence,
    GateDecision,
    RevisionStats,
    check_counts,
    check_stats,
)
from procmem_core.gates.worst import P0Range, WorstCase, worst_case

ESTIMATES = ("plugin", "ml")
CALIBRATION_POINTS = 41


@dataclass(frozen=True)
class CalibratedSPRTGate(LedgerLevels, LatticeGate):
    """SPRT with exactly calibrated boundaries (module docstring). Guarantee: worst-case
    false revert ``<= alpha`` over p0 in ``[p0_low, p0_high]`` with a ledger of
    ``ledger`` runs."""

    min_drop: float = MIN_DROP
    alpha: float = ALPHA
    beta: float = BETA
    max_runs: int = MAX_RUNS
    min_runs: int = MIN_RUNS
    ledger: int = LEDGER
    prior: str = "plugin"
    p0_low: float = P0_LOW
    p0_high: float = P0_HIGH
    revert_level: float | None = None
    accept_level: float | None = None
    final_level: float | None = None
    recalibrate: bool = True
    """With a ledger of another size than ``ledger``: ``True`` uses revert and final levels
    calibrated for the ledger it sees (``at_ledger``), so the guarantee holds at that size;
    ``False`` keeps the levels calibrated for ``ledger``."""
    name: ClassVar[str] = "calibrated_sprt"
    label: ClassVar[str] = "calibrated SPRT"

    def __post_init__(self) -> None:
        check_fields(self)
        lattice.check_ledger_size("ledger", self.ledger, self.max_runs)
        check_choice("prior", self.prior, ESTIMATES)
        P0Range(self.p0_low, self.p0_high)
        if not isinstance(self.recalibrate, bool):
            raise ParameterError("recalibrate", self.recalibrate, "True or False")
        fill_levels(self, *llr.sprt_boundaries(self.alpha, self.beta))
        object.__setattr__(self, "_at_ledger", {})
        if self.final_level is None:
            cal = _calibrated(self.key_at(self.ledger))
            object.__setattr__(self, "revert_level", cal.revert_level)
            object.__setattr__(self, "final_level", cal.final_level)
            object.__setattr__(self, "_certificate", cal.worst)

    def describe(self) -> str:
        return f"calibrated SPRT, ledger {self.ledger}"

    def calibration(self, key: tuple) -> Calibration:
        return _calibrated(key)

    def at_ledger(self, ledger: int) -> CalibratedSPRTGate:
        """This gate with the levels for a ledger of ``ledger`` runs (``levels``: its own
        at its design ledger or without ``recalibrate``), kept per size."""
        m = int(ledger)
        revert, final = self.levels(m)
        if (revert, final) == (self.revert_level, self.final_level):
            return self
        kept = self.__dict__["_at_ledger"]
        if m not in kept:
            cal = _calibrated(self.key_at(m))
            gate = dataclasses.replace(self, ledger=m, revert_level=revert, final_level=final,
                                       recalibrate=False)  # fmt: skip
            object.__setattr__(gate, "_certificate", cal.worst)
            kept[m] = gate
        return kept[m]

    def decide(
        self, prior: RevisionStats, revision: RevisionStats, p0: float | None = None
    ) -> GateDecision:
        """``LatticeGate.decide`` with the levels for the prior's ledger (``at_ledger``)."""
        check_stats(prior, revision)
        return LatticeGate.decide(self.at_ledger(prior.runs), prior, revision, p0)

    def decide_evidence(
        self,
        outcomes: np.ndarray,
        *,
        p0: float | np.ndarray | None = None,
        ledger_successes: ArrayLike | None = None,
        ledger_runs: int = 0,
        concurrent: np.ndarray | None = None,
    ) -> BatchDecision:
        """``LatticeGate.decide_evidence`` with the levels for a ledger of ``ledger_runs``
        (``at_ledger``) when the evidence is a ledger, as ``decide`` and the exact
        operating point use; with p0 known, the gate's own levels."""
        gate = self if ledger_successes is None else self.at_ledger(ledger_runs)
        return LatticeGate.decide_evidence(
            gate, outcomes, p0=p0, ledger_successes=ledger_successes,
            ledger_runs=ledger_runs, concurrent=concurrent,
        )  # fmt: skip

    def operating_point(
        self, p: float | np.ndarray, p0: float, prior_runs: int | None = None
    ) -> OperatingPoint:
        """``LatticeGate.operating_point`` with the levels for a ledger of ``prior_runs``."""
        gate = self if prior_runs is None else self.at_ledger(prior_runs)
        return LatticeGate.operating_point(gate, p, p0, prior_runs)

    def ledger_masses(self, prior_runs: int) -> mixture.LedgerMasses:
        """``LatticeGate.ledger_masses`` with the levels for a ledger of ``prior_runs``:
        ``operating_curve`` and every worst case then use them."""
        return LatticeGate.ledger_masses(self.at_ledger(prior_runs), prior_runs)

    def ledger_tables(self, prior_runs: int) -> mixture.Steps:
        """``LatticeGate.ledger_tables`` run by run (``mixture.Steps``), from the statistic
        on every cell computed once per ledger size (``ledger_statistics``): the same codes
        as ``verdict_table``'s (``codes_at`` on the same values; a run before the cap takes
        its short rule, which gives the codes of the full one there)."""
        by_run, floor = ledger_statistics(self, prior_runs)
        final = self.final_level
        return mixture.Steps(lambda n: self.codes_at(by_run[n, :, : n + 1], n, final, floor[n]),
                             self.max_runs + 1)  # fmt: skip

    def certificate(self) -> WorstCase | None:
        """The worst case that certified the calibrated boundaries (None when they were
        given): false revert over ``[p0_low, p0_high]`` with a ledger of ``ledger`` runs."""
        return self.__dict__.get("_certificate")

    def estimate_p0(self, successes: ArrayLike, runs: ArrayLike) -> np.ndarray:
        check_counts(successes, runs)
        return llr.prior_estimate(self.prior, successes, runs, self.alpha)

    def prior_source(self, prior: RevisionStats) -> str:
        return f"{self.prior} estimate from prior {prior.successes}/{prior.runs}"

    def statistic(self, successes: ArrayLike, runs: ArrayLike, p0: ArrayLike) -> np.ndarray:
        """The LLR at ``(runs, successes)`` (``gates.llr``)."""
        ln_s, ln_f = llr.sprt_increments(p0, self.min_drop)
        return llr.sprt_llr(successes, runs, ln_s, ln_f)

    def verdicts(self, successes, runs, p0, final: float | None) -> np.ndarray:
        """Codes at ``(runs, successes)``; ``final=None`` leaves the cap undecided."""
        return self.codes_at(self.statistic(successes, runs, p0), runs, final)

    def codes_at(
        self, value: np.ndarray, runs: ArrayLike, final: float | None, floor: float | None = None
    ) -> np.ndarray:
        """``verdicts`` from the statistic ``value`` already computed at the cells;
        ``floor``: the least of ``value`` (below it the accept comparison is skipped: no
        cell accepts, the same codes)."""
        runs = np.asarray(runs)
        if runs.ndim == 0 and runs < self.max_runs:  # one run before the cap: no cap rule
            if runs < self.min_runs:
                return np.zeros(np.shape(value), dtype=np.int8)
            revert = np.asarray(value >= self.revert_level)
            codes = revert.view(np.int8) * np.int8(2)
            if floor is None or floor <= self.accept_level:  # else no cell accepts
                codes += (np.asarray(value <= self.accept_level) & ~revert).view(np.int8)
            return codes
        live = runs >= self.min_runs
        cap = runs >= self.max_runs
        early_rev = live & ~cap & (value >= self.revert_level)
        early_acc = live & ~cap & ~early_rev & (value <= self.accept_level)
        if final is None:
            at_cap = np.zeros(np.shape(cap), dtype=bool), np.zeros(np.shape(cap), dtype=bool)
        else:
            at_cap = cap & (value >= final), cap & (value < final)
        revert = early_rev | at_cap[0]
        accept = early_acc | at_cap[1]
        return revert.astype(np.int8) * 2 + accept.astype(np.int8)

    def rule(self, successes: ArrayLike, runs: ArrayLike, p0: ArrayLike) -> np.ndarray:
        return self.verdicts(successes, runs, p0, self.final_level)

    def crossed(self, successes, runs, p0) -> tuple[np.ndarray, np.ndarray]:
        value = self.statistic(successes, runs, p0)
        return value >= self.revert_level, value <= self.accept_level

    def explain(self, reason_code: str, evidence: Evidence) -> str:
        successes, runs = evidence.successes, evidence.runs
        p0, source = evidence.p0, evidence.source
        value = float(self.statistic(successes, runs, p0))
        head = f"LLR={value:.4f} after {successes}/{runs}; p0={p0:.4g} ({source})"
        why = {
            "too_few_runs": f"fewer than min_runs={self.min_runs} runs",
            "revert_boundary": f"LLR >= {self.revert_level:.4f} (calibrated)",
            "accept_boundary": f"LLR <= {self.accept_level:.4f}",
            "at_cap": f"at max_runs={self.max_runs}: revert iff LLR >= {self.final_level:.4f}",
            "undecided": f"{self.accept_level:.4f} < LLR < {self.revert_level:.4f}",
        }[reason_code]
        return f"{why}; {head}"


def ledger_statistics(gate: CalibratedSPRTGate, prior_runs: int) -> tuple[np.ndarray, np.ndarray]:
    """``(by_run, floor)``: ``by_run[n, k, s]`` the gate's LLR after ``s`` successes of ``n``
    runs with ``k`` of ``prior_runs`` ledger successes (``statistic`` on the cells of
    ``verdict_table``, each value by the same operations; run ``n``'s block contiguous, as
    the recursion reads it), ``floor[n]`` its least value at run ``n``; kept for the last
    ``STATISTICS_KEPT`` values of what the statistic reads (read-only: 32 MB at a 100-run
    ledger and 200 runs)."""

    def compute() -> tuple[np.ndarray, np.ndarray]:
        _, hats = gate.ledger_estimates(prior_runs)
        runs = np.arange(gate.max_runs + 1)
        by_run = gate.statistic(runs[None, None, :], runs[:, None, None], hats[None, :, None])
        by_run.setflags(write=False)
        return by_run, np.array([by_run[n, :, : n + 1].min() for n in runs])

    key = (gate.min_drop, gate.prior, gate.alpha, int(prior_runs), gate.max_runs)
    return STATISTICS.get(key, compute)


STATISTICS_KEPT = 2
STATISTICS = Recursions(size=STATISTICS_KEPT)
"""``ledger_statistics``' last ``STATISTICS_KEPT`` tables."""


def grid_calibrated(**params: object) -> CalibratedSPRTGate:
    """The gate calibrated on the coarse grid only (``calibrate.grid_calibrated_gate``)."""
    return grid_calibrated_gate(CalibratedSPRTGate, _calibrated, params)


@lru_cache(maxsize=512)
@stored("calibrated_sprt._calibrated")
def _calibrated(key: tuple, certified: bool = True) -> Calibration:
    """Calibrated boundaries of the gate with these parameters (cached: deterministic)."""
    params = dict(key)
    rng = P0Range(params["p0_low"], params["p0_high"])
    probe = CalibratedSPRTGate(**{**params, "final_level": 0.0})
    n0, t = probe.ledger, probe.max_runs
    hats = np.asarray(probe.estimate_p0(np.arange(n0 + 1), n0), dtype=float)
    stat = probe.statistic(np.arange(t + 1)[None, :], t, hats[:, None])
    total = (np.arange(n0 + 1)[:, None] + np.arange(t + 1)[None, :]).ravel()

    by_run, floor = ledger_statistics(probe, n0)

    # by level, shared with this key's other calibration (a later round retries a level)
    done: dict[float, mixture.LedgerMasses] = TRIALS.get(("calibrated_sprt", key), dict)

    def null_pass(revert_level: float, grid: np.ndarray, limit: float | None) -> NullPass:
        if revert_level not in done:
            gate = CalibratedSPRTGate(**{**params, "revert_level": revert_level,
                                         "final_level": 0.0})  # fmt: skip
            # run n's rows of ``lattice.verdict_table``, computed when the recursion gets there
            rows = mixture.Steps(
                lambda n: gate.codes_at(by_run[n, :, : n + 1], n, None, floor[n]), t + 1
            )
            stop = None if limit is None else RevertLimit(grid, limit, n0 + t)
            masses = mixture.ledger_masses(rows, n0, stop)
            if masses is None:
                return NullPass.stopped(grid, stop.spent)
            done[revert_level] = masses
        masses = done[revert_level]
        res = mixture.ledger_curve(masses, grid, grid)
        return NullPass(grid, res.revert, stat.ravel(), masses.residual.ravel(), total, n0 + t)

    def certify(revert_level: float, final: float, max_points: int):
        gate = CalibratedSPRTGate(**{**params, "revert_level": revert_level, "final_level": final})
        return worst_case(gate, 0.0, n0, rng, target=gate.alpha, max_points=max_points)

    return calibrate(
        null_pass,
        certify if certified else None,
        probe.alpha,
        rng.grid(CALIBRATION_POINTS),
        probe.revert_level,
        _calibrated(key, certified=False) if certified else None,
        done.keys(),
    )
