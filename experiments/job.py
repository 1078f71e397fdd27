"""One job: validate, skip if already done, run the scenario or task, log it to MLflow.

A job's life (each step before the next):

1. validate every config value (``experiments.build.validate``) - no run exists yet;
2. derive the config hash and the job's seed (``experiments.identity``);
3. a single run checks the tracking URI (a sweep's main process did) and fails the
   orphans of killed runs; with ``resume=true``, stop if a FINISHED run with the same
   hash is in the experiment;
4. open the MLflow run (a child of the sweep's parent run ``tracking.parent`` in ``-m``
   mode) with its tags and a name that says what it is (``gate: SPRT, ledger size 20``);
5. run: a scenario (``scenario.run(job_seed)``) or a task (``experiments.<task>.run_task``);
6. write ``config.yaml``, ``tables/<name>.parquet`` and ``figures/*.png`` into
   ``<job dir>/artifacts`` beside whatever the task wrote there, log params and metrics
   in one batch (curves such as the OC curve also as stepped metrics) and the folder in
   one upload, and mark the run FINISHED.

Four MLflow calls per job (create, batch, upload, terminate): SQLite commits each one,
so fewer calls is what keeps tracking cheap.

A job that raises is marked FAILED with its params, ``traceback.txt`` and whatever it had
written to ``artifacts/`` before it failed.
In a sweep the job then returns normally so the other jobs go on (the sweep callback
fails the parent and the command); a single run re-raises. SIGTERM, SIGINT and the death
of the sweep's main process (``experiments.stopping``) mark the run KILLED with the
reason (tag ``procmem.end_reason``). A terminal status is written once: a stop that
arrives after the run was marked FINISHED leaves it FINISHED (``Tracker.end_if_running``).
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
from experiments.build import label, task_module, validate
from experiments.figures import scenario_figures
from experiments.identity import (
    config_hash,
    flatten,
    git_commit,
    identity_container,
    job_container,
    job_seed,
    run_name,
)
from experiments.progress import chunk_progress
from experiments.stopping import Stopped
from experiments.stores import announce_new, check_uri, uri_source
from experiments.summary import print_single
from procmem_core.errors import ParameterError
from simulators.parallel import available_cores, chunk_workers
from simulators.result import ScenarioResult
from simulators.scenarios.base import unset_phrase

log = logging.getLogger(__name__)


@dataclass
class JobContext:
    """Where and how a job runs (from Hydra's runtime config, or set by a benchmark)."""

    out_dir: Path
    multirun: bool = False
    sweep_dir: str | None = None
    job_num: int = 0
    overrides: list[str] = field(default_factory=list)
    concurrent_jobs: int = 1


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


def parent_run(cfg: DictConfig) -> str:
    """The sweep's parent run, which the sweep's main process passes to every job as
    ``tracking.parent`` (``experiments.callbacks.SweepTracking``)."""
    parent = OmegaConf.select(cfg, "tracking.parent")
    if not parent:
        raise RuntimeError(
            "tracking.parent is not set: a sweep's jobs get it from the sweep callback "
            "(hydra.callbacks.tracking: experiments.callbacks.SweepTracking)"
        )
    return str(parent)


SHOWN_OVERRIDES = ("experiment=", "tracking.", "++tracking.", "hydra", "progress=", "resume=")


def job_name(cfg: DictConfig, ctx: JobContext, params: dict[str, str]) -> str:
    """The run's name: what tells it apart from the other jobs of its sweep (the keys the
    sweep callback passes as ``tracking.vary``), or, for a single run, the values given
    on the command line."""
    vary = OmegaConf.select(cfg, "tracking.vary")
    if vary is None:
        keys = [o.split("=", 1)[0].lstrip("+~") for o in ctx.overrides if "=" in o]
        vary = [k for k in keys if not k.startswith(SHOWN_OVERRIDES)]
    return run_name(label(cfg), params, list(vary))


def run_tags(cfg: DictConfig, ctx: JobContext, digest: str, seed: int) -> dict[str, str]:
    from experiments.callbacks import own_overrides
    from experiments.identity import package_versions

    commit, dirty = git_commit()
    return {
        tr.TAG_ROLE: "child" if ctx.multirun else "single",
        tr.TAG_HASH: digest,
        tr.TAG_SCENARIO: label(cfg),
        "procmem.task": str(cfg.task),
        tr.TAG_SEED: str(cfg.seed),
        tr.TAG_JOB_SEED: str(seed),
        tr.TAG_PRESET: str(cfg.tracking.experiment),
        tr.TAG_OVERRIDES: " ".join(own_overrides(ctx.overrides)),
        "procmem.job_num": str(ctx.job_num),
        tr.TAG_COMMIT: commit,
        "procmem.git_dirty": str(dirty).lower(),
        "procmem.versions": package_versions(),
        **unset_tags(cfg),
    }


def unset_tags(cfg: DictConfig) -> dict[str, str]:
    """``procmem.<field>``: what an unset scenario field means, in words, where the
    scenario says (``unset_phrase``: an unset ``ledger_size`` is ``p0 known``), so a run
    whose params read ``gate.prior=plugin, scenario.ledger_size=None`` says what it is."""
    node = OmegaConf.select(cfg, "scenario")
    if not isinstance(node, DictConfig):
        return {}
    out = {}
    for key in node:
        words = unset_phrase(str(key)) if node.get(key) is None else None
        if words is not None:
            out[f"procmem.{key}"] = words
    return out


def job_workers(setting: Any, concurrent_jobs: int = 1) -> int:
    """Processes a job spreads its chunks over: ``workers`` (an integer, or ``auto``: the
    cores the job was given, i.e. this process's cores over the jobs that run at once).
    The numbers do not depend on it (``simulators.parallel``)."""
    if str(setting) == "auto":
        return max(1, available_cores() // max(1, concurrent_jobs))
    try:
        value = int(str(setting))
    except ValueError:
        value = 0
    if value < 1:
        raise ParameterError("workers", setting, "auto or an integer >= 1")
    return value


def execute(
    cfg: DictConfig,
    scenario: Any,
    seed: int,
    ctx: JobContext,
    tracker: tr.Tracker | None = None,
    run_id: str | None = None,
) -> ScenarioResult:
    """Run the scenario (with a progress bar over chunks, for a single run: a sweep shows
    its own progress) or the task's ``run_task`` (given the job's ``tracker`` and
    ``run_id`` too when the task module sets ``WANTS_RUN``: the live loop logs traces)."""
    if scenario is not None:
        workers = job_workers(cfg.get("workers", "auto"), ctx.concurrent_jobs)
        mode = "off" if ctx.multirun else str(cfg.progress)
        with chunk_progress(mode, label(cfg)), chunk_workers(workers):
            return scenario.run(seed)
    module = task_module(str(cfg.task))
    if getattr(module, "WANTS_RUN", False):
        return module.run_task(cfg, ctx.out_dir, tracker=tracker, run_id=run_id)
    return module.run_task(cfg, ctx.out_dir)


STEPPED = {"operating_points": ("true_drop", 1000, ("revert_rate", "revert_rate_exact"))}
"""Result tables logged as stepped metrics too: table -> (x column, steps per unit of x,
y columns). The OC curve is ``oc.revert_rate`` at step ``1000 * true_drop``, so the
MLflow UI draws it against the drop (in thousandths)."""


def stepped_metrics(result: ScenarioResult) -> list[tuple[str, float, int]]:
    """``(name, value, step)`` for every curve ``STEPPED`` names that the result has."""
    out = []
    for table, (x, scale, columns) in STEPPED.items():
        t = result.tables.get(table)
        if t is None or x not in t:
            continue
        for column in (c for c in columns if c in t):
            for xv, yv in zip(t[x], t[column], strict=True):
                out.append((f"oc.{column}", float(yv), round(float(xv) * scale)))
    return out


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
    configured = OmegaConf.select(cfg, "tracking.uri")
    tracker = tr.Tracker(str(cfg.tracking.experiment), configured)
    outcome = JobOutcome("finished", digest)
    if not ctx.multirun:  # a sweep's main process checked the store and reaped orphans
        if check_uri(tracker.uri, uri_source(configured)):
            announce_new(tracker.uri)
        tracker.reap_orphans()
    if cfg.resume and _already_finished(tracker, outcome):
        outcome.tracking_seconds = tracker.seconds
        outcome.total_seconds = time.perf_counter() - start
        return outcome
    tags = run_tags(cfg, ctx, digest, seed)
    if ctx.multirun:
        tags[tr.TAG_PARENT] = parent_run(cfg)
    params = flatten(identity_container(cfg) | {"resume": cfg.resume})
    name = job_name(cfg, ctx, params)
    run_id = tracker.start_run(name, tags)
    outcome.run_id = run_id
    try:
        _run_and_log(cfg, scenario, seed, ctx, tracker, run_id, params, outcome)
    except Exception:
        outcome.status = "failed"
        _log_failure(ctx, tracker, run_id, params, name)
        if not ctx.multirun:
            raise
    except BaseException as exc:
        reason = exc.reason if isinstance(exc, Stopped) else f"interrupted ({type(exc).__name__})"
        ended = tracker.end_if_running(run_id, "KILLED", reason)  # FINISHED stays FINISHED
        outcome.status = "finished" if ended == "FINISHED" else "killed"
        raise
    finally:
        outcome.tracking_seconds = tracker.seconds
        outcome.total_seconds = time.perf_counter() - start
    if not ctx.multirun:
        print_single(run_id, name, outcome, tracker)
    return outcome


def _already_finished(tracker: tr.Tracker, outcome: JobOutcome) -> bool:
    """Whether a finished run of this config exists (``resume``); marks ``outcome`` skipped."""
    done = tracker.finished_run(outcome.config_hash)
    if done is None:
        return False
    print(f"resume: config {outcome.config_hash} already finished in run {done}", file=sys.stderr)
    outcome.status, outcome.run_id = "skipped", done
    return True


def _run_and_log(
    cfg: DictConfig,
    scenario: Any,
    seed: int,
    ctx: JobContext,
    tracker: tr.Tracker,
    run_id: str,
    params: dict,
    outcome: JobOutcome,
) -> None:
    """Run the job, write its artifacts (and figures) and log them to ``run_id``."""
    folder = ctx.out_dir / "artifacts"
    result = execute(cfg, scenario, seed, ctx, tracker, run_id)
    t0 = time.perf_counter()
    write_artifacts(cfg, result, folder)
    t1 = time.perf_counter()
    if cfg.tracking.figures:
        scenario_figures(result, folder / "figures")
    outcome.figure_seconds = time.perf_counter() - t1
    outcome.artifact_seconds = t1 - t0
    outcome.metrics = dict(result.metrics)
    tracker.log(run_id, params=params, metrics=result.metrics, steps=stepped_metrics(result))
    tracker.log_artifacts(run_id, folder)
    tracker.finish(run_id, "FINISHED")


def _log_failure(
    ctx: JobContext, tracker: tr.Tracker, run_id: str, params: dict, name: str
) -> None:
    """While handling a job's exception: its traceback (``failure/traceback.txt``), params
    and whatever artifacts it wrote logged to ``run_id``, which is finished FAILED."""
    failure = ctx.out_dir / "failure"  # apart from artifacts/, which may be the problem
    failure.mkdir(parents=True, exist_ok=True)
    (failure / "traceback.txt").write_text(traceback.format_exc(), encoding="utf-8")
    tracker.log(run_id, params=params)
    tracker.log_artifacts(run_id, failure)
    tracker.log_artifacts(run_id, ctx.out_dir / "artifacts")  # what the job wrote before it failed
    error = traceback.format_exception_only(*sys.exc_info()[:2])[-1].strip()
    tracker.end_if_running(run_id, "FAILED", f"the job raised {error[:500]} (traceback.txt)")
    log.error("job %s (%s) FAILED; traceback logged to run %s", ctx.job_num, name, run_id)
