"""Progress: a sweep's jobs (``SweepProgress``) and a single job's replication chunks.

``SweepProgress`` runs in the sweep's main process and reads the children from the
tracking store, so it works the same under every launcher (in-process, local processes,
Ray, SLURM): after each finished job it prints jobs done / total, the time elapsed and
that job's key metrics on stderr (one line each, or one line redrawn on a terminal;
``progress=off`` silences it). It also keeps the parent's heartbeat (tag
``procmem.heartbeat``), by which another machine tells a live sweep from an orphan.

A single job (no sweep) gets a tqdm bar over its replication chunks on a terminal.

The simulators announce each finished chunk through ``simulators.replication.CHUNK_LISTENER``
(a context variable they never set themselves); this module sets it for the duration of
one scenario run. ``progress=auto`` shows the bar when stderr is a terminal, ``on``
always, ``off`` never. The bar goes to stderr, so stdout stays the job's own output.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from tqdm import tqdm

from experiments.summary import clock, headline
from simulators.replication import CHUNK_LISTENER, Chunk

POLL_SECONDS = 2.0
HEARTBEAT_SECONDS = 60.0
ENDED = ("FINISHED", "FAILED", "KILLED")


class SweepProgress:
    """Jobs done / total, elapsed and the last job's key metrics, polled from the store."""

    def __init__(
        self, uri: str, experiment: str, parent_id: str, jobs: Sequence[Any], mode: str
    ) -> None:
        from experiments.tracking import Tracker

        self.tracker = Tracker(experiment, uri)
        self.parent_id = parent_id
        self.jobs = {job.num: job for job in jobs}
        self.total = len(jobs)
        self.skipped = sum(job.skipped_by is not None for job in jobs)
        self.show = mode != "off"
        self.tty = sys.stderr.isatty()
        self.started = time.perf_counter()
        self.seen: set[str] = set()
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="procmem-progress", daemon=True)
        self._beat = 0.0

    def start(self) -> None:
        self._thread.start()

    def stop(self, final: bool = True) -> None:
        """Stop polling; with ``final``, print the last state first."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=POLL_SECONDS * 5)
        if final:
            self.update()
        if self.show and self.tty and self.seen:
            print(file=sys.stderr)

    def _loop(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            try:
                self.update()
                self.heartbeat()
            except Exception:  # a store that is briefly away: the jobs retry, so do we
                continue

    def heartbeat(self) -> None:
        from experiments.tracking import TAG_HEARTBEAT

        if time.monotonic() - self._beat >= HEARTBEAT_SECONDS:
            self._beat = time.monotonic()
            self.tracker.log(self.parent_id, tags={TAG_HEARTBEAT: f"{time.time():.0f}"})

    def update(self) -> None:
        """Print one line per newly ended job."""
        runs = [r for r in self.tracker.children(self.parent_id) if r.info.status in ENDED]
        for run in sorted(runs, key=lambda r: r.info.end_time or 0):
            if run.info.run_id in self.seen:
                continue
            self.seen.add(run.info.run_id)
            self.failed += run.info.status != "FINISHED"
            if self.show:
                self.print_line(run)

    def print_line(self, run: Any) -> None:
        done = len(self.seen) + self.skipped
        metrics = dict(run.data.metrics)
        label = run.data.tags.get("procmem.scenario", "")
        shown = headline(label, metrics)
        status = "" if run.info.status == "FINISHED" else f" {run.info.status}"
        extra = [f"{self.failed} failed"] * bool(self.failed)
        extra += [f"{self.skipped} skipped"] * bool(self.skipped)
        line = (
            f"[{done}/{self.total} jobs{' (' + ', '.join(extra) + ')' if extra else ''}, "
            f"{clock(time.perf_counter() - self.started)}] "
            f"#{run.data.tags.get('procmem.job_num', '?')} {run.info.run_name}{status}"
            + (f": {shown}" if shown else "")
        )
        if self.tty:
            print("\r\x1b[2K" + line[:200], end="", file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr, flush=True)


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
