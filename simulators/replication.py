"""Replications in chunks, each chunk with its own spawned random stream.

A scenario with ``R`` replications is run in chunks of at most ``chunk_size``
replications so memory stays bounded. Chunk ``i`` draws from the ``i``-th child of
``numpy.random.SeedSequence(seed)``, so its numbers depend only on the seed, the chunk
size and ``i``, never on the order in which chunks are run (docs/statistics.md, "Monte
Carlo hygiene"). Changing ``chunk_size`` changes the streams, so it is a scenario
parameter, not a tuning knob that silently moves results.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np

from procmem_core.errors import ParameterError, check_int, is_number

DEFAULT_CHUNK = 65_536


@dataclass(frozen=True)
class Chunk:
    """Replications ``start`` (inclusive) to ``stop`` (exclusive) and their generator."""

    index: int
    start: int
    stop: int
    rng: np.random.Generator

    @property
    def size(self) -> int:
        return self.stop - self.start


CHUNK_LISTENER: ContextVar[Callable[[Chunk, int], None] | None] = ContextVar(
    "CHUNK_LISTENER", default=None
)
"""Called as ``listener(chunk, n_chunks)`` after each chunk finishes (progress bars).

The simulators never set it; a caller (``experiments.progress``) sets it around a run.
It sees chunks only: it draws no random numbers and cannot change results."""


def check_seed(seed: int) -> int:
    """A seed is a non-negative integer (what ``SeedSequence`` accepts)."""
    return check_int("seed", seed, minimum=0)


def chunks(seed: int, replications: int, chunk_size: int = DEFAULT_CHUNK) -> Iterator[Chunk]:
    """Yield the chunks of ``replications``, chunk ``i`` seeded by child ``i`` of the seed.

    After the caller is done with a chunk (asks for the next one), ``CHUNK_LISTENER``, if
    set, hears of it.
    """
    seed = check_seed(seed)
    replications = check_int("replications", replications, minimum=1)
    chunk_size = check_int("chunk_size", chunk_size, minimum=1)
    n = -(-replications // chunk_size)
    children = np.random.SeedSequence(seed).spawn(n)
    listener = CHUNK_LISTENER.get()
    for i, child in enumerate(children):
        start = i * chunk_size
        chunk = Chunk(i, start, min(replications, start + chunk_size), np.random.default_rng(child))
        yield chunk
        if listener is not None:
            listener(chunk, n)


def generator(seed: int) -> np.random.Generator:
    """The one generator of a job that is not chunked: ``default_rng(SeedSequence(seed))``."""
    return np.random.default_rng(np.random.SeedSequence(check_seed(seed)))


def check_positive(field: str, value: float, *, allow_zero: bool = False) -> float:
    """A finite number > 0 (or >= 0 with ``allow_zero``)."""
    if not is_number(value):
        raise ParameterError(field, value, "expected a number")
    x = float(value)
    ok = (x >= 0 if allow_zero else x > 0) and np.isfinite(x)
    if not ok:
        raise ParameterError(
            field, value, "expected a finite number " + (">= 0" if allow_zero else "> 0")
        )
    return x
