"""Hydra entry point: ``python -m experiments.run experiment=<preset> [overrides]``.

Add ``-m`` to run the preset's sweep (``hydra.sweeper.params``). Every value is checked
before anything runs; each job is logged to MLflow (``experiments.tracking``); a sweep is
one parent run opened and closed by ``experiments.callbacks.SweepTracking``. The command
exits 1 when a job failed or a value is refused (one line on stderr, no traceback), and
``128 + signal`` when stopped by SIGTERM (143) or SIGINT (130), after marking the runs
in flight KILLED. docs/experiments.md has the details.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import hydra
from omegaconf import DictConfig, OmegaConf

if TYPE_CHECKING:
    from experiments.job import JobContext

# The engine, MLflow and the job's modules are imported where they are first needed, so
# a value refused before Hydra composes (``check_choices``) costs no import of them.

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"


def context(hydra_cfg: DictConfig) -> JobContext:
    """The job's folder, mode, sweep dir, number and overrides from Hydra's runtime config."""
    from hydra.types import RunMode

    from experiments.job import JobContext

    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    return JobContext(
        out_dir=Path(hydra_cfg.runtime.output_dir),
        multirun=multirun,
        sweep_dir=str(hydra_cfg.sweep.dir) if multirun else None,
        job_num=int(OmegaConf.select(hydra_cfg, "job.num", default=0) or 0),
        overrides=list(hydra_cfg.overrides.task),
        concurrent_jobs=int(OmegaConf.select(hydra_cfg, "launcher.n_jobs", default=1) or 1)
        if multirun
        else 1,
    )


def compose_job(experiment: str, overrides: Sequence[str] = ()) -> DictConfig:
    """The job config ``python -m experiments.run experiment=<experiment> <overrides>``
    runs, with its ``hydra`` node (for notebooks, tests and benchmarks).

    HydraConfig is set to it, as during a run, so ``${hydra:...}`` interpolations resolve.
    Sweep values (``a=1,2``) are not expanded: give one value per key.
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.hydra_config import HydraConfig

    register_schema()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(
            "config", overrides=[f"experiment={experiment}", *overrides], return_hydra_config=True
        )
    HydraConfig.instance().set_config(cfg)
    return cfg


def register_schema() -> None:
    """Register the structured configs (``experiments.schema``: it imports the engine's
    registries) before Hydra composes."""
    import experiments.schema  # noqa: F401


def group_options(group: str) -> list[str] | None:
    """The options of a config group a user can choose (its YAML files); None when
    ``group`` is not a folder of ``conf/`` (Hydra's own groups, or a key)."""
    folder = CONF_DIR / group
    if group.startswith("hydra") or not folder.is_dir():
        return None
    return sorted(p.stem for p in folder.glob("*.yaml"))


def check_choices(arguments: Sequence[str]) -> str | None:
    """The one-line error for a group option that does not exist (``gate=sprtt``), naming
    the options a user can choose (Hydra's own message also lists internal schemas), or
    for an experiment name that is not a safe folder name (``tracking.experiment=``,
    ``../x``): checked before Hydra creates the run's folder from it."""
    for argument in arguments:
        key, sep, value = argument.lstrip("+").partition("=")
        if sep and key == "tracking.experiment":
            from experiments.stores import check_experiment_name
            from procmem_core.errors import ParameterError

            try:
                check_experiment_name(value.strip("'\""))
            except ParameterError as exc:
                return str(exc)
        options = group_options(key) if sep and not key.startswith("~") else None
        if options is None or any(c in value for c in "()[]{}*$"):
            continue
        for choice in value.split(","):
            if choice not in (*options, "null"):
                return f"{key}={choice!r} is not an option: one of {', '.join(options)}"
    return None


@hydra.main(config_path="../conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> str | float:
    """Run one job; returns its status (finished, failed or skipped), or in a search (an
    ``objective`` set) the objective for the sweeper (``experiments.search``)."""
    from hydra.core.hydra_config import HydraConfig

    from experiments.job import run_job
    from experiments.search import objective_value
    from procmem_core.errors import ProcmemError

    ctx = context(HydraConfig.get())
    before = log_sizes(ctx.out_dir)
    try:
        outcome = run_job(cfg, ctx)
        objective = OmegaConf.select(cfg, "objective")
        if objective and ctx.multirun:
            return objective_value(outcome.status, outcome.metrics, str(objective))
        return outcome.status
    except ProcmemError as exc:  # a refused value or store: one line, as in a sweep
        if ctx.multirun:
            raise
        discard_outputs(ctx.out_dir, before=before)
        print(f"Error: {exc}", file=sys.stderr)
        raise SystemExit(1) from None


HYDRA_FILES = (".hydra/config.yaml", ".hydra/hydra.yaml", ".hydra/overrides.yaml")


def _job_logs(out_dir: Path) -> list[logging.FileHandler]:
    """The root logger's file handlers that write into ``out_dir`` (the job's log)."""
    return [
        h
        for h in logging.getLogger().handlers
        if isinstance(h, logging.FileHandler) and Path(h.baseFilename).parent == out_dir.resolve()
    ]


def log_sizes(out_dir: Path) -> dict[Path, int]:
    """The size of each job log in ``out_dir`` when the job starts: more than 0 bytes is
    what was there before this run (Hydra appends to a log it finds)."""
    sizes = {}
    for handler in _job_logs(out_dir):
        handler.flush()
        path = Path(handler.baseFilename)
        sizes[path] = path.stat().st_size if path.exists() else 0
    return sizes


def discard_outputs(
    out_dir: Path, stop_at: Path | None = None, before: dict[Path, int] | None = None
) -> None:
    """A refused single run leaves nothing: the files Hydra wrote into its folder before
    the job ran (``.hydra/*.yaml``, the job's log) are removed, then the folder if it is
    empty, and its parents left empty below ``stop_at`` (default: the working
    directory, where ``outputs/`` lives). A log that held ``before[path]`` bytes when
    the job started (a folder given by ``hydra.run.dir`` that already had one) is cut
    back to them, not removed: those bytes are not this run's."""
    root = logging.getLogger()
    for handler in _job_logs(out_dir):
        path = Path(handler.baseFilename)
        root.removeHandler(handler)
        handler.close()
        kept = (before or {}).get(path, 0)
        if kept > 0 and path.exists():
            os.truncate(path, kept)
        else:
            path.unlink(missing_ok=True)
    for name in HYDRA_FILES:
        (out_dir / name).unlink(missing_ok=True)
    stop = (stop_at or Path.cwd()).resolve()
    parents = [p for p in out_dir.resolve().parents if stop in p.parents]
    for folder in (out_dir / ".hydra", out_dir, *parents):
        try:
            folder.rmdir()  # only when empty
        except OSError:
            break


def cli() -> None:
    """``main()``, then exit non-zero if a sweep had failed or missing jobs, or with
    ``128 + signal`` when stopped (the open sweep's runs marked KILLED first)."""
    problem = check_choices(sys.argv[1:])
    if problem is not None:
        print(f"Error: {problem}", file=sys.stderr)
        sys.exit(1)
    from experiments.callbacks import ACTIVE, SWEEP_STATUS
    from experiments.stopping import Stopped, install_handlers

    register_schema()
    install_handlers()
    try:
        main()
    except Stopped as stop:
        done = [sweep.abandon(f"the sweep was {stop.reason}") for sweep in ACTIVE]
        what = "; ".join(d for d in done if d) or "any run in flight marked KILLED"
        print(f"experiments.run: {stop.reason}: {what}", file=sys.stderr)
        sys.exit(stop.exit_code)
    sys.exit(SWEEP_STATUS["exit"])


if __name__ == "__main__":
    cli()
