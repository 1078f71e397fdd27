"""Hydra entry point: ``python -m experiments.run experiment=<preset> [overrides]``.

Add ``-m`` to run the preset's sweep (``hydra.sweeper.params``). Every value is checked
before anything runs; each job is logged to MLflow (``experiments.tracking``); a sweep is
one parent run opened and closed by ``experiments.callbacks.SweepTracking``. The command
exits non-zero when a job failed. docs/experiments.md has the details.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

import experiments.schema  # noqa: F401 (registers the structured configs)
from experiments.callbacks import SWEEP_STATUS
from experiments.job import JobContext, run_job


def context(hydra_cfg: DictConfig) -> JobContext:
    """The job's folder, mode, sweep dir, number and overrides from Hydra's runtime config."""
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    return JobContext(
        out_dir=Path(hydra_cfg.runtime.output_dir),
        multirun=multirun,
        sweep_dir=str(hydra_cfg.sweep.dir) if multirun else None,
        job_num=int(OmegaConf.select(hydra_cfg, "job.num", default=0) or 0),
        overrides=list(hydra_cfg.overrides.task),
    )


CONF_DIR = Path(__file__).resolve().parents[1] / "conf"


def compose_job(experiment: str, overrides: Sequence[str] = ()) -> DictConfig:
    """The job config ``python -m experiments.run experiment=<experiment> <overrides>``
    runs, with its ``hydra`` node (for notebooks, tests and benchmarks).

    HydraConfig is set to it, as during a run, so ``${hydra:...}`` interpolations resolve.
    Sweep values (``a=1,2``) are not expanded: give one value per key.
    """
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(
            "config", overrides=[f"experiment={experiment}", *overrides], return_hydra_config=True
        )
    HydraConfig.instance().set_config(cfg)
    return cfg


@hydra.main(config_path="../conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> str:
    """Run one job; returns its status (finished, failed or skipped)."""
    return run_job(cfg, context(HydraConfig.get())).status


def cli() -> None:
    """``main()``, then exit non-zero if a sweep had failed or missing jobs."""
    main()
    sys.exit(SWEEP_STATUS["exit"])


if __name__ == "__main__":
    cli()
