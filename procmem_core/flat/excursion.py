"""Questions without a horizon in the seed's float arithmetic, answered by renewal.

In float arithmetic (``flat.rule``, docs/flat.md "Float or grid") the doubles a walk
reaches form no closed set: the orders of +reward and -penalty that balance each other
leave ever new rounding residues. Two things make the questions without a horizon exact
anyway:

- the clamps renew the walk: ``min(ceiling, .)`` and ``max(floor, .)`` return the same
  double whatever the path, so a walk that reaches one of those *renewal points* starts
  afresh from it;
- between two renewals the walk stays in a bounded interval, which it leaves (by a
  renewal or by falling below the threshold) in geometrically distributed time, so a
  forward recursion over the doubles it reaches, merging equal ones, ends with a
  residual mass below ``FLOAT_TOLERANCE``, spread over the endings pro rata (so a walk
  that ends below the threshold with certainty is reported with probability 1); mass
  that a step leaves exactly where it was (the same doubles, the same masses: p = 1 at
  a ceiling, p = 0 at a floor that passes the threshold, a zero step) stays there for
  ever and ends nowhere.

``excursion`` walks one excursion from a start and returns, for each way it ends (below
the threshold, or at each renewal point), the probability and the first two moments of
its length. With ``M`` the probabilities of moving between renewal points, ``t``, ``t2``
the moments of an excursion's length and ``A[r, r']`` = E_r[T 1{ends at r'}]:

    h = e + M h                      (P(excluded eventually); minimal solution)
    m = t + M m                      (E[applied sessions until exclusion])
    v = t2 + 2 A m + M v             (E[its square])

solved on the renewal points (at most two), then one row more for each start.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from procmem_core.errors import ParameterError
from procmem_core.flat.rule import FlatRule, passes_threshold

FLOAT_TOLERANCE = 1e-15
"""The mass an excursion's forward recursion may leave undecided."""
MAX_EXCURSION = 200_000
"""The most sessions one excursion is followed for."""


@dataclass(frozen=True)
class Ending:
    """How one excursion ends: ``prob``, ``t1`` = E[T 1{this end}], ``t2`` = E[T^2 1{.}]."""

    prob: float
    t1: float
    t2: float


def renewal_points(rule: FlatRule, threshold: float) -> np.ndarray:
    """The clamps' doubles at or above the threshold (sorted)."""
    ends = [getattr(rule, name, None) for name in ("floor", "ceiling")]
    pts = [rule.settle(float(x)) for x in ends if x is not None]
    return np.unique([x for x in pts if passes_threshold(x, threshold)])


def excursion(
    rule: FlatRule,
    threshold: float,
    p: float,
    start: float,
    stops: np.ndarray,
    baseline: float | None = None,
    upper: float | None = None,
) -> tuple[Ending, list[Ending], Ending]:
    """``(excluded, [ending at each of stops], reaching upper)`` of the walk from ``start``
    until it falls below ``threshold``, lands on one of ``stops`` (after at least one
    session) or reaches ``upper`` (when given)."""
    conf, mass = np.array([float(start)]), np.ones(1)
    acc = np.zeros((len(stops) + 2, 3))  # rows: excluded, each stop, upper
    k = 0
    while mass.sum() > FLOAT_TOLERANCE:
        k += 1
        if k > MAX_EXCURSION:
            raise ParameterError(
                "p", p, f"a walk that ends within {MAX_EXCURSION} sessions (from {start!r} "
                "it neither falls below the threshold nor returns to a clamp)",
            )  # fmt: skip
        c2 = np.concatenate(
            [
                rule.update(conf, True, baseline=baseline),
                rule.update(conf, False, baseline=baseline),
            ]
        )
        w = np.concatenate([mass * p, mass * (1.0 - p)])
        end = np.full(len(c2), -1)
        end[~np.asarray(passes_threshold(c2, threshold), bool)] = 0
        at = np.searchsorted(stops, c2).clip(max=max(len(stops) - 1, 0))
        hit = (end < 0) & (stops[at] == c2) if len(stops) else np.zeros(len(c2), bool)
        end[hit] = 1 + at[hit]
        if upper is not None:
            end[(end < 0) & (c2 >= upper)] = len(stops) + 1
        done = end >= 0
        np.add.at(acc, end[done], np.stack([w[done], k * w[done], k * k * w[done]], axis=1))
        live = ~done & (w > 0)
        before = conf, mass
        conf, idx = _merge(c2[live])
        mass = np.bincount(idx, weights=w[live], minlength=len(conf))
        if _held(before, (conf, mass)):  # the same doubles and masses: so for ever
            held = float(mass.sum())
            break
    else:
        held = 0.0
    acc /= acc[:, 0].sum() + held  # the undecided residual (< FLOAT_TOLERANCE) spread
    # pro rata; mass ``held`` for ever (a clamp or a zero step) ends nowhere
    rows = [Ending(*map(float, r)) for r in acc]
    return rows[0], rows[1:-1], rows[-1]


def _held(before: tuple[np.ndarray, np.ndarray], after: tuple[np.ndarray, np.ndarray]) -> bool:
    """Whether a step left the live doubles and their masses exactly as they were: the
    walk is deterministic given them, so every later step does too, and that mass never
    ends (p = 1 at a ceiling below ``upper``, p = 0 at a floor that passes the
    threshold, a zero step)."""
    return all(np.array_equal(x, y) for x, y in zip(before, after, strict=True))


def _merge(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)``, by a stable argsort: ``values`` are a
    step's moves up, then down, two sorted runs when the update is monotone (a step
    rule's is), which numpy's stable sort finds and merges, several times faster than
    ``np.unique``'s quicksort argsort (any order gives the same answer). The masses are then
    summed by ``bincount`` in the order of ``values``, as before, so bit for bit."""
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    first = np.ones(ranked.size, bool)
    np.not_equal(ranked[1:], ranked[:-1], out=first[1:])
    inverse = np.empty(values.size, dtype=np.int64)
    inverse[order] = np.cumsum(first.astype(np.int64)) - 1  # (cumsum of bools is slow)
    return ranked[first], inverse


@dataclass(frozen=True)
class FloatRuns:
    """From each start: P(excluded eventually), E[N] and SD[N] of the applied sessions
    until exclusion (``inf`` where exclusion is not sure)."""

    starts: np.ndarray
    expected: np.ndarray
    sd: np.ndarray
    p_excluded_eventually: np.ndarray


def float_run_lengths(
    p: float, rule: FlatRule, threshold: float, starts: np.ndarray, baseline: float | None
) -> FloatRuns:
    """Run lengths from ``starts`` by renewal at the clamps (module docstring)."""
    pts = renewal_points(rule, threshold)
    rows = [excursion(rule, threshold, p, r, pts, baseline) for r in pts]
    h, m, v = _renewal(rows)
    sure = np.isfinite(m)
    out = np.zeros((3, len(starts)))
    for j, s in enumerate(starts):
        gone, ends, _ = excursion(rule, threshold, p, s, pts, baseline)
        back = np.array([e.prob for e in ends])
        out[0, j] = gone.prob + _dot(back, h)
        whole = math.isclose(gone.prob + back.sum(), 1.0, rel_tol=0, abs_tol=1e-9)
        if whole and (gone.prob > 0 or back.any()) and bool(np.all(sure[back > 0])):
            out[0, j] = 1.0  # ends below the threshold or at points that surely do
        if out[0, j] != 1.0:
            out[1, j] = out[2, j] = math.inf
            continue
        t1 = gone.t1 + sum(e.t1 for e in ends)
        t2 = gone.t2 + sum(e.t2 for e in ends)
        mean = t1 + _dot(back, m)
        second = t2 + 2 * _dot(np.array([e.t1 for e in ends]), m) + _dot(back, v)
        out[1, j], out[2, j] = mean, math.sqrt(max(second - mean * mean, 0.0))
    return FloatRuns(np.asarray(starts, float), out[1], out[2], out[0])


def float_hit_before(
    p: float,
    rule: FlatRule,
    threshold: float,
    start: float,
    upper: float,
    baseline: float | None = None,
) -> float:
    """P(reaching ``upper`` before falling below ``threshold``) from ``start``, by renewal
    at the clamps below ``upper`` (module docstring): ``h = u + M h`` on those points
    (``u``: an excursion reaches ``upper``; minimal solution, 0 where no path leads up),
    then one excursion from ``start``. Without the renewal a walk that can neither fall
    below the threshold nor climb soon (a floor that passes it) spreads over ever more
    doubles for a long time."""
    pts = renewal_points(rule, threshold)
    pts = pts[pts < upper]
    rows = [excursion(rule, threshold, p, r, pts, baseline, upper) for r in pts]
    h = np.zeros(len(pts))
    if rows:
        u = np.array([r[2].prob for r in rows])
        big_m = np.array([[x.prob for x in r[1]] for r in rows])
        f = np.flatnonzero(_reaching(big_m, u > 0))  # points with a path to ``upper``
        lhs = np.eye(len(f)) - big_m[np.ix_(f, f)]
        # a point that returns to itself almost surely: 1 - M_ii by its other endings
        # (1 - M_ii itself keeps only ~1e-16 absolute precision), unless mass is held
        gone = np.array([r[0].prob for r in rows])[f] + u[f]
        other = big_m[f].sum(axis=1) - big_m[f, f]
        whole = np.isclose(gone + other + big_m[f, f], 1.0, rtol=0, atol=1e-9)
        lhs[np.diag_indices(len(f))] = np.where(whole, gone + other, np.diag(lhs))
        h[f] = np.linalg.solve(lhs, u[f])
    _, ends, up = excursion(rule, threshold, p, start, pts, baseline, upper)
    return float(up.prob + _dot(np.array([e.prob for e in ends]), h))


def _reaching(big_m: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """The renewal points with a path (``big_m``'s positive entries) to one in
    ``targets``."""
    found = targets.copy()
    for _ in range(len(found)):
        grown = found | (big_m[:, found] > 0).any(axis=1)
        if np.array_equal(grown, found):
            break
        found = grown
    return found


def _dot(weights: np.ndarray, values: np.ndarray) -> float:
    """``sum w_i x_i`` over ``w_i > 0`` (an unreachable point's ``inf`` counts for 0)."""
    used = weights > 0
    return float(weights[used] @ values[used]) if used.any() else 0.0


def _renewal(rows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``h``, ``m``, ``v`` on the renewal points (``inf`` where exclusion is not sure)."""
    n = len(rows)
    if n == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    e = np.array([r[0].prob for r in rows])
    big_m = np.array([[x.prob for x in r[1]] for r in rows])
    reach = _reaching(big_m, e > 0)  # points with a path to exclusion
    h = np.zeros(n)
    f = np.flatnonzero(reach)
    h[f] = np.linalg.solve(np.eye(len(f)) - big_m[np.ix_(f, f)], e[f])
    # sure exclusion from the graph, not the solve (near p = 1 it misses 1 by more than
    # any fixed tolerance): every point reachable ends its excursions (no mass held for
    # ever) and has a path to exclusion
    ends = np.isclose(e + big_m.sum(axis=1), 1.0, rtol=0, atol=1e-9)
    sure = ~_reaching(big_m, ~(ends & reach))
    h[sure] = 1.0
    m, v = np.full(n, math.inf), np.full(n, math.inf)
    s = np.flatnonzero(sure)
    t1 = np.array([r[0].t1 + sum(x.t1 for x in r[1]) for r in rows])
    t2 = np.array([r[0].t2 + sum(x.t2 for x in r[1]) for r in rows])
    a = np.array([[x.t1 for x in r[1]] for r in rows])
    lhs = np.eye(len(s)) - big_m[np.ix_(s, s)]
    # 1 - M_ii by the point's other endings (1 - M_ii keeps ~1e-16 absolute precision)
    other = (e + big_m.sum(axis=1) - np.diag(big_m))[s]
    lhs[np.diag_indices(len(s))] = other
    m[s] = np.linalg.solve(lhs, t1[s])
    v[s] = np.linalg.solve(lhs, t2[s] + 2 * a[np.ix_(s, s)] @ m[s])
    return h, m, v


@dataclass(frozen=True)
class FloatLongRun:
    """The re-shown chain's long run in float arithmetic (``flat.reshow``): the doubles
    visited, their long-run shares, the share of sessions shown and in the prompt, and
    the mean stay in the prompt per visit."""

    states: np.ndarray
    long_run: np.ndarray
    shown: float
    in_prompt: float
    mean_stay: float


def float_long_run(
    p: float, reshow: float, rule: FlatRule, threshold: float, start: float
) -> FloatLongRun:
    """Renewal-reward over the chain's jumps (``0 < reshow``): from a state the chain
    jumps (up with ``p``, else down) with probability ``s`` (1 at or above the threshold,
    ``reshow`` below) and else stays, so a visit lasts ``1 / s`` sessions on average.
    Cycles run between the clamps' doubles; with ``nu`` the stationary law of the clamps
    the jump chain returns to (the class it ends in from ``start``), the long-run share
    of a double ``x`` is ``sum_r nu_r V_r(x) / s(x)`` normalised, ``V_r`` the expected
    visits per cycle from ``r``; the stay is the share in the prompt over the entries
    into it per session. A walk that every possible move leaves where it starts (a zero
    step) stays there: its long run is that one double."""
    moves = [rule.update(float(start), good) for good, w in ((True, p), (False, 1 - p)) if w > 0]
    if all(m == start for m in moves):  # held where it starts: for ever
        inside = bool(passes_threshold(start, threshold))
        return FloatLongRun(
            np.array([float(start)]), np.ones(1), 1.0 if inside else reshow, float(inside),
            math.inf if inside else 0.0,
        )  # fmt: skip
    ends = [rule.settle(float(getattr(rule, n))) for n in ("floor", "ceiling")]
    pts = np.unique(ends)
    cycles = [_jump_cycle(rule, p, r, pts) for r in pts]
    big_m = np.array([c[2] for c in cycles])
    first = _jump_cycle(rule, p, start, pts)[2] if start not in pts else (pts == start) * 1.0
    nu = _ending_law(big_m, first)
    states = np.unique(np.concatenate([c[0] for c in cycles]))
    visits = np.zeros(len(states))
    for w, (xs, vs, _) in zip(nu, cycles, strict=True):
        if w > 0:
            np.add.at(visits, np.searchsorted(states, xs), w * vs)
    a = np.asarray(passes_threshold(states, threshold), bool)
    stay = 1.0 / np.where(a, 1.0, reshow)
    time = visits * stay
    pi = time / time.sum()
    up = rule.update(states, True)
    down = rule.update(states, False)
    into = p * passes_threshold(up, threshold) + (1 - p) * passes_threshold(down, threshold)
    entries = float((visits[~a] * into[~a]).sum()) / time.sum()  # per session
    in_prompt = float(pi[a].sum())
    shown = float(pi @ np.where(a, 1.0, reshow))
    mean_stay = in_prompt / entries if entries > 0 else (math.inf if in_prompt > 0 else 0.0)
    return FloatLongRun(states, pi, shown, in_prompt, mean_stay)


def _ending_law(big_m: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The long-run share of cycles starting at each clamp, for a chain whose first
    cycle starts at the clamps with probabilities ``first`` (Cesaro limit of the clamps'
    chain ``big_m``, at most 2 x 2)."""
    n = len(first)
    if n == 1 or (big_m[0, 1] == 0 and big_m[1, 0] == 0):
        return first  # each clamp returns only to itself
    if big_m[0, 1] == 0 or big_m[1, 0] == 0:  # one clamp absorbs the other
        sink = 0 if big_m[0, 1] == 0 else 1
        return np.eye(n)[sink]
    nu = np.array([big_m[1, 0], big_m[0, 1]])
    return nu / nu.sum()


def _jump_cycle(rule: FlatRule, p: float, start: float, stops: np.ndarray):
    """``(doubles, expected visits, P(ending at each stop))`` of the jump chain's walk
    from ``start`` until it lands on a stop (``start`` is visited once at step 0)."""
    conf, mass = np.array([float(start)]), np.ones(1)
    xs, vs = [conf], [mass]
    ended = np.zeros(len(stops))
    k = 0
    while mass.sum() > FLOAT_TOLERANCE:
        k += 1
        if k > MAX_EXCURSION:
            raise ParameterError("p", p, f"a walk that reaches a clamp within {MAX_EXCURSION}")
        n = len(conf)
        c2 = rule.update(
            np.concatenate([conf, conf]), np.concatenate([np.ones(n, bool), np.zeros(n, bool)])
        )
        w = np.concatenate([mass * p, mass * (1.0 - p)])
        at = np.searchsorted(stops, c2).clip(max=len(stops) - 1)
        hit = stops[at] == c2
        np.add.at(ended, at[hit], w[hit])
        live = ~hit & (w > 0)
        conf, idx = _merge(c2[live])
        mass = np.bincount(idx, weights=w[live], minlength=len(conf))
        xs.append(conf), vs.append(mass)
    x = np.concatenate(xs)
    states, idx = np.unique(x, return_inverse=True)
    return states, np.bincount(idx, weights=np.concatenate(vs)), ended / ended.sum()
