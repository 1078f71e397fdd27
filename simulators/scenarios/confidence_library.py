"""The confidence scenario's library: one chunk of users x procedures, one pass a session.

The array is laid out procedures x users (``(k, n)``), so what is summed over a user's
procedures is a reduction over ``k`` contiguous rows. A session is one pass over it:
the prompt filter, withholding and exploration change a boolean ``shown`` mask and the
user's counts of shown procedures by kind; the outcome is drawn from those counts; the
arrived signal updates the shown cells; the new ``active`` mask and its counts by kind
are the next session's prompt and this session's trajectory.

Counts by kind come from one reduction of per-cell weights packed in bit fields
(``KindWeights``), decoded per user.

Two ways to hold the confidences, each calling the rule's own ``update``:

- ``GridConfidences``, for a rule whose update reads only the confidence and the outcome
  (the seed's and any step rule with fixed steps): the confidence of each cell is an
  index into the finite set of confidences the rule reaches within the run's sessions
  (``flat.chain.confidence_space``, found by calling ``rule.update``, sorted; in the
  seed's float arithmetic the doubles its code reaches, at most one update a session). Ranked by
  ``state * k + (k - 1 - j)``, larger first with ties to the earlier procedure
  (``shown_mask``'s order); an update is a fixed step clamped to the grid where the
  rule's moves are (the seed's), else one lookup into the table of its moves.
- ``FloatConfidences``, for the rules that read a baseline or counts: the confidences as
  floats, updated by ``rule.update`` with the evidence it reads (``Evidence``).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from procmem_core.errors import ParameterError
from procmem_core.flat import FlatRule, passes_threshold, shown_mask
from procmem_core.flat.chain import confidence_space


class KindWeights:
    """Per-cell weights whose sum over a user's procedures packs the user's counts into
    bit fields: ``[helpful] + [harmful] 2^s + 2^(2 s)`` per cell, so the fields hold the
    helpful, harmful and all procedures; ``s`` is the bits of ``k``, so a count of at
    most ``k`` never carries into the next field."""

    def __init__(self, helpful: np.ndarray, harmful: np.ndarray) -> None:
        k = helpful.shape[0]
        self.bits = int(k).bit_length()
        self.mask = (1 << self.bits) - 1
        dtype = np.uint16 if 3 * self.bits <= 16 else np.uint32
        w = np.full(helpful.shape, 1 << (2 * self.bits), dtype=dtype)
        w += helpful.astype(dtype)
        w += harmful * dtype(1 << self.bits)
        self.w = w
        self._buf = np.empty_like(w)

    def code(self, mask: np.ndarray) -> np.ndarray:
        """``sum_j w_j mask_j`` per user (one product and one reduction over ``k`` rows)."""
        np.multiply(mask, self.w, out=self._buf)
        return np.add.reduce(self._buf, axis=0, dtype=self.w.dtype)

    def decode(self, code: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(helpful, harmful, total)`` counts per user."""
        helpful = code & self.mask
        harmful = (code >> self.bits) & self.mask
        return helpful, harmful, code >> (2 * self.bits)

    def total(self, code: np.ndarray) -> np.ndarray:
        """The count of every procedure in the mask, per user."""
        return code >> (2 * self.bits)

    def at(self, j: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """The weights of one cell per column."""
        return self.w[j, cols]


GRID_STATES = 4096
"""The largest set of reachable confidences kept as a grid (a rule with steps off a coarse
decimal grid keeps its floats)."""


@functools.lru_cache(maxsize=64)
def reachable(rule: FlatRule, threshold: float, sessions: int):
    """``(confidence_space, index of the start)`` of a rule whose update reads only the
    confidence and the outcome, or None (found once per rule, threshold and sessions).
    In float arithmetic the space holds the doubles reachable within ``sessions``
    updates; a move from one reached only at the last is never taken (it points to
    itself)."""
    if rule.needs_baseline or rule.needs_counts:
        return None
    start = rule.start()
    horizon = sessions if rule.arithmetic == "float" else None
    try:
        space = confidence_space(
            rule, threshold, start, keep_below=True, max_states=GRID_STATES, horizon=horizon
        )
    except ParameterError:
        return None
    if horizon is not None:
        here = np.arange(len(space.states))
        space = dataclasses.replace(
            space, up=np.where(space.up < 0, here, space.up),
            down=np.where(space.down < 0, here, space.down),
        )  # fmt: skip
    i = int(np.searchsorted(space.states, start))
    if i >= len(space.states) or space.states[i] != start:
        return None  # snapping moved the start: keep the floats the rule gives
    return space, i


def uniform_steps(space) -> tuple[int, int] | None:
    """``(up, down)`` when every move on the grid is a fixed number of states, clamped to
    its ends (``up[i] = min(i + up, g - 1)``, ``down[i] = max(i - down, 0)``: a rule
    whose reachable confidences form one evenly spaced set, as the seed's), else None."""
    g = len(space.states)
    i = np.arange(g)
    up, down = int(space.up[0]), int(g - 1 - space.down[-1])
    if (space.up == np.minimum(i + up, g - 1)).all() and (
        space.down == np.maximum(i - down, 0)
    ).all():
        return up, down
    return None


class GridConfidences:
    """Each cell's confidence as its index into the rule's reachable confidences (module
    docstring), held as the rank ``level = (state - first_shown) k + (k - 1 - j)``: at
    least 0 exactly for the cells at or above the threshold, unique in a column, larger
    first and ties to the earlier procedure (``shown_mask``'s order)."""

    def __init__(self, space, start: int, k: int, n: int) -> None:
        g = len(space.states)
        self.k, self.g, self.states = k, g, space.states
        wide = 3 * g * k >= 2**15
        self.dtype, self.unsigned = (np.int32, np.uint32) if wide else (np.int16, np.uint16)
        self.origin = (int(np.argmax(space.shown)) if space.shown.any() else g) * k
        rev = (k - 1 - np.arange(k))[:, None]
        self.low = (rev - self.origin).astype(self.dtype)  # state 0 and g - 1 by row
        self.high = (rev + (g - 1) * k - self.origin).astype(self.dtype)
        self.steps = uniform_steps(space)
        # table[c g k + level + origin]: c = 0 no update, 1 a bad session, 2 a good one
        state, j = np.divmod(np.arange(g * k), k)
        self.table = (
            np.concatenate([state, space.down[state], space.up[state]]) * k
            + np.tile(j, 3)
            - self.origin
        ).astype(self.dtype)
        self.level = np.empty((k, n), self.dtype)
        self.level[:] = start * k + rev - self.origin
        self._buf = np.empty_like(self.level)
        self._ubuf = np.empty(self.level.shape, self.unsigned)
        self._drop = np.empty(self.level.shape, bool)
        # after a bad and a good session: a level's step, or the offset into the table
        up, down = self.steps if self.steps is not None else (2 * g, -g)
        self._moves = np.array([-down, up], np.int64) * k
        self._moves = self._moves.astype(self.dtype)

    @classmethod
    def build(
        cls, rule: FlatRule, threshold: float, k: int, n: int, sessions: int
    ) -> GridConfidences | None:
        """The grid for ``rule``, or None when its update reads more than the confidence
        or its reachable set is too large (then the floats are kept)."""
        found = reachable(rule, threshold, sessions)
        return None if found is None else cls(*found, k, n)

    def active(self) -> np.ndarray:
        """Cells at or above the threshold."""
        return self.level >= 0

    def select(self, active: np.ndarray, n_active: np.ndarray, limit: int, shown) -> None:
        """Drop, in place on ``shown``, the ``n_active - limit`` lowest-ranked active cells
        of each user with more than ``limit``.

        Read unsigned, the inactive cells' negative levels wrap past every active one, so
        a column minimum is the lowest active rank, and the minimum of ``key - (m + 1)``
        (wrapping the ranks up to ``m``) gives the next one after ``m``. With ``m_e`` the
        ``e``-th lowest, a user with surplus ``e`` drops the cells below ``m_e + 1``.
        """
        excess = n_active.astype(np.int64) - limit
        key = self.level.view(self.unsigned)
        lowest = [key.min(axis=0)]
        for _ in range(int(excess.max()) - 1):
            after = lowest[-1] + self.unsigned(1)
            np.subtract(key, after, out=self._ubuf)
            lowest.append(self._ubuf.min(axis=0) + after)
        cut = np.zeros(len(excess), self.unsigned)  # nothing is below 0
        for e, low in enumerate(lowest, 1):
            cut += (excess == e) * (low + self.unsigned(1))
        drop = np.less(key, cut, out=self._drop)
        shown ^= drop  # every dropped cell was shown

    def top(self, cols: np.ndarray, shown: np.ndarray) -> np.ndarray:
        """The highest-ranked shown procedure of each column (the highest active one: the
        prompt always keeps it, and an active cell outranks every inactive one)."""
        high = self.level[:, cols].max(axis=0).astype(np.int64) + self.origin
        return (self.k - 1) - high % self.k

    def update(self, shown, signal, observed, n_shown) -> None:
        """The rule's move after a bad or good session on the updated cells: a fixed step
        clamped to the grid where the grid allows (``uniform_steps``), else one lookup
        per cell in the table of moves."""
        move = self._moves.take(np.asarray(signal, bool).view(np.uint8))
        if observed is not None:
            move[~observed] = 0
        np.multiply(shown, move, out=self._buf)
        if self.steps is not None:
            self.level += self._buf
            np.clip(self.level, self.low, self.high, out=self.level)
        else:
            self._buf += self.level
            self._buf += self.dtype(self.origin)
            np.take(self.table, self._buf, out=self.level, mode="clip")

    def confidences(self) -> np.ndarray:
        return self.states[(self.level.astype(np.int64) + self.origin) // self.k]

    def evidence_metrics(self) -> dict:
        return {}


class Evidence:
    """What the rule reads besides the outcome, kept only when it reads it: each user's
    no-procedure sessions (signals of sessions with nothing shown) and each procedure's
    successes and failures in the sessions it was updated for ((k, n) layout)."""

    def __init__(self, rule: FlatRule, k: int, n: int) -> None:
        self.rule = rule
        self.base = (np.zeros(n), np.zeros(n)) if rule.needs_baseline else None
        self.counts = (np.zeros((k, n)), np.zeros((k, n))) if rule.needs_counts else None

    def baseline(self) -> np.ndarray | None:
        return None if self.base is None else self.rule.baseline_estimate(*self.base)

    def start(self, k: int, n: int) -> np.ndarray:
        b = self.baseline()
        if b is None:
            return np.full((k, n), self.rule.start())
        return np.repeat(np.asarray(self.rule.start(b))[None, :], k, axis=0)

    def record(self, signal, observed, update, n_shown) -> dict:
        """Count the arrived signal; the keyword arguments of ``rule.update``."""
        out = {}
        if self.base is not None:
            empty = n_shown == 0
            if observed is not None:
                empty &= observed
            self.base[0][:] += empty & signal
            self.base[1][:] += empty
            out["baseline"] = self.baseline()[None, :]
        if self.counts is not None:
            self.counts[0][:] += update & signal[None, :]
            self.counts[1][:] += update & ~signal[None, :]
            out["successes"], out["failures"] = self.counts
        return out


class FloatConfidences:
    """The confidences as floats, for the rules that read a baseline or counts."""

    def __init__(self, rule: FlatRule, threshold: float, k: int, n: int) -> None:
        self.rule = rule
        self.threshold = threshold
        self.evidence = Evidence(rule, k, n)
        self.conf = self.evidence.start(k, n)

    def active(self) -> np.ndarray:
        return np.asarray(passes_threshold(self.conf, self.threshold))

    def select(self, active: np.ndarray, n_active: np.ndarray, limit: int, shown) -> None:
        """The engine's ``shown_mask`` on the users with more than ``limit`` active."""
        cols = np.flatnonzero(n_active > limit)
        shown[:, cols] = shown_mask(self.conf[:, cols].T, self.threshold, limit).T

    def top(self, cols: np.ndarray, shown: np.ndarray) -> np.ndarray:
        """The first highest-confidence shown procedure (``prompt_order``'s tie rule)."""
        return np.argmax(np.where(shown[:, cols], self.conf[:, cols], -np.inf), axis=0)

    def update(self, shown, signal, observed, n_shown) -> None:
        update = shown if observed is None else shown & observed[None, :]
        extra = self.evidence.record(signal, observed, update, n_shown)
        new = self.rule.update(self.conf, signal[None, :], **extra)
        self.conf = np.where(update, new, self.conf)

    def confidences(self) -> np.ndarray:
        return self.conf

    def evidence_metrics(self) -> dict:
        ev = self.evidence
        if ev.base is None:
            return {}
        return {"baseline": ev.baseline(), "baseline_sessions": ev.base[1]}
