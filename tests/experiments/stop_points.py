"""A Hydra callback for tests: send this process a real SIGTERM at a chosen point.

``+hydra.callbacks.stop._target_=stop_points.StopAfterFinished``: once the job's run has
been marked FINISHED in the store (``MlflowClient.set_terminated`` returned), the job's
own process is sent SIGTERM, so the stop arrives at exactly the moment issue 31 found
racy, whatever the machine's load. Not part of procmem: the tests put this folder on the
subprocess's ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import signal
from typing import Any

from hydra.experimental.callback import Callback


class StopAfterFinished(Callback):
    def on_job_start(self, config: Any, **kwargs: Any) -> None:
        from mlflow.tracking import MlflowClient

        original = MlflowClient.set_terminated

        def set_terminated(client: Any, run_id: str, status: str | None = None, *a: Any) -> Any:
            out = original(client, run_id, status, *a)
            if status == "FINISHED":
                os.kill(os.getpid(), signal.SIGTERM)  # the handler raises here, after the commit
            return out

        MlflowClient.set_terminated = set_terminated
