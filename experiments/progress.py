"""A tqdm progress bar over a job's replication chunks, on a terminal only.

The simulators announce each finished chunk through ``simulators.replication.CHUNK_LISTENER``
(a context variable they never set themselves); this module sets it for the duration of
one scenario run. ``progress=auto`` shows the bar when stderr is a terminal, ``on``
always, ``off`` never. The bar goes to stderr, so stdout stays the job's own output.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tqdm import tqdm

from simulators.replication import CHUNK_LISTENER, Chunk


def wants_bar(mode: str) -> bool:
    """``on``: yes; ``off``: no; ``auto``: when stderr is a terminal."""
    return mode == "on" or (mode == "auto" and sys.stderr.isatty())


@contextmanager
def chunk_progress(mode: str, label: str) -> Iterator[tqdm | None]:
    """Show one bar for every chunk the scenario runs inside the ``with`` block.

    A scenario may call ``chunks`` several times (one pass per true drop, say): each new
    pass adds its chunks to the bar's total.
    """
    if not wants_bar(mode):
        yield None
        return
    bar = tqdm(total=0, desc=label, unit="chunk", file=sys.stderr, leave=False)

    def listener(chunk: Chunk, n_chunks: int) -> None:
        if chunk.index == 0:
            bar.total += n_chunks
            bar.refresh()
        bar.update(1)

    token = CHUNK_LISTENER.set(listener)
    try:
        yield bar
    finally:
        CHUNK_LISTENER.reset(token)
        bar.close()
