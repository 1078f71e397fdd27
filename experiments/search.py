"""A search with Hydra's Optuna sweeper (``hydra-optuna-sweeper``): the preset sets
``hydra/sweeper: optuna`` and ``objective`` (a metric the job logs, minimized or
maximized as ``hydra.sweeper.direction`` says; ``loop_search``: ``regret_change``).

The trials are not known before the search runs (the sampler picks each from the results
so far, TPE seeded by ``hydra.sweeper.sampler.seed``, which the preset takes from
``seed``), so the sweep callback (``experiments.callbacks``) checks the search instead of
planning its jobs, names the runs by the searched keys, and reads the jobs back from the
parent's children at the end. Each job returns its objective to the sweeper
(``objective_value``); a failed job returns NaN, which Optuna records as a failed trial,
and so does a job whose process died (``experiments.launcher``). A job whose config is
refused (a ``ProcmemError``) stops the search, as it stops any sweep.
A search does not resume (``resume=true`` is refused): a skipped job has no objective.
"""

from __future__ import annotations

import math
from typing import Any

from omegaconf import DictConfig, OmegaConf

from experiments import tracking as tr
from experiments.build import validate
from experiments.plan import BASIC_SWEEPER, PlannedJob, sweep_params
from procmem_core.errors import ParameterError, check_int

GROUP_KEYS = {"quarantine", "gate", "cost_gate", "feedback", "rule", "users", "explore"}
"""Config groups a search may choose among (logged as ``<group>.name``)."""


def is_search(config: DictConfig) -> bool:
    """Whether the sweep runs a sweeper other than Hydra's basic one (the Optuna sweeper)."""
    target = OmegaConf.select(config, "hydra.sweeper._target_")
    return target is not None and target != BASIC_SWEEPER


def check_search(config: DictConfig) -> None:
    """Refuse a search that cannot run, before the store is touched: no ``objective``, a
    trial count below 1, ``resume=true``, or a base config with a bad value."""
    if not OmegaConf.select(config, "objective"):
        raise ParameterError("objective", None, "the metric the search optimizes (regret_change)")
    check_int("hydra.sweeper.n_trials", OmegaConf.select(config, "hydra.sweeper.n_trials"),
              minimum=1)  # fmt: skip
    if config.resume:
        raise ParameterError("resume", True, "false: a search does not resume")
    job = OmegaConf.masked_copy(config, [k for k in config if k != "hydra"])
    validate(job)


def search_vary(config: DictConfig) -> list[str]:
    """The param keys that tell the trials apart: the searched keys (a group as
    ``<group>.name``)."""
    keys = [k.lstrip("+~") for k in sweep_params(config)]
    return [f"{k}.name" if k in GROUP_KEYS else k for k in keys]


def jobs_from_children(runs: list[Any]) -> list[PlannedJob]:
    """The search's jobs, one per child run, from the tags each job logged."""
    jobs = []
    for run in runs:
        tags = run.data.tags
        jobs.append(
            PlannedJob(
                num=int(tags.get("procmem.job_num", -1)),
                overrides=tags.get(tr.TAG_OVERRIDES, "").split(),
                config_hash=tags.get(tr.TAG_HASH, ""),
                label=tags.get(tr.TAG_SCENARIO, ""),
                params={},
                name=tags.get(tr.TAG_RUN_NAME, ""),
            )
        )
    return sorted(jobs, key=lambda j: j.num)


def objective_value(status: str, metrics: dict[str, float], objective: str) -> float:
    """The objective a job returns to the sweeper: its metric, NaN when the job failed;
    a finished job without the metric is an error naming it."""
    if status != "finished":
        return math.nan
    if objective not in metrics:
        raise ParameterError("objective", objective, f"a metric the job logs: {sorted(metrics)}")
    return float(metrics[objective])
