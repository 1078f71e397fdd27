"""The Hydra plugin behind ``hydra/launcher=local``: each job in its own process.

Hydra finds launchers only in the ``hydra_plugins`` package, so this module holds the
plugin class and nothing heavy (Hydra imports every plugin module when it starts); the
work is in ``experiments.launcher``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hydra.core.utils import JobReturn
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


class ProcessLauncher(Launcher):
    """Runs at most ``n_jobs`` jobs at a time, each in a fresh process (see
    ``experiments.launcher``): a job whose process dies fails alone."""

    def __init__(self, n_jobs: int = 2, **kwargs: Any) -> None:
        self.n_jobs = n_jobs
        self.options = kwargs
        self.config: DictConfig | None = None
        self.task_function: TaskFunction | None = None
        self.hydra_context: HydraContext | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        self.config = config
        self.task_function = task_function
        self.hydra_context = hydra_context

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        from experiments.launcher import launch

        return launch(self, job_overrides, initial_job_idx)
