"""The confidences a flat rule reaches, found by calling its own ``update`` breadth first:
for one rule (``confidence_space``, the chain's states) or for many members of a design
grid in one search (``reach``, what ``flat.design_table.Batch`` walks).

In the seed's float arithmetic two orders of the same outcomes can land on different
doubles and the reachable doubles form no closed set, so a search there takes a
``horizon`` (the doubles reachable within that many updates: exact for any question about
at most that many sessions; ``flat.chain``'s module docstring). ``reach`` searches every
member in lockstep, one breadth-first step for all of them at a time, so the cost of a
step is a few array operations whatever the number of members: a member's states are
those its own search would find (``confidence_space`` is ``reach`` for one member). States
are told apart by ``(member, confidence)``, kept as one complex number
``member + 1j * confidence`` so that numpy's lexicographic complex order sorts and
searches them by member, then confidence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.errors import ParameterError
from procmem_core.flat.rule import FlatRule, passes_threshold

MAX_STATES = 50_000
"""The largest confidence set a chain is built on (a rule with steps off a coarse
decimal grid can need many)."""

Moves = Callable[[np.ndarray, np.ndarray, bool], np.ndarray]
"""``moves(confidence, member, positive)``: each member's update, element by element."""


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


@dataclass(frozen=True)
class Reached:
    """Every member's space in one sorted run (by member, then confidence): the states of
    member ``m`` are ``offsets[m]:offsets[m + 1]``; ``up``/``down`` index this run (-1 as
    in ``ConfidenceSpace``). ``too_large``: members whose space passed ``max_states``
    (left out: they hold no state)."""

    states: np.ndarray
    up: np.ndarray
    down: np.ndarray
    shown: np.ndarray
    depth: np.ndarray
    offsets: np.ndarray
    too_large: np.ndarray

    def space(self, m: int) -> ConfidenceSpace:
        """Member ``m``'s space with its own indices."""
        lo, hi = int(self.offsets[m]), int(self.offsets[m + 1])
        up, down = (np.where(x[lo:hi] < 0, -1, x[lo:hi] - lo) for x in (self.up, self.down))
        return ConfidenceSpace(self.states[lo:hi], up, down, self.shown[lo:hi], self.depth[lo:hi])


def _keys(member: np.ndarray, confidence: np.ndarray) -> np.ndarray:
    keys = np.empty(confidence.size, dtype=complex)
    keys.real, keys.imag = member, confidence
    return keys


def reach(
    moves: Moves,
    starts: Sequence[np.ndarray],
    thresholds: ArrayLike,
    keep_below: bool = False,
    max_states: int = MAX_STATES,
    horizon: int | None = None,
) -> Reached:
    """The confidences each member reaches from its ``starts`` (settled, in [0, 1]) by
    ``moves``, breadth first, within ``horizon`` updates when given; below its threshold
    a member's walk stops unless ``keep_below`` (module docstring)."""
    n = len(starts)
    thr = np.asarray(thresholds, dtype=float)
    member = np.concatenate([np.full(len(s), m) for m, s in enumerate(starts)] + [[]])
    conf = np.concatenate([np.asarray(s, dtype=float) for s in starts] + [[]])
    member = member.astype(np.int64)
    if not keep_below:
        ok = np.asarray(passes_threshold(conf, thr[member]), bool)
        member, conf = member[ok], conf[ok]
    frontier = _keys(member, conf)
    known = np.sort(frontier)
    counts = np.bincount(member, minlength=n)
    too_large = np.zeros(n, bool)
    done, ups, downs = [], [], []  # every state's two moves, each computed once
    depth = 0  # of the frontier's states
    while frontier.size:
        m, c = frontier.real.astype(np.int64), frontier.imag
        up, down = moves(c, m, True), moves(c, m, False)
        done.append(frontier), ups.append(up), downs.append(down)
        if horizon is not None and depth >= horizon:
            break
        depth += 1
        moved = _keys(np.concatenate((m, m)), np.concatenate((up, down)))
        if not keep_below:
            moved = moved[np.asarray(passes_threshold(moved.imag, thr[moved.real.astype(int)]))]
        frontier = _new(_unique(moved), known)
        known = np.insert(known, np.searchsorted(known, frontier), frontier)  # still sorted
        counts += np.bincount(frontier.real.astype(np.int64), minlength=n)
        big = counts > max_states
        if big.any():  # those members stop here and are left out
            too_large |= big
            frontier = frontier[~too_large[frontier.real.astype(np.int64)]]
    return _assemble(done, ups, downs, n, thr, too_large, keep_below, horizon is not None)


def _assemble(done, ups, downs, n, thr, too_large, keep_below, bounded) -> Reached:
    """The states sorted by (member, confidence), their moves as indices."""
    keys = np.concatenate([*done, np.zeros(0, complex)])
    depth = [np.full(f.size, d, dtype=np.int64) for d, f in enumerate(done)]
    depth = np.concatenate([*depth, np.zeros(0, np.int64)])
    up, down = np.concatenate([*ups, np.zeros(0)]), np.concatenate([*downs, np.zeros(0)])
    member = keys.real.astype(np.int64)
    keep = ~too_large[member]
    order = np.flatnonzero(keep)[np.argsort(keys[keep], kind="stable")]
    keys, depth, up, down, member = keys[order], depth[order], up[order], down[order], member[order]
    offsets = np.searchsorted(member, np.arange(n + 1))
    own = thr[member]
    return Reached(
        keys.imag.copy(),
        _positions(keys, member, up, own, keep_below, bounded),
        _positions(keys, member, down, own, keep_below, bounded),
        np.asarray(passes_threshold(keys.imag, own), bool),
        depth,
        offsets,
        too_large,
    )


def _unique(keys: np.ndarray) -> np.ndarray:
    """``np.unique`` of complex keys, by one sort."""
    keys = np.sort(keys)
    return keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if keys.size else keys


def _new(values: np.ndarray, known: np.ndarray) -> np.ndarray:
    """The sorted unique ``values`` not in the sorted ``known`` (``np.setdiff1d`` without
    re-sorting ``known``: a binary search per value)."""
    if not known.size:
        return values
    at = np.searchsorted(known, values).clip(max=known.size - 1)
    return values[known[at] != values]


def _positions(keys, member, moved, threshold, keep_below, bounded) -> np.ndarray:
    """Where each move lands in the sorted ``keys`` (-1: below the threshold, or beyond
    the horizon when ``bounded``)."""
    target = _keys(member, moved)
    idx = np.searchsorted(keys, target).clip(max=max(len(keys) - 1, 0))
    found = keys[idx] == target if len(keys) else np.zeros(0, bool)
    if not keep_below:
        below = ~np.asarray(passes_threshold(moved, threshold), bool)
        idx = np.where(below, -1, idx)
        found |= below
    if bounded:  # beyond the horizon: never followed
        return np.where(found, idx, -1)
    if not found.all():  # a closed set by construction: this is a bug, not bad input
        raise RuntimeError("confidence_space is not closed under the rule's update")
    return idx


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
    start = settled_starts(rule, starts)
    found = reach(rule_moves(rule, baseline), [start], [threshold], keep_below, max_states,
                  horizon)  # fmt: skip
    if found.too_large[0]:
        raise ParameterError(
            "rule", rule.describe(), f"a chain of at most {max_states} confidences "
            "(put reward, penalty, threshold and initial on a coarser decimal grid, or "
            "ask about fewer sessions)",
        )  # fmt: skip
    return found.space(0)


def settled_starts(rule: FlatRule, starts: ArrayLike) -> np.ndarray:
    """``starts`` as the rule keeps them (``settle``), unique and sorted; a
    ``ParameterError`` naming the first outside [0, 1]."""
    start = np.unique(rule.settle(np.atleast_1d(np.asarray(starts, dtype=float))))
    bad = ~((start >= 0) & (start <= 1))  # NaN fails both
    if bad.any():
        raise ParameterError("starts", float(start[bad][0]), "confidences in [0, 1]")
    return start


def rule_moves(rule: FlatRule, baseline: float | None = None) -> Moves:
    """``Moves`` of one rule, by its own ``update`` (every element is its member's)."""
    return lambda c, _, positive: rule.update(c, positive, baseline=baseline)
