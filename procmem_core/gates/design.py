"""How many runs a revision decision takes: the design question, answered exactly.

``design_gate(DesignQuestion(alpha, beta, min_drop, ledger, concurrent, p0_range))``
answers, for each gate family, the smallest ``max_runs`` at which the false-revert rate
is at most ``alpha`` and the power against a drop of ``min_drop`` at least ``1 - beta``
at every p0 in the range (the prior's ledger of ``ledger`` runs mixed in exactly), with
the expected runs of each arm when nothing changed and at the drop, the gate's
``make_gate`` parameters; or "infeasible" and what is feasible instead.

Method, per family: with the boundary that accepts least (the most powerful member), the
smallest feasible ``max_runs`` is found by bisection over ``[min_runs, max_runs]`` on a
coarse p0 grid (power grows with the cap; the answer is then checked at the grid
``worst.worst_case`` refines, and the boundaries of the calibrated families are certified
there); the accept boundary is then raised as far as power allows (fewer runs when
nothing changed). Fixed-ledger designs are checked first against the one-sample bound
(``ledger_power_bound``): with the revision's rate known exactly, the most powerful
level-alpha test of the ledger alone (Neyman-Pearson, randomized) bounds every gate's
power, so when it is below ``1 - beta`` no cap helps and the answer says which ledger
size would be needed (a necessary size) and what concurrent control takes.

That is the ``max_runs`` objective. The default, ``null_runs`` (``objective``, ``weight``:
``early_stop.Objective``), answers the two-sample families from their frontier instead
(``early_stop``): from the smallest feasible cap to ``max_runs``, per cap the loosest
accept level meeting both targets; the point with the fewest expected pairs when nothing
changed at the worst p0 is refined and certified, and the answer carries the frontier and
the Wald-Wolfowitz bound at its achieved error rates (``pairbound``). When the scan finds
no cap because its early revert boundary spends more than alpha, the most powerful
member at ``max_runs`` (boundaries calibrated, early revert raised) is certified before
the family is called infeasible.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np

from procmem_core.display import column_table, record_html
from procmem_core.gates import calibrated_sprt, two_sample
from procmem_core.gates.arms import arm_runs
from procmem_core.gates.base import Gate, OperatingCurve
from procmem_core.gates.calibrated_sprt import CalibratedSPRTGate
from procmem_core.gates.calibration_store import stored
from procmem_core.gates.design_scans import SEARCH_POINTS, paired_scan, two_sample_scan
from procmem_core.gates.discordant import DiscordantSPRTGate
from procmem_core.gates.early_stop import (
    SHRINK,
    FrontierPoint,
    NullRunsBound,
    choose,
    frontier,
    frontier_caps,
    null_runs_bound,
    refine,
)
from procmem_core.gates.eprocess import MixtureEGate
from procmem_core.gates.ledger_bound import ledger_needed, ledger_power_bound
from procmem_core.gates.question import DesignQuestion
from procmem_core.gates.sprt import SPRTGate
from procmem_core.gates.tolerance import at_least, at_most
from procmem_core.gates.two_sample import TwoSampleGate
from procmem_core.gates.worst import worst_case


@dataclass(frozen=True)
class FamilyAnswer:
    """One family's answer. ``max_runs``/``config``: the smallest feasible cap and the gate
    (``make_gate(**config)``), else the most powerful member at the largest cap asked;
    ``false_revert`` (bound, the worst over the range) and ``power`` (bound, the least);
    ``runs_null``/``runs_alt``: the worst expected runs ``(revision, prior)`` over the
    range with nothing changed / at the drop; ``note``: what is feasible instead."""

    family: str
    design: str
    feasible: bool
    max_runs: int
    config: dict
    false_revert: float
    power: float
    runs_null: tuple[float, float]
    runs_alt: tuple[float, float]
    note: str = ""
    frontier: tuple[FrontierPoint, ...] = ()
    """Per cap, the best configuration on the search grid (families with a frontier)."""
    bound: NullRunsBound | None = None
    """Expected pairs when nothing changed against the Wald-Wolfowitz bound."""


@dataclass(frozen=True)
class Family:
    """A gate family: ``build(max_runs, knob, fast)`` (``fast``: boundaries calibrated on
    the coarse grid only, for the search); the knob moves its accept boundary from
    ``most`` (most powerful) to ``least``; ``prior_runs`` is its ledger in the exact OC."""

    name: str
    design: str
    build: Callable[[int, float | None, bool], Gate]
    most: float | None
    least: float | None
    prior_runs: int | None
    fixed_ledger: bool
    scan: Callable[[DesignQuestion], int | None] | None = None
    """Every cap at once, where the family allows it: the smallest cap whose most
    powerful member meets both targets on the grid (None: none up to ``max_runs``)."""
    early_stop: dict | None = None
    """``TwoSampleGate`` parameters of the family's early-stopping members (``frontier``),
    used by the objectives other than ``max_runs``."""


def _calibrated(cls: type, fast_build: Callable, **fixed: object) -> Callable:
    def build(k: int, knob: float | None, fast: bool) -> Gate:
        params = {**fixed, "max_runs": k, "accept_level": knob}
        return fast_build(**params) if fast else cls(**params)

    return build


def families(q: DesignQuestion) -> list[Family]:
    """The families a question is asked of (the concurrent ones need q > 0 to be used)."""
    common = dict(min_drop=q.min_drop, alpha=q.alpha, beta=q.beta, min_runs=q.min_runs)
    span = dict(p0_low=q.p0_low, p0_high=q.p0_high)
    mid = (q.p0_low + q.p0_high) / 2.0
    wald_b = math.log(q.beta / (1.0 - q.alpha))
    n0 = max(q.ledger, 1)
    fixed = dict(**common, **span, ledger=n0)
    concurrent = dict(**common, **span, ledger=q.ledger, design="concurrent")

    def discordant(k: int, x: float | None, _: bool) -> Gate:
        return DiscordantSPRTGate(**{**common, "beta": x or q.beta}, max_runs=k, design_p0=mid)

    def eprocess(k: int, x: float | None, _: bool) -> Gate:
        return MixtureEGate(alpha=q.alpha, min_drop=q.min_drop, min_runs=q.min_runs, max_runs=k,
                            accept_below=x or 0.0)  # fmt: skip

    return [
        Family("sprt", "fixed",
               lambda k, _, __: SPRTGate(**common, max_runs=k, at_cap="accept"),
               None, None, q.ledger, True),
        Family("calibrated_sprt", "fixed",
               _calibrated(CalibratedSPRTGate, calibrated_sprt.grid_calibrated, **fixed),
               -60.0, wald_b, n0, True),
        Family("two_sample", "fixed",
               _calibrated(TwoSampleGate, two_sample.grid_calibrated, **fixed, design="fixed"),
               -60.0, wald_b, n0, True, two_sample_scan(-60.0, **fixed, design="fixed"),
               {**fixed, "design": "fixed", "accept_shrink": SHRINK}),
        Family("two_sample", "concurrent",
               _calibrated(TwoSampleGate, two_sample.grid_calibrated, **concurrent),
               -60.0, wald_b, q.ledger, False, two_sample_scan(-60.0, **concurrent),
               {**concurrent, "accept_shrink": SHRINK}),
        Family("discordant_sprt", "concurrent", discordant, 1e-9, q.beta, 0, False,
               paired_scan(discordant, 1e-9)),
        Family("eprocess", "concurrent", eprocess, 0.0, 0.2, 0, False,
               paired_scan(eprocess, 0.0)),
    ]  # fmt: skip


@dataclass(frozen=True)
class Fit:
    """A gate with its false-revert and power on a grid (or certified)."""

    gate: Gate
    false_revert: float
    power: float
    null: OperatingCurve
    alt: OperatingCurve


def evaluate(family: Family, gate: Gate, q: DesignQuestion, certify: bool = False) -> Fit:
    """The gate's worst false revert and power over the range (grid, or bounds)."""
    rng = q.p0_range
    if certify:
        certified = getattr(gate, "certificate", None)  # the calibrated families have one
        known = certified() if certified else None
        same = known is not None and (gate.p0_low, gate.p0_high) == (rng.low, rng.high)
        fr = known if same else worst_case(gate, 0.0, family.prior_runs, rng, target=q.alpha)
        pw = worst_case(gate, q.min_drop, family.prior_runs, rng, target=1 - q.beta)
        return Fit(gate, fr.bound, pw.bound, fr.curve, pw.curve)
    grid = rng.grid(SEARCH_POINTS)
    null = gate.operating_curve(grid, 0.0, family.prior_runs)
    alt = gate.operating_curve(grid, q.min_drop, family.prior_runs)
    return Fit(gate, float(null.p_revert.max()), float(alt.p_revert.min()), null, alt)


def meets(fit: Fit, q: DesignQuestion) -> bool:
    return bool(at_most(fit.false_revert, q.alpha) and at_least(fit.power, 1.0 - q.beta))


def passes(family: Family, gate: Gate, q: DesignQuestion) -> bool:
    """``meets(evaluate(family, gate, q), q)`` on the search grid, the power (the costly
    curve off the null) evaluated only when the false revert already meets its target."""
    grid = q.p0_range.grid(SEARCH_POINTS)
    null = gate.operating_curve(grid, 0.0, family.prior_runs)
    if not at_most(float(null.p_revert.max()), q.alpha):
        return False
    alt = gate.operating_curve(grid, q.min_drop, family.prior_runs)
    return bool(at_least(float(alt.p_revert.min()), 1.0 - q.beta))


def _runs(gate: Gate, fit: Fit, share: float) -> tuple[tuple[float, float], tuple[float, float]]:
    out = []
    for curve in (fit.null, fit.alt):
        rev, prior = arm_runs(gate, curve, share)
        out.append((float(np.max(rev)), float(np.max(prior))))
    return out[0], out[1]


def _smallest_cap(family: Family, q: DesignQuestion) -> int:
    """The smallest cap whose most powerful member meets both targets on the grid
    (bisection: the caller has checked that ``q.max_runs`` does)."""
    lo, hi = q.min_runs - 1, q.max_runs
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if passes(family, family.build(mid, family.most, True), q):
            hi = mid
        else:
            lo = mid
    return hi


def _loosest_accept(family: Family, q: DesignQuestion, cap: int) -> float | None:
    """The accept boundary nearest ``family.least`` that still meets both targets."""
    if family.most is None:
        return None
    if passes(family, family.build(cap, family.least, True), q):
        return family.least
    lo, hi = family.most, family.least
    for _ in range(KNOB_STEPS):
        mid = (lo + hi) / 2.0
        if passes(family, family.build(cap, mid, True), q):
            lo = mid
        else:
            hi = mid
    return lo


KNOB_STEPS = 4
CERTIFY_STEPS = 6


def answer(family: Family, q: DesignQuestion) -> FamilyAnswer:
    """One family's answer to the question (module docstring)."""
    share = q.concurrent if q.concurrent > 0 or family.fixed_ledger else 0.5
    if family.scan is not None:
        found = family.scan(q)
    else:
        biggest = passes(family, family.build(q.max_runs, family.most, True), q)
        found = q.max_runs if biggest else None
    revert = None
    if found is None:
        fit = evaluate(family, family.build(q.max_runs, family.most, False), q, certify=True)
        if not meets(fit, q):
            null, alt = _runs(fit.gate, fit, share)
            return FamilyAnswer(family.name, family.design, False, q.max_runs,
                                fit.gate.config(), fit.false_revert, fit.power, null, alt,
                                infeasible_note(family, q, fit))  # fmt: skip
        # the scan keeps the early revert boundary; calibration raised it, and then it meets
        found, revert = q.max_runs, getattr(fit.gate, "revert_level", None)
    if family.early_stop is not None and q.objective != "max_runs":
        early = _early_stop_answer(family, q, found, share, revert)
        if early is not None:
            return early
    cap = found if family.scan is not None else _smallest_cap(family, q)
    knob = _loosest_accept(family, q, cap)
    for _ in range(CERTIFY_STEPS):
        fit = evaluate(family, family.build(cap, knob, False), q, certify=True)
        if meets(fit, q) or cap >= q.max_runs:
            break
        cap = min(q.max_runs, cap + max(1, cap // 20))
    null, alt = _runs(fit.gate, fit, share)
    notes = [] if meets(fit, q) else [infeasible_note(family, q, fit)]
    if q.concurrent == 0 and not family.fixed_ledger:
        notes.append("needs concurrent control (--concurrent q > 0); runs shown at q = 0.5")
    return FamilyAnswer(family.name, family.design, meets(fit, q), cap, fit.gate.config(),
                        fit.false_revert, fit.power, null, alt, "; ".join(notes))  # fmt: skip


BOUND_POINTS = 27


def _early_stop_answer(
    family: Family, q: DesignQuestion, smallest: int, share: float, revert: float | None
) -> FamilyAnswer | None:
    """The frontier from the smallest feasible cap to ``q.max_runs`` (``early_stop``), its
    point the objective prefers, refined and then certified: false revert bounded above and
    power below between grid points; the accept level is lowered (more power) until the
    bound meets the target. ``revert``: an early revert level calibration had to raise.
    None when no accept level of the search grid meets both targets (the caller then
    answers with the most powerful member, as for the ``max_runs`` objective)."""
    grid, params = q.p0_range.grid(SEARCH_POINTS), dict(family.early_stop or {})
    if revert is not None:
        params["revert_level"] = revert
    points = frontier(params, grid, q.alpha, q.beta, frontier_caps(smallest, q.max_runs))
    if not points:  # no accept level on the search grid keeps the power: no early stop
        return None
    point = refine(params, choose(points, q.goal), grid, q.alpha, q.beta)
    params["accept_shrink"] = point.accept_shrink
    level = point.accept_level
    for _ in range(CERTIFY_STEPS):
        gate = TwoSampleGate(**params, max_runs=point.max_runs, accept_level=level)
        fit = evaluate(family, gate, q, certify=True)
        if meets(fit, q):
            break
        level *= 1.1
    null, alt = _runs(fit.gate, fit, share)
    bound = null_runs_bound(fit.gate, q.p0_range.grid(BOUND_POINTS), q.min_drop,
                            family.prior_runs or 0)  # fmt: skip
    note = "" if meets(fit, q) else infeasible_note(family, q, fit)
    return FamilyAnswer(family.name, family.design, meets(fit, q), point.max_runs,
                        fit.gate.config(), fit.false_revert, fit.power, null, alt, note,
                        points, bound)  # fmt: skip


def infeasible_note(family: Family, q: DesignQuestion, fit: Fit) -> str:
    """What an infeasible family would need."""
    if fit.false_revert > q.alpha:
        return (f"its boundaries do not hold alpha at the worst case (false revert "
                f"{fit.false_revert:.3f}); the calibrated families do")  # fmt: skip
    head = f"best power {fit.power:.3f} at {fit.gate.max_runs} runs"
    if family.fixed_ledger:
        grid = q.p0_range.grid(SEARCH_POINTS)
        bound = min(ledger_power_bound(q.ledger, p, q.min_drop, q.alpha) for p in grid)
        if bound >= 1.0 - q.beta:
            return (f"{head}; the ledger allows it (one-sample bound {bound:.3f}): "
                    "a larger max_runs is needed")  # fmt: skip
        need = ledger_needed(q, grid)
        size = f"a ledger of at least {need} runs" if need else "a far longer ledger"
        return (f"{head}; a {q.ledger}-run ledger caps any test's power at {bound:.3f} "
                f"(one-sample bound), so it needs {size} or concurrent control")  # fmt: skip
    return f"{head}; a larger max_runs is needed"


@dataclass(frozen=True)
class GateDesign:
    """The answers of every family to one question."""

    question: DesignQuestion
    answers: tuple[FamilyAnswer, ...]

    @property
    def feasible(self) -> tuple[FamilyAnswer, ...]:
        """Feasible answers (the concurrent ones only when the question has concurrent
        control), best first: by the objective, with the sessions of both arms when nothing
        changed as its null runs (``max_runs``: the former order, fewest expected revision
        runs when nothing changed plus at the drop)."""
        q = self.question
        usable = [a for a in self.answers if a.feasible and (
            a.design == "fixed" or q.concurrent > 0)]  # fmt: skip
        return self.ranked(usable)

    @property
    def with_concurrent_control(self) -> tuple[FamilyAnswer, ...]:
        """The feasible concurrent answers, best first by the objective (what a question
        without concurrent control would get with it, at share 0.5)."""
        return self.ranked([a for a in self.answers if a.feasible and a.design == "concurrent"])

    def ranked(self, answers: list[FamilyAnswer]) -> tuple[FamilyAnswer, ...]:
        """``answers`` best first by the question's objective (the order of ``feasible``)."""
        q = self.question

        def key(a: FamilyAnswer) -> tuple:
            if q.objective == "max_runs":
                return (a.runs_null[0] + a.runs_alt[0], a.family)
            return (q.goal.score(a.max_runs, sum(a.runs_null)), a.family)

        return tuple(sorted(answers, key=key))

    @property
    def chosen(self) -> FamilyAnswer | None:
        """The design's pick: the first of ``feasible`` (None when no family meets both
        targets). The design tool, the report's prescription and ``prescribed_gate``
        all use this one."""
        found = self.feasible
        return found[0] if found else None

    def _repr_html_(self) -> str:
        """A notebook's view: the question, then one row per family's answer."""
        columns = {f.name: [getattr(a, f.name) for a in self.answers] for f in fields(FamilyAnswer)}
        return record_html(self.question, "question") + column_table("answers", columns)


@stored("design.design_gate")
def design_gate(question: DesignQuestion) -> GateDesign:
    """Every family's answer to ``question`` (module docstring); kept in
    ``calibration_store.current()`` (seconds per question; the jobs of a sweep, its
    finalize step and later runs ask the same ones)."""
    return GateDesign(question, tuple(answer(f, question) for f in families(question)))
