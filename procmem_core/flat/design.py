"""The exact design of a flat rule: which rule keeps helpful procedures and excludes
harmful ones, within a horizon, at stated targets.

A *helpful* procedure lifts a task whose success rate without it is ``base`` by
``helpful_lift`` (it succeeds with ``p_h = base + helpful_lift`` when applied), a
*harmful* one by ``harmful_lift < helpful_lift`` (``p_x``). A rule (a member of a family's
``design_grid``: rule parameters x threshold x initial confidence) meets the targets when

    P(helpful still shown after ``within`` sessions) >= keep   and
    P(harmful excluded within ``within`` sessions) >= exclude,

both exact. Among those the pick is, by default (``objective="exposure"``), the one whose
harmful procedure is shown in the fewest sessions in expectation (``harmful_sessions``,
the time it spends in the prompt), ties to the larger smallest margin; with
``objective="margin"``, the one with the largest smallest margin over the two targets.
When none meets both, the pick is the closest (the smallest larger miss) and the design
says by how much each target is missed and, up to ``4 * within``, the shortest horizon
at which some rule meets both.

Step rules (their state is the confidence) are evaluated for every threshold and
initial at once by a backward recursion on the confidences built from the rule's own
``update`` (``chain.confidence_space``; in the seed's float arithmetic, the doubles
reachable within the horizon, which is all the recursion reads from the starts):
``V_k(x) = p V_{k-1}(up(x)) + (1 - p) V_{k-1}(down(x))`` for ``x`` at or above the
threshold (``V = 0`` below), ``V_0 = 1``,
so ``P(kept) = V_n(x0)`` and ``E[sessions shown] = sum_{k<n} V_k(x0)``, the same numbers
as ``flat_fate`` from each start. Rules whose state is their counts go through
``flat_fate``. The frontier is the Pareto set of (kept, excluded).

The targets are ``flat.targets.RuleTargets``; the table of every candidate with its exact
figures is built in ``flat.design_table``; this module picks from it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from procmem_core.display import column_table, field_table
from procmem_core.errors import ParameterError, check_choice
from procmem_core.flat.chain import run_lengths
from procmem_core.flat.design_table import Batch, Table, by_fate, by_grid, chunks
from procmem_core.flat.fate import flat_fate
from procmem_core.flat.prompt import DEFAULT_THRESHOLD
from procmem_core.flat.rule import DEFAULT_RULE, FLAT_RULES, DesignSpace, FlatRule
from procmem_core.flat.targets import RuleTargets
from procmem_core.gates.calibration_store import stored

__all__ = [
    "FAMILIES",
    "HORIZON_FACTOR",
    "OBJECTIVES",
    "DesignedRule",
    "RuleDesign",
    "RuleTargets",
    "design_rule",
    "evaluate",
]

FAMILIES = ("confidence", "baseline", "posterior")
"""The families a design is asked for, the seed's first (the sweep's answers and the
report's confidence section)."""

HORIZON_FACTOR = 4
"""How far past ``within`` the design looks for the shortest feasible horizon."""


@dataclass(frozen=True)
class DesignedRule:
    """One rule at the targets' horizon, exact: ``kept`` (helpful still shown),
    ``excluded`` (harmful excluded), ``harmful_sessions`` (expected sessions the harmful
    one is shown), and, for step rules, Brook-Evans mean run lengths (applied sessions
    until exclusion, no horizon) of the helpful and the harmful one."""

    rule: FlatRule
    threshold: float
    kept: float
    excluded: float
    harmful_sessions: float
    helpful_run_length: float = float("nan")
    harmful_run_length: float = float("nan")

    def meets(self, targets: RuleTargets) -> bool:
        return self.kept >= targets.keep - 1e-12 and self.excluded >= targets.exclude - 1e-12

    def shortfall(self, targets: RuleTargets) -> tuple[float, float]:
        """How far below ``keep`` and ``exclude`` it is (0 where it meets a target)."""
        return max(0.0, targets.keep - self.kept), max(0.0, targets.exclude - self.excluded)

    def describe(self) -> str:
        return f"{self.rule.describe()}, threshold {self.threshold:g}"


@dataclass(frozen=True)
class RuleDesign:
    """The answer: ``pick`` (meets the targets when ``feasible``, else the closest),
    the ``frontier`` (best excluded for each kept, fewest harmful sessions among ties),
    the ``reference`` (the seed's rule at the targets), ``shortest`` (the shortest
    horizon at which some rule meets both, when the targets cannot be met within
    ``within``; None when they can, or when none does up to ``HORIZON_FACTOR * within``)."""

    family: str
    targets: RuleTargets
    feasible: bool
    pick: DesignedRule
    frontier: tuple[DesignedRule, ...]
    candidates: int
    skipped: int
    reference: DesignedRule
    shortest: tuple[int, DesignedRule] | None = None

    def _repr_html_(self) -> str:
        """A notebook's view: the answer, then the pick and the frontier, a row per rule."""
        rows, fields = (self.pick, *self.frontier), ("kept", "excluded", "harmful_sessions")
        cols = {"rule": [r.describe() for r in rows]} | {
            f: [getattr(r, f) for r in rows] for f in fields
        }
        head = {"family": self.family, "feasible": self.feasible, "candidates": self.candidates}
        return field_table("RuleDesign", head) + column_table("pick, then frontier", cols)


def evaluate(
    rule: FlatRule, threshold: float, targets: RuleTargets, runs: bool = True
) -> DesignedRule:
    """One rule at the targets, by ``flat_fate`` (and, with ``runs``, ``run_lengths`` for
    step rules: in float arithmetic a renewal walk of about a second each; without, NaN)."""
    base = targets.base if rule.needs_baseline else None
    fh = flat_fate(targets.p_helpful, targets.within, rule, threshold, base)
    fx = flat_fate(targets.p_harmful, targets.within, rule, threshold, base)
    lengths = [float("nan"), float("nan")]
    if runs and not rule.needs_counts:
        for i, p in enumerate((targets.p_helpful, targets.p_harmful)):
            lengths[i] = run_lengths(p, rule, threshold, baseline=base).at(rule.start(base))
    return DesignedRule(
        rule, threshold, 1.0 - fh.p_excluded, fx.p_excluded, fx.expected_sessions_applied,
        *lengths,
    )  # fmt: skip


OBJECTIVES = ("exposure", "margin")
"""How the pick is chosen among the rules meeting both targets: the fewest sessions a
harmful procedure is shown (``exposure``), or the largest smaller margin over the two
targets (``margin``, a point on the frontier)."""


def design_rule(
    targets: RuleTargets,
    family: str = "confidence",
    separating: bool = False,
    objective: str = "exposure",
) -> RuleDesign:
    """Search the family's grid exactly (module docstring). Remembered per arguments
    (the search over the seed's float arithmetic takes tens of seconds; the answer is
    frozen), also across processes (``_design``).

    ``separating``: only rules whose break-even success rate lies strictly between the
    harmful and the helpful one's, so that beyond the horizon too the helpful procedure
    drifts up and the harmful one down (a horizon-only optimum may drift down for both
    and lose helpful procedures soon after the horizon).
    """
    if not isinstance(targets, RuleTargets):
        raise ParameterError("targets", targets, "a RuleTargets")
    check_choice("objective", objective, OBJECTIVES)
    FLAT_RULES.get(family, "family")
    return _design(targets, family, bool(separating), objective)


@functools.lru_cache(maxsize=8)
def _table(targets: RuleTargets, family: str) -> tuple[tuple, Table, int]:
    """The family's grid, every candidate's exact figures at ``targets`` and the members
    skipped: remembered per targets and family, so another objective or the separating
    search reads the same table (its arrays are read-only)."""
    grid = tuple(FLAT_RULES.get(family, "family").design_grid(targets.base))
    counts = grid[0].rule.needs_counts
    table, skipped = (by_fate if counts else by_grid)(grid, targets, targets.within)
    for name in Table.__dataclass_fields__:
        getattr(table, name).flags.writeable = False
    return grid, table, skipped


@functools.lru_cache(maxsize=16)
@stored("flat.design_rule")
def _design(targets: RuleTargets, family: str, separating: bool, objective: str) -> RuleDesign:
    """``design_rule`` after its checks, remembered per arguments: in the process and in
    ``calibration_store.current()`` (a file shared by a sweep's finalize step, the design
    tool and later runs when the experiments layer installs one)."""
    grid, table, skipped = _table(targets, family)
    counts = grid[0].rule.needs_counts
    if separating:
        table = _separating(grid, table, targets)
    ok = (table.kept >= targets.keep - 1e-12) & (table.excluded >= targets.exclude - 1e-12)
    best = _pick(table, targets, ok, objective)
    pick = _designed(grid, table, best, targets)
    return RuleDesign(
        family=family,
        targets=targets,
        feasible=bool(ok.any()),
        pick=pick,
        frontier=tuple(_designed(grid, table, i, targets, runs=False) for i in _pareto(table)),
        candidates=len(table.kept),
        skipped=skipped,
        reference=_reference(targets),
        shortest=None if ok.any() else _shortest(grid, table, targets, counts),
    )


@functools.lru_cache(maxsize=16)
def _reference(targets: RuleTargets) -> DesignedRule:
    """The seed's rule at the targets, remembered (every family's design reads it)."""
    return evaluate(DEFAULT_RULE, DEFAULT_THRESHOLD, targets)


def _separating(grid, table: Table, targets: RuleTargets) -> Table:
    be = np.array(
        [ds.rule.break_even_rate(targets.base if ds.rule.needs_baseline else None) for ds in grid]
    )
    ok = ((be > targets.p_harmful) & (be < targets.p_helpful))[table.space.astype(int)]
    if not ok.any():
        raise ParameterError(
            "separating", True, "a family with a rule whose break-even lies between the "
            f"harmful and helpful success rates ({targets.p_harmful:g}, {targets.p_helpful:g})",
        )  # fmt: skip
    return Table(*(getattr(table, f)[ok] for f in Table.__dataclass_fields__))


def _pick(table: Table, targets: RuleTargets, ok: np.ndarray, objective: str) -> int:
    margin = np.minimum(table.kept - targets.keep, table.excluded - targets.exclude)
    if ok.any():
        idx = np.flatnonzero(ok)
        m, n = -np.round(margin[idx], 12), np.round(table.sessions[idx], 9)
        order = np.lexsort((m, n) if objective == "exposure" else (n, m))
        return int(idx[order[0]])
    miss_k = np.maximum(0.0, targets.keep - table.kept)
    miss_x = np.maximum(0.0, targets.exclude - table.excluded)
    worse = np.round(np.maximum(miss_k, miss_x), 12)
    order = np.lexsort((table.sessions, np.round(miss_k + miss_x, 12), worse))
    return int(order[0])


def _designed(grid, table: Table, i: int, targets: RuleTargets, runs: bool = True):
    member = grid[int(table.space[i])].rule
    rule = member if member.needs_counts else member.with_initial(float(table.initial[i]))
    if runs:
        return evaluate(rule, float(table.threshold[i]), targets)
    return DesignedRule(
        rule, float(table.threshold[i]), float(table.kept[i]), float(table.excluded[i]),
        float(table.sessions[i]),
    )  # fmt: skip


def _pareto(table: Table) -> np.ndarray:
    """Candidates no other beats on both kept and excluded (fewest sessions among ties)."""
    kept, excl = np.round(table.kept, 12), np.round(table.excluded, 12)
    order = np.lexsort((table.sessions, -excl, -kept))
    running = np.maximum.accumulate(excl[order])
    better = np.concatenate(([True], excl[order][1:] > running[:-1]))
    return order[better]


def _shortest(grid, table: Table, targets: RuleTargets, counts: bool):
    """The shortest horizon up to ``HORIZON_FACTOR * within`` at which some candidate
    meets both targets (kept only falls with the horizon, so only the members with a
    candidate keeping enough at ``within`` can meet both later)."""
    longest = HORIZON_FACTOR * targets.within
    if counts:
        fh, fx = by_fate(grid, _at(targets, longest), longest)[0].curves
        kept = 1.0 - np.array([f.excluded_by_session for f in fh])
        excl = np.array([f.excluded_by_session for f in fx])
        good = (kept >= targets.keep - 1e-12) & (excl >= targets.exclude - 1e-12)
        hits = np.flatnonzero(good[:, targets.within :].any(axis=0))
        if hits.size == 0:
            return None
        n = targets.within + 1 + int(hits[0])
        i = int(np.flatnonzero(good[:, n - 1])[0])
        rule, t = grid[int(table.space[i])].rule, float(table.threshold[i])
        return n, evaluate(rule, t, _at(targets, n))
    keeps = table.kept >= targets.keep - 1e-12
    hopeful = np.unique(table.space[keeps]).astype(int)
    # (a separating search passes only separating members' candidates, so only they are here)
    if hopeful.size == 0:
        return None
    grid = _narrowed(grid, table, keeps)
    # walks to 2x within first, then twice as far up to ``longest``: a walk to H gives V_k
    # exactly for every k <= H, so a hit found within H is the earliest of any longer walk
    # (the spaces a walk builds grow fast with its horizon)
    horizon, best = min(longest, 2 * targets.within), None
    while True:
        best = _earliest(grid, hopeful, targets, horizon)
        if best is not None or horizon >= longest:
            break
        horizon = min(longest, 2 * horizon)
    if best is None:
        return None
    k, _, rule, threshold = best
    return k, evaluate(rule, threshold, _at(targets, k))


def _narrowed(grid, table: Table, keeps: np.ndarray) -> list:
    """The grid with each member's thresholds and initials cut to those of its candidates
    that keep enough at ``within`` (sorted, as in the grid). Only they can meet both later:
    kept is non-increasing in the horizon in float arithmetic too (``V_1 <= V_0 = 1``, as
    ``p + fl(1 - p)`` rounds to at most 1, and ``fl(p a) + fl(q b)`` is monotone in ``a``
    and ``b``), so the walk from fewer starts, over fewer thresholds, finds the same
    earliest candidate with the same figures (each depends only on its own cone)."""
    out = list(grid)
    rows = np.flatnonzero(keeps)
    rows = rows[np.argsort(table.space[rows], kind="stable")]
    space = table.space[rows].astype(int)
    members, first = np.unique(space, return_index=True)
    for m, lo, hi in zip(members, first, [*first[1:], len(rows)], strict=True):
        mine = rows[lo:hi]
        thresholds = tuple(float(t) for t in np.unique(table.threshold[mine]))
        initials = tuple(float(x) for x in np.unique(table.initial[mine]))
        out[m] = DesignSpace(grid[m].rule, thresholds, initials)
    return out


def _earliest(grid, members_hopeful: np.ndarray, targets: RuleTargets, horizon: int):
    """The earliest horizon in ``(within, horizon]`` at which a candidate of the hopeful
    members meets both targets, with the largest margin there: ``(k, -margin, rule,
    threshold)``, or None."""
    best = None  # (k, -margin, rule, threshold): the earliest, then the largest margin
    for members in chunks(members_hopeful):
        batch = Batch(grid, targets.base, members=members, horizon=horizon)
        g = batch.cand_g
        for k, (kept, vx) in batch.walk((targets.p_helpful, targets.p_harmful), horizon):
            if best is not None and k > best[0]:
                break
            if k <= targets.within:
                continue
            excl = 1.0 - vx
            good = (kept >= targets.keep - 1e-12) & (excl >= targets.exclude - 1e-12)
            if good.any():
                margin = np.where(good, np.minimum(kept - targets.keep, excl - targets.exclude), -1)
                i = int(np.argmax(margin))
                if best is None or (k, -margin[i]) < best[:2]:
                    member = grid[int(batch.cand_space[i])].rule
                    rule = member.with_initial(float(batch.states[g[i]]))
                    best = (k, -float(margin[i]), rule, float(batch.cand_thr[i]))
                break
    return best


def _at(targets: RuleTargets, within: int) -> RuleTargets:
    return RuleTargets(
        targets.helpful_lift, targets.harmful_lift, targets.base, targets.keep,
        targets.exclude, within,
    )  # fmt: skip
