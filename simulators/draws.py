"""Bernoulli draws for the vectorized scenarios: the same draws as ``rng.random(shape) <
rate``, in the same order, with less memory traffic.

``bernoulli_rows`` draws a block of rows at a time into one reused float buffer (it stays
in cache); ``scratch`` gives a thread's reusable working array, so a chunk that overwrites
an array whole and drops it before the next chunk reuses memory the process has instead
of faulting fresh pages in chunk after chunk.
"""

from __future__ import annotations

import threading

import numpy as np

BERNOULLI_BLOCK = 1 << 16
"""Uniform draws per block in ``bernoulli_rows`` (the float block stays in cache)."""
_SCRATCH = threading.local()
SCRATCH_KEPT = 4
"""Scratch arrays a thread keeps (a full chunk, the last one, a draw buffer or two)."""


def scratch(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """This thread's reusable array of ``shape`` and ``dtype`` (contents undefined): for
    working arrays a chunk overwrites whole and drops before the next chunk, so memory the
    process already has is reused instead of faulted in afresh chunk after chunk."""
    kept = _SCRATCH.__dict__
    key = (shape, np.dtype(dtype).str)
    if key not in kept:
        if len(kept) >= SCRATCH_KEPT:
            del kept[next(iter(kept))]  # the oldest
        kept[key] = np.empty(shape, dtype=dtype)
    return kept[key]


def bernoulli_rows(
    rng: np.random.Generator, rate: float, n: int, t: int, out: np.ndarray | None = None
) -> np.ndarray:
    """``rng.random((n, t)) < rate`` (into ``out``, if given), the same draws in the same
    order, drawn a block of rows at a time into one reused buffer."""
    out = np.empty((n, t), dtype=bool) if out is None else out
    rows = max(1, BERNOULLI_BLOCK // max(t, 1))
    buffer = scratch((rows, t), float)
    for lo in range(0, n, rows):
        hi = min(n, lo + rows)
        draws = buffer[: hi - lo]
        rng.random(out=draws)
        np.less(draws, rate, out=out[lo:hi])
    return out


class IntegersDraw:
    """``int(rng.integers(n))``, one ``n`` at a time: the same numbers from the same stream
    without numpy's per-call overhead (a loop session draws its task this way).

    numpy draws ``integers(n)`` (int64, ``1 < n <= 2**31`` here) by Lemire's method on the
    bit generator's 32-bit output ``u`` (Lemire 2019, "Fast random integer generation in
    an interval", ACM TOMACS 29(1)): ``m = u * n``; while the low 32 bits of ``m`` are
    below ``(2**32 - n) mod n``, draw again; the answer is ``m >> 32``. ``n = 1`` draws
    nothing. ``u`` comes from the bit generator's own ``next_uint32`` (through its ctypes
    interface), which hands out the kept half of a 64-bit draw first, as numpy's calls do,
    so the two can be mixed; other ``n`` go to numpy. For one thread (it takes no lock).
    """

    __slots__ = ("_next", "_rng", "_state")

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng  # keeps the bit generator, whose state the pointer reads, alive
        c = rng.bit_generator.ctypes
        self._next, self._state = c.next_uint32, c.state

    def __call__(self, n: int) -> int:
        if n == 1:
            return 0
        if not 1 < n <= 1 << 31:
            return int(self._rng.integers(n))
        m = self._next(self._state) * n
        low = m & 0xFFFFFFFF
        if low < n:
            threshold = (0xFFFFFFFF - (n - 1)) % n
            while low < threshold:
                m = self._next(self._state) * n
                low = m & 0xFFFFFFFF
        return m >> 32

    def __reduce__(self) -> tuple:
        return IntegersDraw, (self._rng,)  # a copy reads its own generator's state
