"""The flat rule as a Markov chain on its confidence grid: run lengths, first passages and
the chain that never absorbs because excluded procedures are shown again.

A step rule on the decimal grid (``arithmetic="grid"``) keeps its confidence on a finite
set closed under its ``update`` (sums of its moves with the clamps, on the ``snap``
grid): ``confidence_space`` (module ``flat.spaces``) finds it by calling the rule's own
``update`` from the starting confidences. In the seed's float arithmetic two orders of
the same outcomes can land on different doubles, and the walks that balance ``reward`` against
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
from procmem_core.flat.excursion import float_hit_before, float_run_lengths
from procmem_core.flat.prompt import DEFAULT_THRESHOLD
from procmem_core.flat.rule import DEFAULT_RULE, FlatRule, StepRule, passes_threshold
from procmem_core.flat.spaces import MAX_STATES, ConfidenceSpace, confidence_space

__all__ = [  # the spaces live in ``flat.spaces``; callers may still import them from here
    "MAX_STATES",
    "ConfidenceSpace",
    "RunLengths",
    "confidence_space",
    "hit_before",
    "run_lengths",
    "wald_hit_before",
]


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
    # sure exclusion is a property of the graph, not of the solve (near p = 1 the solve
    # misses 1 by more than any fixed tolerance): every state reachable can reach it
    sure = ~_can_reach(q, ~reach)
    h[sure] = 1.0
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
        return float_hit_before(p, rule, threshold, start, upper, baseline)
    space = confidence_space(rule, threshold, start, baseline)
    top = space.states >= upper
    q, _ = _transient_matrix(space, p)
    # solve on the states with a path to ``upper`` (0 elsewhere): a state the walk can
    # sit in for ever (a clamp or a zero step) would make ``I - Q`` singular
    inner = np.flatnonzero(_can_reach(q, top) & ~top)
    h = np.zeros(len(space.states))
    b = np.asarray(q[inner][:, np.flatnonzero(top)].sum(axis=1)).ravel()
    h[inner] = _solve(sparse.identity(len(inner)) - q[inner][:, inner], b)
    return float(h[space.index(rule.settle(start))])


def wald_hit_before(
    p: float,
    upper: float,
    start: float,
    rule: StepRule = DEFAULT_RULE,
    threshold: float = DEFAULT_THRESHOLD,
    baseline: float | None = None,
) -> float:
    """Wald's approximation of ``hit_before`` ignoring overshoot (a step rule only).

    With ``a`` the threshold, ``u = upper`` and ``x = start`` (``a <= x < u``):
    ``(1 - e^{t(a - x)}) / (e^{t(u - x)} - e^{t(a - x)})``, ``t != 0`` the root of
    ``p e^{t up} + (1 - p) e^{-t down} = 1``, written with ``expm1`` so that it neither
    overflows nor cancels (linear, ``(x - a) / (u - a)``, at zero drift). The cases
    ``hit_before`` settles without a walk are settled the same way: 0 below the threshold,
    1 at or above ``upper``, and a walk that can move one way only (``p`` 0 or 1, or a
    zero step) reaches ``upper`` surely if it can only rise and never otherwise."""
    check_instance("rule", rule, StepRule)
    p, threshold, baseline = _check_chain(p, rule, threshold, baseline)
    upper, x = check_probability("upper", upper), check_probability("start", start)
    if not passes_threshold(x, threshold):
        return 0.0
    if x >= upper:
        return 1.0
    up, down = (float(v) for v in rule.steps(baseline))
    rises, falls = p > 0.0 and up > 0.0, p < 1.0 and down > 0.0
    if not (rises and falls):
        return 1.0 if rises else 0.0
    t = _wald_root(p, up, down)
    if t == 0.0:
        return (x - threshold) / (upper - threshold)
    if t < 0.0:
        return math.expm1(t * (x - threshold)) / math.expm1(t * (upper - threshold))
    return (
        math.exp(-t * (upper - x))
        * math.expm1(-t * (x - threshold))
        / math.expm1(-t * (upper - threshold))
    )


def _wald_root(p: float, up: float, down: float) -> float:
    """The root ``t != 0`` of ``p e^{t up} + (1 - p) e^{-t down} = 1`` (0 at zero drift),
    as the root of ``g(t) / t = p up phi(t up) - (1 - p) down phi(-t down)`` with
    ``phi(z) = expm1(z) / z``: increasing in ``t`` (``g`` is convex with ``g(0) = 0``)
    and equal to the drift at 0, so near zero drift the root keeps its precision."""

    def phi(z: float) -> float:
        return math.expm1(z) / z if z != 0.0 else 1.0

    def slope(t: float) -> float:
        return p * up * phi(t * up) - (1.0 - p) * down * phi(-t * down)

    drift = slope(0.0)
    if drift == 0.0:
        return 0.0
    var = p * up * up + (1 - p) * down * down
    far = -2.0 * drift / var  # the second-order root; doubled until the sign changes
    while (slope(far) > 0.0) == (drift > 0.0):
        far *= 2.0
    return optimize.brentq(slope, min(0.0, far), max(0.0, far), xtol=1e-300, rtol=1e-15)
