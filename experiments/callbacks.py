"""The sweep's parent run, opened and closed by a Hydra callback.

``on_multirun_start`` (in the launching process, before any job):

1. plans the sweep exactly as Hydra's basic sweeper will and checks it
   (``experiments.plan``): every job's values, a sweep that expands to no job, the
   launcher's ``n_jobs``, a sweep folder that cannot be written, and the tracking URI (a
   malformed URI, a server or database that does not answer within seconds). One bad
   thing stops the command with one line, and no MLflow run is created. A search (the
   Optuna sweeper: its trials are not known in advance) is checked instead
   (``experiments.search``), runs without the progress thread, and its jobs are read
   back from the parent's children at the end;
2. creates the database and the experiment, so parallel jobs never race to create them,
   and fails the orphans of earlier runs (``Tracker.reap_orphans``: RUNNING runs whose
   process was killed);
3. with ``resume=true``, finds the jobs whose config hash already has a FINISHED run;
4. opens the parent run (tag ``procmem.role=parent``; its description is the preset's
   question) and logs the planned ``tables/jobs.parquet``;
5. appends ``++tracking.uri``, ``++tracking.parent`` and ``++tracking.vary`` to every
   job's overrides: a job never guesses the store or its parent from the environment of
   the machine it lands on, and names its run from the keys that vary;
6. starts the progress thread (``experiments.progress.SweepProgress``), which also
   keeps the parent's heartbeat.

``on_multirun_end`` reads the children back (a child still RUNNING, whose process died,
is marked FAILED with the reason the launcher recorded), records the counts,
``tables/jobs.parquet`` (also as an MLflow table), ``sweep.yaml`` and the design answers
the report reads (``experiments.answers``: ``answers/<name>.json`` and metrics
``answers.<name>.*``, computed here so a report never asks a design question), marks the parent
FAILED when a job failed or never reported, prints the summary and sets
``SWEEP_STATUS``. A sweep stopped before that (SIGTERM, SIGINT, an error) is closed by
``abandon``: its RUNNING children and the parent are marked KILLED with the reason.
"""

from __future__ import annotations

import atexit
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, read_write

from experiments import tracking as tr
from experiments.identity import git_commit, package_versions, varying_keys
from experiments.plan import (
    PlannedJob,
    check_launcher,
    check_writable,
    install_composed_once,
    mark_skipped,
    planned_jobs,
    preset_question,
    sweep_params,
)
from experiments.progress import SweepProgress
from experiments.search import check_search, is_search, jobs_from_children, search_vary
from experiments.spec import ADDED_PREFIX, own_overrides
from experiments.stores import announce_new, check_uri, uri_source
from experiments.summary import print_summary

SWEEP_STATUS = {"exit": 0}
"""Exit status of the last sweep in this process (1 when a job failed or went missing)."""

ACTIVE: list[SweepTracking] = []
"""The sweeps this process has open (``experiments.run.cli`` closes them on a stop)."""


@dataclass
class SweepState:
    tracker: tr.Tracker
    parent_id: str
    jobs: list[PlannedJob]
    overrides: list[str]  # the command's own overrides
    progress: SweepProgress | None = None
    search: bool = False  # an Optuna search: the jobs are read from the children at the end
    started: float = field(default_factory=time.perf_counter)
    closed: bool = False


def quoted(value: str) -> str:
    """``value`` as a quoted Hydra override value."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def job_overrides(uri: str, parent_id: str, vary: list[str]) -> list[str]:
    """What the launching process tells every job explicitly."""
    keys = ",".join(quoted(k) for k in vary)
    return [
        f"{ADDED_PREFIX}uri={quoted(uri)}",
        f"{ADDED_PREFIX}parent={quoted(parent_id)}",
        f"{ADDED_PREFIX}vary=[{keys}]",
    ]


class SweepTracking(Callback):
    """Opens the parent run at multirun start and closes it at multirun end."""

    def __init__(self) -> None:
        self.state: SweepState | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"state": None}  # a job process never needs the parent's state

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        # Hydra turns a callback's exception into a warning and launches anyway: a sweep
        # that cannot be validated or tracked must stop here, so the callback exits.
        try:
            self._open(config)
        except Exception as exc:
            text = str(exc).strip() or type(exc).__name__
            print(f"Error: the sweep cannot start: {text.splitlines()[0]}", file=sys.stderr)
            raise SystemExit(1) from None

    def _open(self, config: DictConfig) -> None:
        HydraConfig.instance().set_config(config)  # for ${hydra:...} before any job runs
        check_launcher(config)
        configured = OmegaConf.select(config, "tracking.uri")
        tracker = tr.Tracker(str(config.tracking.experiment), configured)
        search = is_search(config)  # a search's trials are not known before it runs
        if search:
            check_search(config)
        jobs = [] if search else planned_jobs(config)  # checked before the store
        install_composed_once()  # Hydra's sweeper and launcher compose each job once
        new_store = check_uri(tracker.uri, uri_source(configured))
        check_writable(Path(str(config.hydra.sweep.dir)))
        if new_store:
            announce_new(tracker.uri)
        tracker.experiment_id  # noqa: B018 (creates the database and the experiment now)
        reaped = tracker.reap_orphans()
        mark_skipped(jobs, tracker.finished_hashes() if config.resume else {})
        overrides = own_overrides(list(config.hydra.overrides.task))
        parent_id = self._start_parent(config, tracker, jobs, overrides)
        try:
            self._launch_parent(config, tracker, jobs, parent_id, reaped)
        except BaseException as exc:  # the parent exists: it ends FAILED, with the reason
            why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            try:
                tracker.end_if_running(parent_id, "FAILED", f"the sweep could not start: {why}")
            except Exception as again:  # the store may be what failed
                print(f"could not mark parent run {parent_id} FAILED ({again})", file=sys.stderr)
            raise

    def _launch_parent(
        self,
        config: DictConfig,
        tracker: tr.Tracker,
        jobs: list[PlannedJob],
        parent_id: str,
        reaped: list[str],
    ) -> None:
        """Log the sweep's params and planned jobs on the parent, tell the jobs their store
        and parent, start the progress."""
        skipped = sum(job.skipped_by is not None for job in jobs)
        tracker.log(
            parent_id,
            params={f"sweep.{k}": str(v) for k, v in sweep_params(config).items()},
            metrics={"jobs_total": len(jobs), "jobs_skipped": skipped},
        )
        overrides = own_overrides(list(config.hydra.overrides.task))
        search = is_search(config)
        vary = search_vary(config) if search else varying_keys([(j.label, j.params) for j in jobs])
        with read_write(config.hydra):
            config.hydra.overrides.task.extend(job_overrides(tracker.uri, parent_id, vary))
        progress = (
            None
            if search
            else SweepProgress(
                tracker.uri, tracker.experiment, parent_id, jobs, str(config.progress)
            )
        )
        self.state = SweepState(tracker, parent_id, jobs, overrides, progress, search=search)
        log_jobs(tracker, parent_id, jobs_frame(jobs), Path(str(config.hydra.sweep.dir)))
        ACTIVE.append(self)
        atexit.register(self.abandon)
        what = (
            f"search: {OmegaConf.select(config, 'hydra.sweeper.n_trials')} trials"
            if search
            else f"sweep: {len(jobs)} jobs ({skipped} already finished, skipped)"
        )
        print(
            f"{what} -> experiment {tracker.experiment!r}, parent run {parent_id}"
            + (f"; marked {len(reaped)} orphaned run(s) FAILED" if reaped else ""),
            file=sys.stderr,
        )
        if progress is not None:
            progress.start()

    @staticmethod
    def _start_parent(
        config: DictConfig, tracker: tr.Tracker, jobs: list[PlannedJob], overrides: list[str]
    ) -> str:
        commit, dirty = git_commit()
        preset = str(OmegaConf.select(config, "hydra.runtime.choices.experiment") or "")
        swept = sweep_params(config)
        question = preset_question(preset)
        keys = ", ".join(swept) or "no swept keys"
        # a search (Optuna) plans its trials as it goes: no job list to count at the start
        sweeper = str(OmegaConf.select(config, "hydra.sweeper._target_") or "")
        count = "a search" if "optuna" in sweeper.lower() else f"{len(jobs)} jobs"
        parent_id = tracker.start_run(
            f"{tracker.experiment}: {count} over {keys}",
            {
                tr.TAG_ROLE: "parent",
                tr.TAG_SWEEP_DIR: str(config.hydra.sweep.dir),
                tr.TAG_PRESET: tracker.experiment,
                tr.TAG_OVERRIDES: " ".join(overrides),
                tr.TAG_COMMIT: commit,
                tr.TAG_NOTE: question or f"sweep of preset {preset}",
                "procmem.git_dirty": str(dirty).lower(),
                "procmem.launcher": str(OmegaConf.select(config, "hydra.launcher._target_")),
                "procmem.sweeper": str(OmegaConf.select(config, "hydra.sweeper._target_")),
                "procmem.command": "python -m experiments.run -m " + " ".join(overrides),
                "procmem.versions": package_versions(),
                "procmem.resume": str(bool(config.resume)).lower(),
                tr.TAG_HEARTBEAT: f"{time.time():.0f}",
            },
        )
        return parent_id

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self.state is None:
            return
        SWEEP_STATUS["exit"] = 1  # until the parent is closed cleanly
        self._close(config, self.state)

    def _close(self, config: DictConfig, state: SweepState) -> None:
        from experiments.launcher import LOST

        if state.progress is not None:
            state.progress.stop()
        tracker = state.tracker
        children: dict[str, list] = {}
        metrics: dict[str, dict[str, float]] = {}
        runs = tracker.children(state.parent_id)
        if state.search:
            state.jobs = jobs_from_children(runs)
        for run in runs:
            num = int(run.data.tags.get("procmem.job_num", -1))
            status, why = run.info.status, run.data.tags.get(tr.TAG_END_REASON, "")
            if status == "RUNNING":  # its process died without ending it
                status, why = "FAILED", LOST.get(num, "its process ended without closing the run")
                tracker.finish(run.info.run_id, status, why)
            children.setdefault(run.data.tags.get(tr.TAG_HASH), []).append(
                (run.info.run_id, status, why)
            )
            metrics[run.info.run_id] = dict(run.data.metrics)
        for job in state.jobs:
            job.status, job.run_id, job.reason = job_status(
                job, children.get(job.config_hash, []), LOST
            )
        jobs = jobs_frame(state.jobs)
        counts = jobs["status"].value_counts()
        bad = jobs[jobs["status"].isin(["failed", "missing"])]
        folder = log_jobs(tracker, state.parent_id, jobs, Path(str(config.hydra.sweep.dir)))
        sweep = {"params": sweep_params(config), "overrides": state.overrides}
        (folder / "sweep.yaml").write_text(OmegaConf.to_yaml(sweep), encoding="utf-8")
        answers = design_answers(tracker, runs, state.jobs, folder)
        elapsed = time.perf_counter() - state.started
        tracker.log(
            state.parent_id,
            metrics={
                f"jobs_{s}": float(counts.get(s, 0))
                for s in ("finished", "failed", "missing", "skipped")
            }
            | {"sweep_seconds": elapsed}
            | answers,
        )
        tracker.log_artifacts(state.parent_id, folder)
        why = f"{len(bad)} of {len(jobs)} jobs failed or never reported" if len(bad) else None
        tracker.finish(state.parent_id, "FAILED" if len(bad) else "FINISHED", why)
        state.closed = True
        SWEEP_STATUS["exit"] = 1 if len(bad) else 0
        print_summary(jobs, metrics, tracker, state.parent_id, elapsed)

    def abandon(self, reason: str = "the sweep's main process exited before the end") -> str:
        """Close a sweep that did not end: RUNNING children and the parent KILLED.
        Returns what had finished and how to resume, in words (one line)."""
        state = self.state
        if state is None or state.closed:
            return ""
        state.closed = True
        if state.progress is not None:
            state.progress.stop(final=False)
        tracker = state.tracker
        finished = killed = 0
        try:
            for run in tracker.children(state.parent_id):
                status = run.info.status
                if status == "RUNNING":
                    status = tracker.end_if_running(run.info.run_id, "KILLED", reason)
                finished += status == "FINISHED"
                killed += status == "KILLED"
            tracker.end_if_running(state.parent_id, "KILLED", reason)
        except Exception as exc:  # the store may be what failed
            print(f"could not mark the sweep KILLED ({exc})", file=sys.stderr)
        skipped = sum(job.skipped_by is not None for job in state.jobs)
        command = shlex.join(
            ["python", "-m", "experiments.run", "-m", *state.overrides, "resume=true"]
        )
        return (
            f"{finished + skipped} of {len(state.jobs)} jobs finished"
            + (f" ({skipped} by an earlier sweep)" if skipped else "")
            + f", {killed} in flight marked KILLED, parent run {state.parent_id} KILLED; "
            f"resume with: {command}"
        )


def design_answers(
    tracker: tr.Tracker, children: list, jobs: list[PlannedJob], folder: Path
) -> dict[str, float]:
    """The design answers of the sweep's runs (its children and the earlier runs a resumed
    sweep skipped), written under ``folder`` (``experiments.answers``); their metrics."""
    from experiments.answers import finalize_answers, runs_frame

    have = {run.info.run_id for run in children}
    earlier = [j.run_id for j in jobs if j.status == "skipped" and j.run_id not in have]
    runs = children + [tracker.call(tracker.client.get_run, r) for r in dict.fromkeys(earlier)]
    return finalize_answers(runs_frame(runs), folder)


def job_status(
    job: PlannedJob, runs: list[tuple[str, str, str]], lost: dict[int, str]
) -> tuple[str, str | None, str]:
    """``(status, run id, reason)`` of a planned job from its ``(run id, status, reason)``
    runs in this sweep (and the launcher's record of lost processes)."""
    done = next((r for r in runs if r[1] == "FINISHED"), None)
    if done is not None:
        return "finished", done[0], ""
    if runs:
        run_id, _, reason = runs[0]
        return "failed", run_id, reason or lost.get(job.num) or "the job raised (traceback.txt)"
    if job.skipped_by is not None:
        return "skipped", job.skipped_by, ""
    if job.num in lost:
        return "failed", None, lost[job.num]
    return "missing", None, "no run: the job never reported"


def jobs_frame(jobs: list[PlannedJob]) -> pd.DataFrame:
    """One row per job: number, run name, overrides, scenario, hash, status, run, reason."""
    return pd.DataFrame(
        [
            {
                "job": job.num,
                "name": job.name,
                "overrides": " ".join(job.overrides),
                "scenario": job.label,
                "config_hash": job.config_hash,
                "status": job.status,
                "run_id": job.run_id,
                "reason": job.reason,
            }
            for job in jobs
        ],
        columns=JOB_COLUMNS,  # a search starts with no job
    )


JOB_COLUMNS = ["job", "name", "overrides", "scenario", "config_hash", "status", "run_id", "reason"]


def log_jobs(tracker: tr.Tracker, parent_id: str, jobs: pd.DataFrame, sweep_dir: Path) -> Path:
    """``tables/jobs.parquet`` (and the MLflow table ``tables/jobs.json``) on the parent."""
    folder = sweep_dir / "parent_artifacts"
    (folder / "tables").mkdir(parents=True, exist_ok=True)
    jobs.to_parquet(folder / "tables" / "jobs.parquet", index=False)
    tracker.log_artifacts(parent_id, folder)
    tracker.log_table(parent_id, jobs.astype({"run_id": "string"}), "jobs")
    return folder
