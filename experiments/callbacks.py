"""The sweep's parent run, opened and closed by a Hydra callback.

``on_multirun_start`` (in the launching process, before any job):

1. expands the sweep exactly as Hydra's basic sweeper will (``hydra.sweeper.params`` plus
   the command-line overrides) and composes every job's config;
2. validates every job (``experiments.build.validate``): one bad value stops the command
   with the key, the value and what is allowed, and no MLflow run is created;
3. creates the database and the experiment, so parallel jobs never race to create them;
4. with ``resume=true``, counts the jobs whose config hash already has a FINISHED run;
5. opens the parent run (tag ``procmem.role=parent``, ``procmem.sweep_dir``), which the
   jobs find by that tag, and marks older RUNNING parents of the same sweep dir KILLED.

``on_multirun_end`` reads the children back (a child still RUNNING, whose process died,
is marked FAILED), records finished / failed / skipped / missing counts,
``tables/jobs.parquet`` and ``sweep.yaml`` (the swept params and overrides) on the
parent, marks it FAILED when any job failed or never reported, prints the summary table
and the report to come, and sets ``SWEEP_STATUS`` (the exit status ``experiments.run``
returns). If the process dies before that (Ctrl-C), an ``atexit`` hook marks the parent
KILLED.
"""

from __future__ import annotations

import atexit
import copy
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from experiments import tracking as tr
from experiments.build import validate
from experiments.identity import config_hash, git_commit
from experiments.job import label
from experiments.summary import print_summary
from procmem_core.errors import ParameterError

BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"

SWEEP_STATUS = {"exit": 0}
"""Exit status of the last sweep in this process (1 when a job failed or went missing)."""


@dataclass
class PlannedJob:
    """One job of the sweep as planned before launch."""

    num: int
    overrides: list[str]
    config_hash: str
    label: str  # the scenario or task name
    skipped_by: str | None = None  # the finished run that makes resume skip it


@dataclass
class SweepState:
    tracker: tr.Tracker
    parent_id: str
    jobs: list[PlannedJob] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)
    closed: bool = False


def sweep_params(config: DictConfig) -> dict[str, str]:
    """The preset's ``hydra.sweeper.params`` as ``{key: sweep expression}``."""
    params = OmegaConf.select(config, "hydra.sweeper.params")
    return {} if params is None else dict(OmegaConf.to_container(params, resolve=False))


def sweep_overrides(config: DictConfig) -> list[list[str]]:
    """Every job's overrides, in the order the basic sweeper launches them."""
    target = OmegaConf.select(config, "hydra.sweeper._target_")
    if target != BASIC_SWEEPER:
        raise ParameterError(
            "hydra.sweeper._target_", target, f"the basic sweeper ({BASIC_SWEEPER})"
        )
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    arguments = [f"{k}={v}" for k, v in sweep_params(config).items()]
    arguments += list(OmegaConf.to_container(config.hydra.overrides.task, resolve=False))
    loader = GlobalHydra.instance().config_loader()
    parsed = OverridesParser.create(config_loader=loader).parse_overrides(arguments)
    return BasicSweeper.split_arguments(parsed, None)[0]


def plan_jobs(config: DictConfig) -> list[tuple[list[str], DictConfig]]:
    """Compose and validate every job's config; raise on the first invalid one.

    Hydra composes a job from the defaults list (group choices such as ``gate=margin``)
    and then applies the value overrides (``gate.alpha=0.1``) to the result. Composing is
    slow (about 0.1-0.3 s), so each distinct set of group choices is composed once and
    the value overrides are applied to a copy of its job part (without ``hydra``) with
    Hydra's own function: the same job config Hydra will build, in milliseconds.
    """
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    loader = GlobalHydra.instance().config_loader()
    parser = OverridesParser.create(config_loader=loader)
    composed: dict[tuple[str, ...], DictConfig] = {}
    is_group: dict[str, bool] = {}
    planned = []
    for overrides in sweep_overrides(config):
        parsed = parser.parse_overrides(list(overrides))
        for o in parsed:
            if o.key_or_group not in is_group:  # the look-up is slow: once per key
                is_group[o.key_or_group] = bool(loader.get_group_options(o.key_or_group))
        groups = [o for o in parsed if is_group[o.key_or_group] or o.key_or_group[:5] == "hydra"]
        values = [o for o in parsed if o not in groups]
        choice = tuple(o.input_line for o in groups)
        if choice not in composed:
            full = loader.load_sweep_config(master_config=config, sweep_overrides=list(choice))
            composed[choice] = OmegaConf.masked_copy(full, [k for k in full if k != "hydra"])
            OmegaConf.set_struct(composed[choice], True)
        job_cfg = copy.deepcopy(composed[choice])
        try:
            ConfigLoaderImpl._apply_overrides_to_config(values, job_cfg)
            validate(job_cfg)
        except ParameterError as exc:
            where = f"{exc.allowed} (sweep job: {' '.join(overrides) or 'no overrides'})"
            raise ParameterError(exc.field, exc.value, where) from None
        planned.append((list(overrides), job_cfg))
    return planned


class SweepTracking(Callback):
    """Opens the parent run at multirun start and closes it at multirun end."""

    def __init__(self) -> None:
        self.state: SweepState | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        # Hydra turns a callback's exception into a warning and launches anyway: a sweep
        # that cannot be validated or tracked must stop here, so the callback exits.
        try:
            self._open(config)
        except Exception as exc:
            print(f"Error: the sweep cannot start: {exc}", file=sys.stderr)
            raise SystemExit(1) from None

    def _open(self, config: DictConfig) -> None:
        HydraConfig.instance().set_config(config)  # for ${hydra:...} before any job runs
        planned = plan_jobs(config)
        experiment = str(config.tracking.experiment)
        tracker = tr.Tracker(experiment)
        tracker.experiment_id  # noqa: B018 (creates the database and the experiment now)
        finished = tracker.finished_hashes() if config.resume else {}
        sweep_dir = str(config.hydra.sweep.dir)
        for stale in tracker.running_parents(sweep_dir):
            tracker.finish(stale.info.run_id, "KILLED")
        commit, dirty = git_commit()
        overrides = list(config.hydra.overrides.task)
        parent_id = tracker.start_run(
            f"{experiment} sweep",
            {
                tr.TAG_ROLE: "parent",
                tr.TAG_SWEEP_DIR: sweep_dir,
                tr.TAG_PRESET: experiment,
                tr.TAG_OVERRIDES: " ".join(overrides),
                tr.TAG_COMMIT: commit,
                "procmem.git_dirty": str(dirty).lower(),
                "procmem.launcher": str(OmegaConf.select(config, "hydra.launcher._target_")),
            },
        )
        state = SweepState(tracker, parent_id)
        for num, (job_overrides, job_cfg) in enumerate(planned):
            digest = config_hash(job_cfg)
            state.jobs.append(
                PlannedJob(num, job_overrides, digest, label(job_cfg), finished.get(digest))
            )
        skipped = sum(job.skipped_by is not None for job in state.jobs)
        tracker.log(
            parent_id,
            params={f"sweep.{k}": str(v) for k, v in sweep_params(config).items()},
            metrics={"jobs_total": len(state.jobs), "jobs_skipped": skipped},
            tags={"procmem.resume": str(bool(config.resume)).lower()},
        )
        self.state = state
        atexit.register(self._abandon)
        print(
            f"sweep: {len(state.jobs)} jobs ({skipped} already finished, skipped) -> "
            f"experiment {experiment!r}, parent run {parent_id}",
            file=sys.stderr,
        )

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self.state is None:
            return
        SWEEP_STATUS["exit"] = 1  # until the parent is closed cleanly
        self._close(config, self.state)

    def _close(self, config: DictConfig, state: SweepState) -> None:
        tracker = state.tracker
        children: dict[str, list] = {}
        metrics: dict[str, dict[str, float]] = {}
        for run in tracker.children(state.parent_id):
            if run.info.status == "RUNNING":  # its process died without ending it
                tracker.finish(run.info.run_id, "FAILED")
            children.setdefault(run.data.tags.get(tr.TAG_HASH), []).append(run)
            metrics[run.info.run_id] = dict(run.data.metrics)
        rows = []
        for job in state.jobs:
            runs = children.get(job.config_hash, [])
            status, run_id = self._status(job, runs)
            rows.append(
                {
                    "job": job.num,
                    "overrides": " ".join(job.overrides),
                    "scenario": job.label,
                    "config_hash": job.config_hash,
                    "status": status,
                    "run_id": run_id,
                }
            )
        jobs = pd.DataFrame(rows)
        counts = jobs["status"].value_counts()
        bad = jobs[jobs["status"].isin(["failed", "missing"])]
        folder = self._jobs_folder(config)
        jobs.to_parquet(folder / "tables" / "jobs.parquet", index=False)
        sweep = {"params": sweep_params(config), "overrides": list(config.hydra.overrides.task)}
        (folder / "sweep.yaml").write_text(OmegaConf.to_yaml(sweep), encoding="utf-8")
        tracker.log(
            state.parent_id,
            metrics={
                f"jobs_{s}": float(counts.get(s, 0))
                for s in ("finished", "failed", "missing", "skipped")
            }
            | {"sweep_seconds": time.perf_counter() - state.started},
        )
        tracker.log_artifacts(state.parent_id, folder)
        tracker.finish(state.parent_id, "FAILED" if len(bad) else "FINISHED")
        state.closed = True
        SWEEP_STATUS["exit"] = 1 if len(bad) else 0
        print_summary(jobs, metrics, str(config.tracking.experiment), tracker.uri)

    @staticmethod
    def _status(job: PlannedJob, runs: list) -> tuple[str, str | None]:
        if any(r.info.status == "FINISHED" for r in runs):
            run = next(r for r in runs if r.info.status == "FINISHED")
            return "finished", run.info.run_id
        if runs:
            return "failed", runs[0].info.run_id
        if job.skipped_by is not None:
            return "skipped", job.skipped_by
        return "missing", None

    @staticmethod
    def _jobs_folder(config: DictConfig) -> Path:
        folder = Path(str(config.hydra.sweep.dir)) / "parent_artifacts"
        (folder / "tables").mkdir(parents=True, exist_ok=True)
        return folder

    def _abandon(self) -> None:
        """At exit: a parent left open by an interrupted sweep is marked KILLED."""
        state = self.state
        if state is not None and not state.closed:
            state.closed = True
            state.tracker.finish(state.parent_id, "KILLED")
