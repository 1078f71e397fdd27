"""The flat rule as a Markov chain on its confidence grid: run lengths, first passages and
the chain that never absorbs because excluded procedures are shown again.

A step rule on the decimal grid (``arithmetic="grid"``) keeps its confidence on a finite
set closed under its ``update`` (sums of its moves with the clamps, on the ``snap``
grid): ``confidence_space`` finds it by calling the rule's own ``update`` from the
starting confidences. In the seed's float arithmetic two orders of the same outcomes
can land on different doubles, and the walks that balance ``reward`` against
``penalty`` reach new doubles without end, so no closed set exists: ``confidence_space``
then takes a ``horizon`` (the doubles reachable within that many updates, exact for
any question about at most that many sessions), and the questions without a horizon are
answered by renewal at the clamps (``float_excursions``: ``min(ceiling, .)`` and
``max(floor, .)`` return the same double whatever the path, so a walk that reaches one
starts afresh; between two such returns the walk leaves a bounded interval in
geometrically distributed time, so a forward recursion over the doubles it reaches ends
with a residual mass below ``FLOAT_TOLERANCE``). On the grid:

- ``run_lengths``: the expected number of applied sessions until the confidence falls
  below the threshold, from every state at once, by the Markov-chain method of Brook and
  Evans (1972, Biometrika 59, "An approach to the probability distribution of cusum run
  length"): with ``Q`` the transitions among states at or above the threshold,
  ``m = (I - Q)^-1 1`` and ``E[N^2] = (I - Q)^-1 (1 + 2 Q m)``. States from which the
  procedure is excluded with probability below 1 have an infinite run length.
- ``hit_before``: the probability of reaching ``upper`` before falling below the
  threshold, ``h = Q h + b`` (``b``: one step to ``upper``), beside Wald's
  approximation without overshoot, ``wald_hit_before``: ``(1 - e^{t(a - x)}) /
  (e^{t(u - x)} - e^{t(a - x)})`` with ``t != 0`` solving ``p e^{t up} + (1 - p)
  e^{-t down} = 1``.
- ``reshow_fate``: an explore rate or a reviewer shows an excluded procedure with
  probability ``e`` per session, so the threshold is no longer absorbing. The long-run
  share of sessions it is shown (``pi . s`` with ``s = 1`` above the threshold and
  ``e`` below, ``pi`` the long-run distribution from the start: closed classes and their
  stationary laws, weighted by the probabilities of ending in each), its mean stay above
  the threshold per visit (``pi(A) / sum_{i not in A, j in A} pi_i P_ij``, renewal-
  reward), and, over a horizon, the expected sessions shown, by a forward recursion.

A rule whose state is its counts (``needs_counts``: the posterior rule) has no finite
chain; ``flat_fate`` gives its fate over a horizon.

In float arithmetic ``run_lengths`` and ``hit_before`` give the same figures from the
starts asked for, by the renewal argument (module ``flat.excursion``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, sparse
from scipy.sparse import linalg as splinalg

from procmem_core.errors import ParameterError, check_instance, check_probability
from procmem_core.flat.excursion import excursion, float_run_lengths
from procmem_core.flat.prompt import DEFAULT_THRESHOLD
from procmem_core.flat.rule import DEFAULT_RULE, FlatRule, StepRule, passes_threshold

MAX_STATES = 50_000
"""The largest confidence set a chain is built on (a rule with steps off a coarse
decimal grid can need many)."""


@dataclass(frozen=True)
class ConfidenceSpace:
    """Confidences closed under the rule's update: ``states`` (sorted), and the index of
    the state after a good (``up``) and a bad (``down``) session, -1 when it falls below
    the threshold and the space keeps no state below it (an absorbing threshold)."""

    states: np.ndarray
    up: np.ndarray
    down: np.ndarray
    shown: np.ndarray  # states at or above the threshold
    depth: np.ndarray | None = None  # updates from the nearest start (breadth first)

    def index(self, confidence: float) -> int:
        """The state's position; a ``ParameterError`` when it is not in the space."""
        c = float(confidence)
        i = int(np.searchsorted(self.states, c))
        if i >= len(self.states) or self.states[i] != c:
            raise ParameterError("confidence", confidence, "a confidence the chain reaches")
        return i


def _check_chain(p: float, rule: FlatRule, threshold: float, baseline: float | None):
    p = check_probability("p", p)
    threshold = check_probability("threshold", threshold)
    check_instance("rule", rule, FlatRule)
    if rule.needs_counts:
        raise ParameterError(
            "rule", rule.name, "a rule whose state is its confidence (this one's state is "
            "its counts, which never repeat: use flat_fate over a horizon)",
        )  # fmt: skip
    if baseline is not None:
        baseline = check_probability("baseline", baseline)
    rule.check_evidence(0, 0, baseline)
    return p, threshold, baseline


def confidence_space(
    rule: FlatRule,
    threshold: float,
    starts: ArrayLike,
    baseline: float | None = None,
    keep_below: bool = False,
    max_states: int = MAX_STATES,
    horizon: int | None = None,
) -> ConfidenceSpace:
    """The confidences reachable from ``starts`` by ``rule.update`` (breadth first),
    within ``horizon`` updates when given (required in float arithmetic: module
    docstring); a move from a state first reached at the horizon that leaves the space
    is marked ``-1``, and no question about ``horizon`` sessions follows it.

    Below the threshold the walk stops unless ``keep_below`` (a procedure that can be
    shown again keeps moving there).
    """
    if horizon is None and rule.arithmetic == "float":
        raise ParameterError(
            "horizon", None, "a number of sessions: in the seed's float arithmetic the "
            "reachable doubles form no closed set (use flat_fate, or arithmetic='grid')",
        )  # fmt: skip
    start = np.unique(rule.settle(np.atleast_1d(np.asarray(starts, dtype=float))))
    bad = ~((start >= 0) & (start <= 1))  # NaN fails both
    if bad.any():
        raise ParameterError("starts", float(start[bad][0]), "confidences in [0, 1]")
    ok = np.ones(len(start), bool) if keep_below else passes_threshold(start, threshold)
    frontier = start[np.asarray(ok, bool)]
    done, ups, downs = [], [], []  # every state's two moves, each computed once
    known = frontier
    depth = 0  # of the frontier's states
    while frontier.size:
        up = rule.update(frontier, True, baseline=baseline)
        down = rule.update(frontier, False, baseline=baseline)
        done.append(frontier), ups.append(up), downs.append(down)
        if horizon is not None and depth >= horizon:
            break
        depth += 1
        moved = np.concatenate([up, down])
        if not keep_below:
            moved = moved[np.asarray(passes_threshold(moved, threshold), bool)]
        frontier = _new(np.unique(moved), known)
        known = np.sort(np.concatenate((known, frontier)), kind="stable")  # two sorted runs
        if known.size > max_states:
            raise ParameterError(
                "rule", rule.describe(), f"a chain of at most {max_states} confidences "
                "(put reward, penalty, threshold and initial on a coarser decimal grid, or "
                "ask about fewer sessions)",
            )  # fmt: skip
    if not done:
        empty = np.zeros(0, dtype=np.int64)
        return ConfidenceSpace(np.zeros(0), empty, empty, np.zeros(0, bool), empty)
    states = np.concatenate(done)
    order = np.argsort(states, kind="stable")
    states = states[order]
    depth = np.concatenate([np.full(f.size, d, dtype=np.int64) for d, f in enumerate(done)])
    up, down = np.concatenate(ups)[order], np.concatenate(downs)[order]
    shown = np.asarray(passes_threshold(states, threshold), bool)
    bounded = horizon is not None
    return ConfidenceSpace(
        states,
        _positions(states, up, keep_below, threshold, bounded),
        _positions(states, down, keep_below, threshold, bounded),
        shown,
        depth[order],
    )


def _new(values: np.ndarray, known: np.ndarray) -> np.ndarray:
    """The sorted unique ``values`` not in the sorted ``known`` (``np.setdiff1d`` without
    re-sorting ``known``: a binary search per value)."""
    if not known.size:
        return values
    at = np.searchsorted(known, values).clip(max=known.size - 1)
    return values[known[at] != values]


def _positions(states, moved, keep_below, threshold, bounded=False) -> np.ndarray:
    idx = np.searchsorted(states, moved).clip(max=max(len(states) - 1, 0))
    found = states[idx] == moved if len(states) else np.zeros(0, bool)
    if not keep_below:
        below = ~np.asarray(passes_threshold(moved, threshold), bool)
        idx = np.where(below, -1, idx)
        found |= below
    if bounded:  # beyond the horizon: never followed
        return np.where(found, idx, -1)
    if not found.all():  # a closed set by construction: this is a bug, not bad input
        raise RuntimeError("confidence_space is not closed under the rule's update")
    return idx


def _transient_matrix(space: ConfidenceSpace, p: float) -> tuple:
    """``Q`` among the states at or above the threshold and ``b`` (one step below it)."""
    n = len(space.states)
    rows = np.concatenate([np.arange(n), np.arange(n)])
    cols = np.concatenate([space.up, space.down])
    w = np.concatenate([np.full(n, p), np.full(n, 1.0 - p)])
    inside = (cols >= 0) & (w > 0)
    q = sparse.csr_matrix((w[inside], (rows[inside], cols[inside])), shape=(n, n))
    out = np.bincount(rows[~inside & (w > 0)], weights=w[~inside & (w > 0)], minlength=n)
    return q, out


def _solve(a, rhs) -> np.ndarray:
    if a.shape[0] == 0:
        return np.zeros(0)
    return np.atleast_1d(splinalg.spsolve(sparse.csc_matrix(a), rhs))


@dataclass(frozen=True)
class RunLengths:
    """Expected applied sessions until exclusion (and its SD) from every state."""

    p: float
    threshold: float
    states: np.ndarray
    expected: np.ndarray
    sd: np.ndarray
    p_excluded_eventually: np.ndarray

    def at(self, confidence: float) -> float:
        """The expected run length from ``confidence`` (a state of the chain)."""
        i = int(np.searchsorted(self.states, float(confidence)))
        if i >= len(self.states) or self.states[i] != float(confidence):
            raise ParameterError(
                "confidence", confidence, f"one of the chain's {len(self.states)} states"
            )
        return float(self.expected[i])


def run_lengths(
    p: float,
    rule: FlatRule = DEFAULT_RULE,
    threshold: float = DEFAULT_THRESHOLD,
    starts: ArrayLike | None = None,
    baseline: float | None = None,
) -> RunLengths:
    """Brook-Evans run lengths from every state reachable from ``starts`` (default: the
    rule's start); in float arithmetic, from ``starts`` only, by renewal at the clamps
    (``flat.excursion``)."""
    p, threshold, baseline = _check_chain(p, rule, threshold, baseline)
    if starts is None:
        starts = rule.start(baseline)
    if rule.arithmetic == "float":
        at = np.unique(np.atleast_1d(np.asarray(starts, dtype=float)))
        bad = ~((at >= 0) & (at <= 1))  # NaN fails both
        if bad.any():
            raise ParameterError("starts", float(at[bad][0]), "confidences in [0, 1]")
        at = at[np.asarray(passes_threshold(at, threshold), bool)]
        runs = float_run_lengths(p, rule, threshold, at, baseline)
        return RunLengths(p, threshold, at, runs.expected, runs.sd, runs.p_excluded_eventually)
    space = confidence_space(rule, threshold, starts, baseline)
    n = len(space.states)
    q, out = _transient_matrix(space, p)
    # P(excluded eventually): solve on the states that can reach exclusion at all
    reach = _can_reach(q, out > 0)
    h = np.zeros(n)
    r = np.flatnonzero(reach)
    h[r] = _solve(sparse.identity(len(r)) - q[r][:, r], out[r])
    sure = np.isclose(h, 1.0, rtol=0, atol=1e-12)
    m = np.full(n, math.inf)
    v = np.full(n, math.inf)
    f = np.flatnonzero(sure)
    a = sparse.identity(len(f)) - q[f][:, f]
    m[f] = _solve(a, np.ones(len(f)))
    v[f] = _solve(a, 1.0 + 2.0 * (q[f][:, f] @ m[f]))
    sd = np.full(n, math.inf)
    sd[f] = np.sqrt(np.maximum(v[f] - m[f] * m[f], 0.0))
    return RunLengths(p, threshold, space.states, m, sd, h)


def _can_reach(q, targets: np.ndarray) -> np.ndarray:
    """States with a path (by ``q``'s edges) to a state in ``targets``."""
    found = targets.copy()
    back = q.T.tocsr()
    frontier = np.flatnonzero(found)
    while frontier.size:
        nxt = np.unique(back[frontier].indices)
        nxt = nxt[~found[nxt]]
        found[nxt] = True
        frontier = nxt
    return found


def hit_before(
    p: float,
    upper: float,
    start: float,
    rule: FlatRule = DEFAULT_RULE,
    threshold: float = DEFAULT_THRESHOLD,
    baseline: float | None = None,
) -> float:
    """Exact P(confidence reaches ``upper`` before it falls below ``threshold``)."""
    p, threshold, baseline = _check_chain(p, rule, threshold, baseline)
    upper = check_probability("upper", upper)
    start = check_probability("start", start)
    if not passes_threshold(start, threshold):
        return 0.0
    if start >= upper:
        return 1.0
    if rule.arithmetic == "float":
        return excursion(rule, threshold, p, start, np.zeros(0), baseline, upper)[2].prob
    space = confidence_space(rule, threshold, start, baseline)
    top = space.states >= upper
    q, _ = _transient_matrix(space, p)
    inner = np.flatnonzero(~top)
    b = np.asarray(q[inner][:, np.flatnonzero(top)].sum(axis=1)).ravel()
    h = _solve(sparse.identity(len(inner)) - q[inner][:, inner], b)
    return float(h[int(np.searchsorted(space.states[inner], rule.settle(start)))])


def wald_hit_before(
    p: float,
    upper: float,
    start: float,
    rule: StepRule = DEFAULT_RULE,
    threshold: float = DEFAULT_THRESHOLD,
    baseline: float | None = None,
) -> float:
    """Wald's approximation of ``hit_before`` ignoring overshoot (a step rule only)."""
    check_instance("rule", rule, StepRule)
    p, threshold, baseline = _check_chain(p, rule, threshold, baseline)
    upper, x = check_probability("upper", upper), check_probability("start", start)
    up, down = (float(v) for v in rule.steps(baseline))
    drift = p * up - (1 - p) * down
    if abs(drift) < 1e-15 or p in (0.0, 1.0):
        return min(1.0, max(0.0, (x - threshold) / (upper - threshold)))
    g = lambda t: p * math.exp(t * up) + (1 - p) * math.exp(-t * down) - 1.0  # noqa: E731
    var = p * up * up + (1 - p) * down * down
    near = -math.copysign(drift / var, drift)
    far = 2 * near
    while g(far) <= 0:
        far *= 2
    t = optimize.brentq(g, min(near, far), max(near, far), xtol=1e-15, rtol=1e-15)
    lo, hi = math.exp(t * (threshold - x)), math.exp(t * (upper - x))
    return (1.0 - lo) / (hi - lo)
