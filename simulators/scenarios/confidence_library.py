"""The confidence scenario's library: one chunk of users x procedures, one pass a session.

The array is laid out procedures x users (``(k, n)``), so what is summed over a user's
procedures is a reduction over ``k`` contiguous rows. A session is one pass over it:
the prompt filter, withholding and exploration change a boolean ``shown`` mask and the
user's counts of shown procedures by kind; the outcome is drawn from those counts; the
arrived signal updates the shown cells; the new ``active`` mask and its counts by kind
are the next session's prompt and this session's trajectory.

Counts by kind come from one reduction of per-cell weights (helpful 1, harmful ``B``,
neutral ``B^2``, ``B = k + 1``), decoded per user.

Two ways to hold the confidences, each calling the rule's own ``update``:

- ``GridConfidences``, for a rule whose update reads only the confidence and the outcome
  (the seed's and any step rule with fixed steps): the confidence of each cell is an
  integer code into the finite set of confidences the rule reaches
  (``flat.chain.confidence_space``, found by calling ``rule.update``, sorted). The code is
  ``state * k + (k - 1 - j)``, so larger codes rank first and ties go to the earlier
  procedure (``shown_mask``'s order); an update is one lookup into a table of the
  rule's moves (no move, a bad session, a good one).
- ``FloatConfidences``, for the rules that read a baseline or counts: the confidences as
  floats, updated by ``rule.update`` with the evidence it reads (``Evidence``).
"""

from __future__ import annotations

import numpy as np

from procmem_core.errors import ParameterError
from procmem_core.flat import FlatRule, passes_threshold, shown_mask
from procmem_core.flat.chain import confidence_space


class KindWeights:
    """Per-cell weights whose sum over a user's procedures packs the user's counts by kind
    into bit fields: helpful ``1``, harmful ``2^s``, neutral ``2^(2 s)``, with ``s`` the
    bits of ``k`` (so a count of at most ``k`` never carries into the next field)."""

    def __init__(self, helpful: np.ndarray, harmful: np.ndarray) -> None:
        k = helpful.shape[0]
        self.bits = int(k).bit_length()
        self.mask = (1 << self.bits) - 1
        dtype = np.uint16 if 3 * self.bits <= 16 else np.uint32
        w = np.full(helpful.shape, 1 << (2 * self.bits), dtype=dtype)
        w[helpful] = 1
        w[harmful] = 1 << self.bits
        self.w = w
        self._buf = np.empty_like(w)

    def code(self, mask: np.ndarray) -> np.ndarray:
        """``sum_j w_j mask_j`` per user (one product and one reduction over ``k`` rows)."""
        np.multiply(mask, self.w, out=self._buf)
        return np.add.reduce(self._buf, axis=0, dtype=self.w.dtype)

    def decode(self, code: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(helpful, harmful, neutral)`` counts per user."""
        helpful = code & self.mask
        harmful = (code >> self.bits) & self.mask
        return helpful, harmful, code >> (2 * self.bits)

    def at(self, j: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """The weights of one cell per column."""
        return self.w[j, cols]


class GridConfidences:
    """Integer codes into the rule's reachable confidences (module docstring)."""

    def __init__(self, space, start: int, k: int, n: int) -> None:
        g = len(space.states)
        self.k = k
        self.states = space.states
        size = 3 * g * k
        self.dtype = np.uint16 if size < 2**16 else np.uint32
        self._top = self.dtype(np.iinfo(self.dtype).max)
        rev = (k - 1 - np.arange(k)).astype(np.int64)
        codes = np.arange(g * k)
        state, j_rev = np.divmod(codes, k)
        # table[c * g k + code]: c = 0 no update, 1 a bad session, 2 a good one
        self.table = np.concatenate(
            [codes, space.down[state] * k + j_rev, space.up[state] * k + j_rev]
        ).astype(self.dtype)
        self.shift = g * k
        self.first_shown = int(np.argmax(space.shown)) * k if space.shown.any() else g * k
        self.code = (start * k + rev[:, None] + np.zeros((1, n), np.int64)).astype(self.dtype)
        self._idx = np.empty_like(self.code)

    @classmethod
    def build(cls, rule: FlatRule, threshold: float, k: int, n: int) -> GridConfidences | None:
        """The grid for ``rule``, or None when its update reads more than the confidence
        or its reachable set is too large (then the floats are kept)."""
        if rule.needs_baseline or rule.needs_counts:
            return None
        start = rule.start()
        try:
            space = confidence_space(rule, threshold, start, keep_below=True)
        except ParameterError:
            return None
        i = int(np.searchsorted(space.states, start))
        if i >= len(space.states) or space.states[i] != start:
            return None  # snapping moved the start: keep the floats the rule gives
        return cls(space, i, k, n)

    def active(self) -> np.ndarray:
        """Cells at or above the threshold (states sorted: a suffix of the codes)."""
        return self.code >= self.first_shown

    def select(self, active: np.ndarray, n_active: np.ndarray, limit: int, shown) -> None:
        """Drop, in place on ``shown``, the lowest-ranked active cells of the users with
        more than ``limit``: one round of a column minimum per surplus procedure.

        ``code - first_shown`` wraps the inactive codes (below ``first_shown``) past every
        active one in the unsigned dtype, so the minimum is the lowest active cell.
        """
        excess = n_active.astype(np.int64) - limit
        key = self.code - self.dtype(self.first_shown)
        drop = np.empty(key.shape, bool)
        out = np.empty_like(key)
        rounds = int(excess.max())
        for r in range(rounds):
            np.equal(key, key.min(axis=0), out=drop)
            drop &= (excess > r)[None, :]
            shown ^= drop  # every dropped cell was shown
            if r + 1 < rounds:
                np.bitwise_or(key, np.multiply(drop, self._top, out=out), out=key)

    def top(self, cols: np.ndarray, shown: np.ndarray) -> np.ndarray:
        """The highest-ranked shown procedure of each column (an active one has a larger
        code than any inactive one, and the prompt always keeps its top active one)."""
        return (self.k - 1) - self.code[:, cols].max(axis=0) % self.k

    def update(self, shown, signal, observed, n_shown) -> None:
        """One lookup per cell: no move, or the rule's move after a bad or good session."""
        move = np.where(signal, 2 * self.shift, self.shift).astype(self.dtype)
        if observed is not None:
            move[~observed] = 0
        np.multiply(shown, move, out=self._idx)
        np.add(self._idx, self.code, out=self._idx)
        np.take(self.table, self._idx, out=self.code, mode="clip")

    def confidences(self) -> np.ndarray:
        return self.states[self.code // self.k]

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
