"""One big job across cores: a scenario's chunks mapped over worker processes.

Chunk ``i`` draws from the ``i``-th spawned child of the job's seed whoever runs it
(``replication.chunks``), and the results are gathered in chunk order, so a run on
``w`` workers gives exactly the numbers of a run on one. ``map_chunks(fn, seed,
replications, chunk_size)`` applies ``fn(chunk)`` to every chunk: in this process when
``CHUNK_WORKERS`` is 1 (the default for library use), else in a pool of that many
processes forked from a fresh server process (``forkserver``: nothing of the caller's
threads or locks is inherited). ``fn`` must be picklable (a module-level function, or a
bound method of a frozen dataclass scenario), and, as with any multiprocessing pool, a
script that sets more than one worker keeps its entry point under
``if __name__ == "__main__":``. The experiments layer sets the workers from the config
key ``workers`` (default: the cores the job was given).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import numpy as np

from procmem_core.errors import check_int
from simulators.replication import CHUNK_LISTENER, Chunk, check_seed

T = TypeVar("T")

CHUNK_WORKERS: ContextVar[int] = ContextVar("CHUNK_WORKERS", default=1)
"""Processes a scenario may spread its chunks over (1: all in this process)."""


@contextmanager
def chunk_workers(workers: int) -> Iterator[int]:
    """Run the scenarios inside the block on ``workers`` processes (identical numbers)."""
    token = CHUNK_WORKERS.set(check_int("workers", workers, minimum=1))
    try:
        yield workers
    finally:
        CHUNK_WORKERS.reset(token)


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _plan(seed: int, replications: int, chunk_size: int) -> list[tuple[int, int, int, Any]]:
    """``(index, start, stop, seed sequence)`` of every chunk (as ``replication.chunks``)."""
    seed = check_seed(seed)
    replications = check_int("replications", replications, minimum=1)
    chunk_size = check_int("chunk_size", chunk_size, minimum=1)
    n = -(-replications // chunk_size)
    children = np.random.SeedSequence(seed).spawn(n)
    return [
        (i, i * chunk_size, min(replications, (i + 1) * chunk_size), child)
        for i, child in enumerate(children)
    ]


def _run(fn: Callable[[Chunk], T], spec: tuple[int, int, int, Any]) -> T:
    index, start, stop, child = spec
    return fn(Chunk(index, start, stop, np.random.default_rng(child)))


def map_chunks(fn: Callable[[Chunk], T], seed: int, replications: int, chunk_size: int) -> list[T]:
    """``[fn(chunk) for chunk in chunks(seed, replications, chunk_size)]``, on
    ``CHUNK_WORKERS`` processes when there is more than one chunk; results in chunk order.
    ``CHUNK_LISTENER`` hears of each chunk as its result is taken, in order."""
    plan = _plan(seed, replications, chunk_size)
    listener = CHUNK_LISTENER.get()
    workers = min(CHUNK_WORKERS.get(), len(plan))
    out: list[T] = []
    if workers <= 1:
        for spec in plan:
            chunk = Chunk(spec[0], spec[1], spec[2], np.random.default_rng(spec[3]))
            out.append(fn(chunk))
            if listener is not None:
                listener(chunk, len(plan))
        return out
    context = multiprocessing.get_context("forkserver")
    # the server is a fresh interpreter (no caller's threads or locks) that imports the
    # scenarios once; each worker is forked from it, so starts in milliseconds
    context.set_forkserver_preload(["simulators.scenarios"])
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = [pool.submit(_run, fn, spec) for spec in plan]
        for (index, start, stop, child), future in zip(plan, futures, strict=True):
            out.append(future.result())
            if listener is not None:
                listener(Chunk(index, start, stop, np.random.default_rng(child)), len(plan))
    return out
