"""A Hydra callback for tests: hold chosen jobs after their first replication chunk.

``+hydra.callbacks.barrier._target_=sweep_barrier.Barrier`` with ``folder`` and ``hold``
(job numbers): a held job writes ``reached-<num>`` (its pid) into ``folder`` once its run
exists and its first chunk is done, then waits until ``release-<num>`` or ``release``
exists there. A test waits on those files, not on seconds of work, so what it checks
does not depend on the machine's load. Not part of procmem: the tests put this folder on
the subprocess's ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

from simulators.replication import CHUNK_LISTENER

HOLD_SECONDS = 180.0


class Barrier(Callback):
    def __init__(self, folder: str, hold: list[int]) -> None:
        self.folder = Path(folder)
        self.hold = {int(n) for n in hold}

    def on_job_start(self, config: Any, **kwargs: Any) -> None:
        num = int(config.hydra.job.num) if "num" in config.hydra.job else 0
        if num not in self.hold:
            return
        folder = self.folder

        def hold(chunk: Any, _n_chunks: int) -> None:
            if chunk.index:
                return
            (folder / f"reached-{num}").write_text(str(os.getpid()))
            deadline = time.monotonic() + HOLD_SECONDS
            while not ((folder / f"release-{num}").exists() or (folder / "release").exists()):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"barrier: job {num} was never released")
                time.sleep(0.02)

        CHUNK_LISTENER.set(hold)
