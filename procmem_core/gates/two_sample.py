"""``TwoSampleGate``: an exact two-sample sequential test of the revision against the prior.

The prior's rate p0 is a nuisance: the gate compares the two arms' counts, and its
boundaries are computed by the two-sample recursion (``gates.twolattice``) so that its
false-revert rate is at most ``alpha`` at every p0 in ``[p0_low, p0_high]``, exactly
(``gates.calibrate``, ``gates.worst``). Both designs: "fixed" (the prior's ledger of
``ledger`` runs is all its evidence) and "concurrent" (each revision run is paired with a
concurrent run of the prior; the ledger is pooled into the prior's arm).

Statistic after ``k`` revision runs with ``a`` successes, the prior at ``B`` of ``n``:
with ``D = B/n - a/k`` (the observed drop), ``pbar = (a + B + 1)/(n + k + 2)`` and
``I = 1 / (pbar (1 - pbar) (1/n + 1/k))`` (the information on the drop),

    lambda = d (D - d/2) I,

the log-likelihood ratio of drop ``d = min_drop`` against no drop for a normal estimate
of the drop (Whitehead 1997, "The design and analysis of sequential clinical trials",
ch. 3); ``lambda_ref`` is the same with the variance at its largest, ``pbar = 1/2``, so
the accept boundary is a threshold on the observed drop that does not move with p0, or
(``accept_shrink = c``) with the variance at ``pc = (a + B + c)/(n + k + 2c)``: Wald's
two-sided SPRT in the drop statistic, its information estimated with ``c`` pseudo-runs at
1/2 so that a few early successes do not make it accept (``twostats``).
From run ``min_runs`` on: revert when ``lambda >= revert_level``; accept when the accept
statistic is ``<= accept_level``; at ``max_runs`` revert exactly when ``lambda >=
final_level``, else accept. Defaults: Wald's ``ln((1-beta)/alpha)`` and
``ln(beta/(1-alpha))``; ``final_level`` calibrated (``revert_level`` raised if needed).
Boundaries given by hand must not cross (``accept_level < revert_level``).

The levels are for a ledger of ``ledger`` runs. Shown another size ``m`` (read off each
cell: ``n - k`` concurrent, ``n`` fixed), the gate with ``recalibrate`` (the default) uses
revert and final levels calibrated for ``m`` (``recalibrate.LedgerLevels.levels``: the same
calibration, cached per size), so its guarantee holds at the ledger a revision has;
``ledger_profile`` shows it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.errors import ParameterError, check_choice, check_int
from procmem_core.gates import arms, twolattice
from procmem_core.gates.base import (
    DESIGNS,
    Gate,
    Recursions,
)
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
from procmem_core.gates.llr import sprt_boundaries
from procmem_core.gates.mixture import RevertSteps
from procmem_core.gates.recalibrate import LedgerLevels
from procmem_core.gates.revert_limit import RevertLimit
from procmem_core.gates.targets import check_fields
from procmem_core.gates.two_sample_batch import TwoSampleBatch
from procmem_core.gates.two_sample_exact import TwoSampleExact
from procmem_core.gates.twostats import accept_floor, drop_statistics, step_statistics
from procmem_core.gates.verdicts import (
    CONTINUE_CODE,
    VERDICT_NAMES,
    Evidence,
    GateDecision,
    RevisionStats,
    check_stats,
    raw_rate,
)
from procmem_core.gates.worst import P0Range, WorstCase, worst_case


@dataclass(frozen=True)
class TwoSampleGate(LedgerLevels, TwoSampleBatch, TwoSampleExact, Gate):
    """Exact two-sample sequential test (module docstring); guarantee: worst-case false
    revert ``<= alpha`` over p0 in ``[p0_low, p0_high]`` for its design and ledger."""

    min_drop: float = MIN_DROP
    alpha: float = ALPHA
    beta: float = BETA
    max_runs: int = MAX_RUNS
    min_runs: int = MIN_RUNS
    design: str = "concurrent"
    ledger: int = LEDGER
    p0_low: float = P0_LOW
    p0_high: float = P0_HIGH
    revert_level: float | None = None
    accept_level: float | None = None
    final_level: float | None = None
    accept_shrink: float | None = None
    recalibrate: bool = True
    """With a ledger of another size than ``ledger``: ``True`` calibrates the revert and
    final levels for the ledger it sees (``levels``, cached per size), so the guarantee
    holds at that size; ``False`` keeps the levels calibrated for ``ledger``."""
    name: ClassVar[str] = "two_sample"
    label: ClassVar[str] = "exact two-sample test"
    exact: ClassVar[bool] = True
    compares_arms: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_fields(self)
        check_choice("design", self.design, DESIGNS)
        check_int("ledger", self.ledger, minimum=1 if self.design == "fixed" else 0)
        P0Range(self.p0_low, self.p0_high)
        if not isinstance(self.recalibrate, bool):
            raise ParameterError("recalibrate", self.recalibrate, "True or False")
        if self.accept_shrink is not None:
            shrink = self.accept_shrink
            number = isinstance(shrink, int | float) and not isinstance(shrink, bool)
            if not number or not math.isfinite(shrink) or shrink < 1:
                raise ParameterError("accept_shrink", shrink, "None or a number >= 1")
        fill_levels(self, *sprt_boundaries(self.alpha, self.beta))
        if self.final_level is None:
            cal = _calibrated(self.key_at(self.ledger))
            object.__setattr__(self, "revert_level", cal.revert_level)
            object.__setattr__(self, "final_level", cal.final_level)
            object.__setattr__(self, "_certificate", cal.worst)

    @property
    def designs(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("concurrent",) if self.design == "concurrent" else DESIGNS

    @property
    def lattice(self) -> twolattice.TwoSampleLattice:
        return twolattice.TwoSampleLattice(self.ledger, self.design == "concurrent", self.max_runs)

    def certificate(self) -> WorstCase | None:
        """The worst case that certified the calibrated boundaries (None when they were
        given): false revert over ``[p0_low, p0_high]`` with a ledger of ``ledger`` runs."""
        return self.__dict__.get("_certificate")

    def describe(self) -> str:
        return f"exact two-sample test, {self.design} design, ledger {self.ledger}"

    def estimate_p0(self, successes: ArrayLike, runs: ArrayLike) -> np.ndarray:
        """The prior's raw rate ``s/n`` (reported beside a decision; the test uses counts)."""
        return raw_rate(successes, runs)

    def calibration(self, key: tuple) -> Calibration:
        return _calibrated(key)

    @property
    def smallest_ledger(self) -> int:
        return 1 if self.design == "fixed" else 0

    def cell_levels(self, k, n) -> tuple[np.ndarray | float, np.ndarray | float]:
        """Per cell ``(k, n)``, the levels for its ledger (``n - k`` concurrent, ``n`` fixed)."""
        k, n = np.asarray(k), np.asarray(n)
        ledger = n - k if self.design == "concurrent" else n
        sizes = np.unique(ledger)
        if sizes.size == 1:
            return self.levels(int(sizes[0]))
        table = np.array([self.levels(int(m)) for m in sizes])
        at = np.searchsorted(sizes, ledger)
        return table[at, 0], table[at, 1]

    def verdicts(self, k, a, b, n, at_cap: bool = True) -> np.ndarray:
        """Verdict codes at cells ``(k, a, B, n)`` with the levels for their ledger
        (``cell_levels``); ``at_cap=False`` leaves the cap undecided."""
        stats = drop_statistics(k, a, b, n, self.min_drop, self.accept_shrink)
        revert, final = self.cell_levels(k, n)
        return self._codes(k, *stats, final if at_cap else None, revert)

    def tables(
        self, lat: twolattice.TwoSampleLattice, at_cap: bool = True, lazy: bool = False
    ) -> Sequence[np.ndarray]:
        """``verdicts`` on every cell of every step of ``lat`` (``lat.tables(rule)``), the
        statistics of each step computed once for every gate on that lattice; the levels
        are those for ``lat.ledger`` (``at_cap=False``: the cap left undecided). ``lazy``:
        each step's table computed when it is read (a recursion that may stop early)."""
        revert, final = self.levels(lat.ledger)

        def step(k: int) -> np.ndarray:
            where = (lat.ledger, lat.concurrent, k, self.min_drop, self.accept_shrink)
            stats, floor = step_statistics(*where), accept_floor(*where)
            return self._codes(np.int64(k), *stats, final if at_cap else None, revert, floor)

        def reverted(k: int, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
            where = (lat.ledger, lat.concurrent, k, self.min_drop, self.accept_shrink)
            if not self.min_runs <= k < self.max_runs or accept_floor(*where) <= self.accept_level:
                return None  # the table decides (before min_runs: none; the cap; accepts)
            lam, _, valid = step_statistics(*where)
            if not np.any(valid):
                return None
            flat = np.flatnonzero(self._early_reverts(lam, valid, revert) & (mass != 0))
            return np.divmod(flat, mass.shape[1])

        steps = lat.max_runs + 1
        return RevertSteps(step, steps, reverted) if lazy else [step(k) for k in range(steps)]

    @staticmethod
    def _early_reverts(lam, valid, revert_level) -> np.ndarray:
        """Before the cap: the cells past the revert boundary (``lambda >= revert_level``,
        where the statistic is defined)."""
        revert = lam >= revert_level
        if np.ndim(valid):
            revert &= valid
        return revert

    def _codes(self, k, lam, ref, valid, final, revert_level, floor=None) -> np.ndarray:
        """Codes from the statistics; ``floor``: the least accept statistic among the cells
        (``twostats.accept_floor``; below it the accept comparison is skipped: no cell
        accepts, the same codes)."""
        k = np.asarray(k)
        if k.ndim == 0 and k < self.max_runs:  # one step before the cap: no cap rule
            if k < self.min_runs or not np.any(valid):
                return np.zeros(np.shape(lam), dtype=np.int8)
            revert = self._early_reverts(lam, valid, revert_level)
            if floor is not None and floor > self.accept_level:
                return revert.view(np.int8) * np.int8(2)
            accept = ref <= self.accept_level
            if np.ndim(valid):
                accept &= valid
            if not self.accept_level < 0.0 < revert_level:  # else disjoint: lambda and the
                accept &= ~revert  # accept statistic share the sign of the observed drop
            codes = revert.view(np.int8) * np.int8(2)
            codes += accept.view(np.int8)
            return codes
        live = (k >= self.min_runs) & valid
        cap = k >= self.max_runs
        level = revert_level if final is None else final
        revert = live & np.where(cap, lam >= level, lam >= revert_level)
        accept = live & ~revert & (ref <= self.accept_level) & ~cap
        if final is not None:
            accept |= cap & ~revert
        else:
            revert &= ~cap
        return revert.astype(np.int8) * 2 + accept.astype(np.int8)

    def rule(self, k, a, b, n) -> np.ndarray:
        """The gate's verdict codes at cells ``(k, a, B, n)``: the one rule every path calls."""
        return self.verdicts(k, a, b, n)

    # --- one revision ------------------------------------------------------------------

    def counts(self, prior: RevisionStats, revision: RevisionStats) -> tuple[int, int, int, int]:
        """``(k, a, B, n)`` of a revision (``arms``: the store's contract)."""
        ledger_n, ledger_s = arms.ledger_of(prior)
        if self.design == "fixed":
            return revision.runs, revision.successes, ledger_s, ledger_n
        rev, conc = arms.pairs_of(prior, revision)
        k = rev.size
        return k, int(rev.sum()), ledger_s + int(conc.sum()), ledger_n + k

    def decide(
        self, prior: RevisionStats, revision: RevisionStats, p0: float | None = None
    ) -> GateDecision:
        """Verdict after the runs so far (``p0`` is not used: the test compares the arms)."""
        check_stats(prior, revision)
        k, a, b, n = self.counts(prior, revision)
        code = int(self.rule(k, a, b, n))
        reason = str(self.reasons(np.array([k]), np.array([a]), np.array([b]),
                                  np.array([n]), np.array([code]))[0])  # fmt: skip
        lam = float(drop_statistics(k, a, b, n, self.min_drop, self.accept_shrink)[0])
        p0 = b / n if n else float("nan")
        evidence = Evidence(k, a, p0, lam, "the prior's runs", prior_runs=n, prior_successes=b)
        return GateDecision(
            verdict=VERDICT_NAMES[code],
            reason_code=reason,
            reason=self.explain(reason, evidence),
            runs_used=k,
            statistic=lam,
            gate=self.name,
            p0=p0,
        )

    def reasons(self, k, a, b, n, verdict) -> np.ndarray:
        """Reason codes (``verdicts.REASONS``) of verdicts reached at cells ``(k, a, B, n)``."""
        lam, ref, valid = drop_statistics(k, a, b, n, self.min_drop, self.accept_shrink)
        k = np.asarray(k)
        out = np.where(np.asarray(verdict) != CONTINUE_CODE, "at_cap", "undecided").astype(object)
        early = (k < self.max_runs) & valid & (k >= self.min_runs)
        out[early & (ref <= self.accept_level)] = "accept_boundary"
        out[early & (lam >= self.cell_levels(k, n)[0])] = "revert_boundary"
        out[(k < self.min_runs) | ~valid & (k < self.max_runs)] = "too_few_runs"
        return out

    def explain(self, reason_code: str, evidence: Evidence) -> str:
        k, a, lam = evidence.runs, evidence.successes, evidence.statistic
        b, n = evidence.prior_successes, evidence.prior_runs
        ledger = n - k if self.design == "concurrent" else n
        revert, final = self.levels(ledger)
        accept_stat = float(drop_statistics(k, a, b, n, self.min_drop, self.accept_shrink)[1])
        observed = b / n - a / k if n and k else float("nan")  # B/n - a/k, as the statistic
        arm = f"revision {a}/{k} vs prior {b}/{n} ({self.design} design)"
        if ledger != self.ledger and self.recalibrate:
            arm += f"; levels calibrated for its {ledger}-run ledger (designed for {self.ledger})"
        why = {
            "too_few_runs": f"fewer than min_runs={self.min_runs} comparable runs",
            "revert_boundary": f"lambda={lam:.4f} >= {revert:.4f}: worse by min_drop",
            "accept_boundary": f"accept statistic={accept_stat:.4f} <= accept_level="
            f"{self.accept_level:.4f} (the observed drop {observed:.4f}): no drop of "
            f"min_drop",
            "at_cap": f"at max_runs={self.max_runs}: revert iff lambda >= "
            f"{final:.4f} (lambda={lam:.4f})",
            "undecided": f"lambda={lam:.4f} between the boundaries",
        }[reason_code]
        return f"{why}; {arm}"


CALIBRATION_POINTS = 41


UNCAPPED = Recursions(size=2)
"""The last whole uncapped recursions a cap scan walked, by calibration key and early revert
level (``remember_uncapped``): a calibration's trial there takes it instead of running."""


def remember_uncapped(gate: TwoSampleGate, masses: twolattice.HalfMasses) -> None:
    """Keep ``masses``, the recursion at 1/2 of ``gate`` with its cap left undecided (as a
    cap scan walks it, ``cap_scan``), for the calibration of these parameters: its trial at
    ``gate.revert_level`` then runs no recursion. The masses must be
    ``twolattice.half_masses`` of ``gate.tables(lat, at_cap=False)``, bit for bit."""
    key = (gate.key_at(gate.ledger), float(gate.revert_level))
    UNCAPPED.get(key, lambda: masses)


def grid_calibrated(**params: object) -> TwoSampleGate:
    """The gate calibrated on the coarse grid only (``calibrate.grid_calibrated_gate``)."""
    return grid_calibrated_gate(TwoSampleGate, _calibrated, params)


@lru_cache(maxsize=512)
@stored("two_sample._calibrated")
def _calibrated(key: tuple, certified: bool = True) -> Calibration:
    """Calibrated boundaries of the gate with these parameters (cached: deterministic)."""
    params = dict(key)
    rng = P0Range(params["p0_low"], params["p0_high"])
    probe = TwoSampleGate(**{**params, "final_level": 0.0})
    lat = probe.lattice

    # by level, shared with this key's other calibration (a later round retries a level)
    done: dict[float, twolattice.HalfMasses] = TRIALS.get(("two_sample", key), dict)

    def null_pass(revert_level: float, grid: np.ndarray, limit: float | None) -> NullPass:
        if revert_level not in done:
            walked = UNCAPPED.peek((key, revert_level))
            if walked is not None:
                done[revert_level] = walked
        if revert_level not in done:
            gate = TwoSampleGate(**{**params, "revert_level": revert_level, "final_level": 0.0})
            stop = None if limit is None else RevertLimit(grid, limit, lat.observations)
            masses = twolattice.half_masses(lat, gate.tables(lat, at_cap=False, lazy=True), stop)
            if masses is None:
                return NullPass.stopped(grid, stop.spent)
            done[revert_level] = masses
        masses = done[revert_level]
        res = twolattice.evaluate(lat, masses, grid, grid)
        a, b, n = lat.cells(lat.max_runs)
        lam = drop_statistics(lat.max_runs, a, b, n, probe.min_drop)[0]
        total = np.broadcast_to(a + b, lam.shape).ravel()
        obs = lat.max_runs + lat.prior_runs(lat.max_runs)
        return NullPass(grid, res.revert, lam.ravel(), masses.residual.ravel(), total, obs)

    def certify(revert_level: float, final: float, max_points: int):
        gate = TwoSampleGate(**{**params, "revert_level": revert_level, "final_level": final})
        return worst_case(gate, 0.0, gate.ledger, rng, target=gate.alpha, max_points=max_points)

    return calibrate(
        null_pass,
        certify if certified else None,
        probe.alpha,
        rng.grid(CALIBRATION_POINTS),
        probe.revert_level,
        _calibrated(key, certified=False) if certified else None,
        done.keys(),
    )
