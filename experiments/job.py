"""One job: validate, skip if already done, run the scenario or task, log it to MLflow.

A job's life (each step before the next):

1. validate every config value (``experiments.build.validate``) - no run exists yet;
2. derive the config hash and the job's seed (``experiments.identity``);
3. with ``resume=true``, stop if a FINISHED run with the same hash is in the experiment;
4. open the MLflow run (a child of the sweep's parent run in ``-m`` mode) with its tags;
5. run: a scenario (``scenario.run(job_seed)``) or a task (``experiments.<task>.run_task``);
6. write ``config.yaml``, ``tables/<name>.parquet`` and ``figures/*.png`` into
   ``<job dir>/artifacts`` beside whatever the task wrote there, log params and metrics
   in one batch and the folder in one upload, and mark the run FINISHED.

Five MLflow calls per job (create, batch, upload, terminate, plus the parent look-up in
a sweep): SQLite commits each one, so fewer calls is what keeps tracking cheap.

A job that raises is marked FAILED with its params, ``traceback.txt`` and whatever it had
written to ``artifacts/`` before it failed.
In a sweep the job then returns normally so the other jobs go on (the sweep callback
fails the parent and the command); a single run re-raises. Ctrl-C marks the run KILLED.
"""

from __future__ import annotations

import logging
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from experiments import tracking as tr
from experiments.build import SCENARIO_TASK, task_module, validate
from experiments.figures import scenario_figures
from experiments.identity import (
    config_hash,
    flatten,
    git_commit,
    identity_container,
    job_container,
    job_seed,
)
from experiments.progress import chunk_progress
from simulators.result import ScenarioResult

log = logging.getLogger(__name__)


@dataclass
class JobContext:
    """Where and how a job runs (from Hydra's runtime config, or set by a benchmark)."""

    out_dir: Path
    multirun: bool = False
    sweep_dir: str | None = None
    job_num: int = 0
    overrides: list[str] = field(default_factory=list)


@dataclass
class JobOutcome:
    """What a job did: ``status`` is finished, failed or skipped; times in seconds."""

    status: str
    config_hash: str
    run_id: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    total_seconds: float = 0.0
    tracking_seconds: float = 0.0
    artifact_seconds: float = 0.0
    figure_seconds: float = 0.0


def label(cfg: DictConfig) -> str:
    """The scenario name for scenario jobs, else the task name."""
    if cfg.task == SCENARIO_TASK:
        return str(cfg.scenario.name)
    return str(cfg.task)


def parent_run(tracker: tr.Tracker, sweep_dir: str) -> str:
    """The sweep's parent run (opened by ``experiments.callbacks.SweepTracking``)."""
    parents = tracker.running_parents(sweep_dir)
    if not parents:
        raise RuntimeError(
            f"no RUNNING parent run for sweep dir {sweep_dir!r} in experiment "
            f"{tracker.experiment!r}: is hydra.callbacks.tracking set?"
        )
    return parents[0].info.run_id


def run_tags(cfg: DictConfig, ctx: JobContext, digest: str, seed: int) -> dict[str, str]:
    commit, dirty = git_commit()
    return {
        tr.TAG_ROLE: "child" if ctx.multirun else "single",
        tr.TAG_HASH: digest,
        tr.TAG_SCENARIO: label(cfg),
        "procmem.task": str(cfg.task),
        tr.TAG_SEED: str(cfg.seed),
        tr.TAG_JOB_SEED: str(seed),
        tr.TAG_PRESET: str(cfg.tracking.experiment),
        tr.TAG_OVERRIDES: " ".join(ctx.overrides),
        "procmem.job_num": str(ctx.job_num),
        tr.TAG_COMMIT: commit,
        "procmem.git_dirty": str(dirty).lower(),
    }


def execute(cfg: DictConfig, scenario: Any, seed: int, out_dir: Path) -> ScenarioResult:
    """Run the scenario (with a progress bar over chunks) or the task's ``run_task``."""
    if scenario is not None:
        with chunk_progress(str(cfg.progress), label(cfg)):
            return scenario.run(seed)
    return task_module(str(cfg.task)).run_task(cfg, out_dir)


def write_artifacts(cfg: DictConfig, result: ScenarioResult, folder: Path) -> None:
    """``config.yaml`` and ``tables/<name>.parquet`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(
        OmegaConf.to_yaml(job_container(cfg), sort_keys=False), encoding="utf-8"
    )
    if result.tables:
        (folder / "tables").mkdir(exist_ok=True)
    for name, table in result.tables.items():
        table.to_parquet(folder / "tables" / f"{name}.parquet", index=False)


def run_job(cfg: DictConfig, ctx: JobContext) -> JobOutcome:
    """Validate, resume-check, run and log one job; see the module docstring."""
    start = time.perf_counter()
    scenario = validate(cfg)
    digest = config_hash(cfg)
    seed = job_seed(int(cfg.seed), digest)
    tracker = tr.Tracker(str(cfg.tracking.experiment))
    outcome = JobOutcome("finished", digest)
    if cfg.resume:
        done = tracker.finished_run(digest)
        if done is not None:
            print(f"resume: config {digest} already finished in run {done}", file=sys.stderr)
            outcome.status, outcome.run_id = "skipped", done
            outcome.tracking_seconds = tracker.seconds
            outcome.total_seconds = time.perf_counter() - start
            return outcome
    tags = run_tags(cfg, ctx, digest, seed)
    if ctx.multirun:
        tags[tr.TAG_PARENT] = parent_run(tracker, str(ctx.sweep_dir))
    name = f"{label(cfg)}-{ctx.job_num}" if ctx.multirun else label(cfg)
    run_id = tracker.start_run(name, tags)
    outcome.run_id = run_id
    params = flatten(identity_container(cfg) | {"resume": cfg.resume})
    folder = ctx.out_dir / "artifacts"
    try:
        result = execute(cfg, scenario, seed, ctx.out_dir)
        t0 = time.perf_counter()
        write_artifacts(cfg, result, folder)
        t1 = time.perf_counter()
        if cfg.tracking.figures:
            scenario_figures(result, folder / "figures")
        outcome.figure_seconds = time.perf_counter() - t1
        outcome.artifact_seconds = t1 - t0
        outcome.metrics = dict(result.metrics)
        tracker.log(run_id, params=params, metrics=result.metrics)
        tracker.log_artifacts(run_id, folder)
        tracker.finish(run_id, "FINISHED")
    except Exception:
        outcome.status = "failed"
        failure = ctx.out_dir / "failure"  # apart from artifacts/, which may be the problem
        failure.mkdir(parents=True, exist_ok=True)
        (failure / "traceback.txt").write_text(traceback.format_exc(), encoding="utf-8")
        tracker.log(run_id, params=params)
        tracker.log_artifacts(run_id, failure)
        tracker.log_artifacts(run_id, folder)  # what the job wrote before it failed
        tracker.finish(run_id, "FAILED")
        log.error("job %s (%s) FAILED; traceback logged to run %s", ctx.job_num, name, run_id)
        if not ctx.multirun:
            raise
    except BaseException:
        tracker.finish(run_id, "KILLED")
        raise
    finally:
        outcome.tracking_seconds = tracker.seconds
        outcome.total_seconds = time.perf_counter() - start
    return outcome
