"""One job: validate, skip if already done, run the scenario or task, log it to MLflow.

A job's life (each step before the next):

1. read the config once into a validated, frozen ``JobSpec`` (``experiments.spec``):
   every value checked, the scenario built, the config hash, the job's seed, the run's
   params, name and tags, its tracking target - no run exists yet; nothing after this
   step reads the config;
2. (``run_spec``, from the spec alone) a single run checks the tracking URI (a sweep's
   main process did) and fails the orphans of killed runs; with ``resume=true``, stop if
   a FINISHED run with the same hash is in the experiment;
3. open the MLflow run (a child of the sweep's parent run ``tracking.parent`` in ``-m``
   mode) with its tags and a name that says what it is (``gate: SPRT, ledger size 20``);
4. run: a scenario (``spec.scenario.run(spec.job_seed)``) or a task
   (``experiments.tasks.<task>.run_task``, given ``spec.task_config``);
5. write ``config.yaml``, ``tables/<name>.parquet`` and ``figures/*.png`` into
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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from experiments import tracking as tr
from experiments.progress import chunk_progress
from experiments.spec import JobContext, JobSpec, build_spec
from experiments.stopping import Stopped
from experiments.stores import announce_new, check_uri, uri_source
from experiments.summary import print_single
from simulators.parallel import chunk_workers
from simulators.result import ScenarioResult

log = logging.getLogger(__name__)


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


def execute(
    spec: JobSpec, ctx: JobContext, tracker: tr.Tracker | None = None, run_id: str | None = None
) -> ScenarioResult:
    """Run the scenario (with a progress bar over chunks, for a single run: a sweep shows
    its own progress) or the task's ``run_task`` (given the job's ``tracker`` and
    ``run_id`` too when the task module sets ``WANTS_RUN``: the live loop logs traces)."""
    if spec.scenario is not None:
        with chunk_progress(spec.progress, spec.label), chunk_workers(spec.workers):
            return spec.scenario.run(spec.job_seed)
    module = spec.task_module
    if getattr(module, "WANTS_RUN", False):
        return module.run_task(spec.task_config, ctx.out_dir, tracker=tracker, run_id=run_id)
    return module.run_task(spec.task_config, ctx.out_dir)


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


def write_artifacts(config: Mapping[str, Any], result: ScenarioResult, folder: Path) -> None:
    """``config.yaml`` (the job's resolved ``config``) and ``tables/<name>.parquet`` into
    ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(
        OmegaConf.to_yaml(dict(config), sort_keys=False), encoding="utf-8"
    )
    if result.tables:
        (folder / "tables").mkdir(exist_ok=True)
    for name, table in result.tables.items():
        table.to_parquet(folder / "tables" / f"{name}.parquet", index=False)


def run_job(cfg: DictConfig, ctx: JobContext) -> JobOutcome:
    """Read ``cfg`` once into a ``JobSpec`` (validated: a bad value raises before any
    work), then ``run_spec``; see the module docstring."""
    start = time.perf_counter()
    spec = build_spec(cfg, ctx)
    return run_spec(spec, ctx, start)


def run_spec(spec: JobSpec, ctx: JobContext, start: float | None = None) -> JobOutcome:
    """Resume-check, run and log one job from its spec alone (``start``: when the job
    began, for ``total_seconds``)."""
    start = time.perf_counter() if start is None else start
    target = spec.tracking
    tracker = tr.Tracker(target.experiment, target.uri)
    outcome = JobOutcome("finished", spec.config_hash)
    if not ctx.multirun:  # a sweep's main process checked the store and reaped orphans
        if check_uri(tracker.uri, uri_source(target.uri)):
            announce_new(tracker.uri)
        tracker.reap_orphans()
    if spec.resume and _already_finished(tracker, outcome):
        outcome.tracking_seconds = tracker.seconds
        outcome.total_seconds = time.perf_counter() - start
        return outcome
    run_id = tracker.start_run(spec.name, dict(spec.tags))
    outcome.run_id = run_id
    try:
        _run_and_log(spec, ctx, tracker, run_id, outcome)
    except Exception:
        outcome.status = "failed"
        _log_failure(ctx, tracker, run_id, dict(spec.params), spec.name)
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
        print_single(run_id, spec.name, outcome, tracker)
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
    spec: JobSpec, ctx: JobContext, tracker: tr.Tracker, run_id: str, outcome: JobOutcome
) -> None:
    """Run the job, write its artifacts (and figures) and log them to ``run_id``."""
    folder = ctx.out_dir / "artifacts"
    result = execute(spec, ctx, tracker, run_id)
    t0 = time.perf_counter()
    write_artifacts(spec.config, result, folder)
    t1 = time.perf_counter()
    if spec.tracking.figures:
        from experiments.figures import scenario_figures  # matplotlib: only when drawing

        scenario_figures(result, folder / "figures")
    outcome.figure_seconds = time.perf_counter() - t1
    outcome.artifact_seconds = t1 - t0
    outcome.metrics = dict(result.metrics)
    tracker.log(
        run_id, params=dict(spec.params), metrics=result.metrics, steps=stepped_metrics(result)
    )
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
