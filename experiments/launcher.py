"""``hydra/launcher=local``: every job in a fresh process, at most ``n_jobs`` at a time.

Why not joblib's loky pool: when one loky worker dies, the pool is broken and every job
in flight or not yet started is lost with it (``TerminatedWorkerError``), and loky's
workers outlive a killed main process for minutes. Here each job has its own process,
forked from a server that has already imported the heavy modules (``PRELOAD``), so:

- a job whose process dies (killed, out of memory) fails alone: the launcher records
  why in ``LOST`` (the sweep callback marks its run FAILED with that reason and the
  command exits non-zero), and the other jobs go on;
- a job process stops itself when the main process dies (``stopping.watch_parent``);
- SIGTERM or SIGINT to the main process stops every job in flight (the main process
  sends each the reason; each marks its run KILLED with it), then the main process ends
  the parent run and exits with 143 or 130 (``experiments.run.cli``). Job processes
  ignore SIGINT (``experiments.forkserver_signals``), so a Ctrl-C, which reaches every
  process of the terminal, stops each job once, through the main process, and never
  interrupts the main process while it hands a job its payload (``stopping.deferred``).

A job runs exactly as under Hydra's other launchers (``hydra.core.utils.run_job`` on
the sweep config composed for its overrides, here in the main process, which has it
from the sweeper's check: ``plan.ComposedOnce``), so its numbers do not depend on the
launcher.
"""

from __future__ import annotations

import contextlib
import logging
import math
import multiprocessing as mp
import signal
import sys
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, configure_log, run_job, setup_globals
from omegaconf import DictConfig, OmegaConf, open_dict

from experiments.stopping import (
    STOP_GRACE_SECONDS,
    Stopped,
    deferred,
    install_handlers,
    watch_parent,
)
from experiments.stores import tracking_uri
from procmem_core.errors import check_int

log = logging.getLogger(__name__)

PRELOAD = (
    "experiments.forkserver_signals",
    "numpy",
    "scipy.stats",
    "pandas",
    "pyarrow.parquet",
    "mlflow",
    "sqlalchemy",
    "omegaconf",
    "hydra",
    "experiments.job",
    "experiments.schema",
    "experiments.callbacks",
)
"""Imported once by the fork server, so a job's process starts in milliseconds: what
every job imports (``experiments.schema`` and ``experiments.callbacks`` when it unpickles
its config and Hydra's callbacks). Not matplotlib: a job draws only with
``tracking.figures=true`` (default off) and imports it then (0.8 s of CPU the fork server
no longer spends on every sweep)."""

SQL_STORE = "mlflow.store.tracking.sqlalchemy_store"
"""MLflow's SQL store (its ORM models and alembic): every job of a sweep into SQLite or
another database imports it when it opens its client, about 0.8 s of CPU each; the fork
server imports it once (``preload``). A sweep into a tracking server never needs it."""

LOST: dict[int, str] = {}
"""Job number -> why its process ended without reporting (read by the sweep callback)."""


@dataclass
class Slot:
    """One job in flight: its process, the pipe it reports on, and the pipe it watches
    (its other end is held by this process: when it closes, the job stops)."""

    num: int
    overrides: list[str]
    process: Any
    result: Connection
    alive: Connection


def execute_job(num: int, sweep_config: DictConfig, shared: tuple) -> JobReturn:
    """Run the job's sweep config (composed by the launching process) as Hydra's
    launchers do."""
    hydra_context, _, task_function, singleton_state = shared
    setup_globals()
    Singleton.set_state(singleton_state)
    with open_dict(sweep_config):
        sweep_config.hydra.job.id = f"{sweep_config.hydra.job.name}_{num}"
        sweep_config.hydra.job.num = num
    HydraConfig.instance().set_config(sweep_config)
    return run_job(
        hydra_context=hydra_context,
        config=sweep_config,
        task_function=task_function,
        job_dir_key="hydra.sweep.dir",
        job_subdir_key="hydra.sweep.subdir",
    )


def job_process(payload: bytes, result: Connection, alive: Connection) -> None:
    """The body of a job's process: stop on SIGTERM or when the main process dies, run
    the job, send its ``JobReturn`` back."""
    import cloudpickle

    install_handlers()  # SIGTERM; SIGINT stays ignored (forkserver_signals): see stop_all
    done = threading.Event()
    try:
        watch_parent(alive, done)
        num, sweep_config, shared = cloudpickle.loads(payload)
        ret = execute_job(num, sweep_config, shared)
        with deferred():  # the result goes back whole; a stop now waits, then exits
            send_return(result, ret)
            done.set()
    except Stopped as stop:  # a job with a run marked it KILLED; no traceback
        sys.exit(stop.exit_code)


def send_return(result: Connection, ret: JobReturn) -> None:
    """Send the job's return; one that cannot be pickled goes back as its text."""
    try:
        result.send(ret)
    except Exception:
        ret.cfg = ret.hydra_cfg = None
        if ret.status == JobStatus.FAILED:
            ret._return_value = RuntimeError(repr(ret._return_value))
        result.send(ret)


def why_lost(exitcode: int | None) -> str:
    """The reason a job's process ended without reporting, from its exit code."""
    if exitcode is not None and exitcode < 0:
        name = signal.Signals(-exitcode).name
        return f"its process was killed by {name} (signal {-exitcode}) before it reported"
    return f"its process exited with status {exitcode} before it reported"


def lost_return(slot: Slot, reason: str) -> JobReturn:
    """The job's return when its process died: the job counts as failed."""
    LOST[slot.num] = reason
    log.error("job %s (%s) FAILED: %s", slot.num, " ".join(slot.overrides), reason)
    ret = JobReturn(overrides=slot.overrides, status=JobStatus.COMPLETED)
    ret.return_value = "failed"
    return ret


def start(ctx: Any, num: int, overrides: Sequence[str], shared: tuple) -> Slot:
    """Start the job's process with its sweep config, composed here: the sweeper composed
    it to validate the batch, and ``plan.ComposedOnce`` hands that back, so the job's
    process composes nothing."""
    import cloudpickle

    hydra_context, config = shared[0], shared[1]
    sweep_config = hydra_context.config_loader.load_sweep_config(config, list(overrides))
    result_r, result_w = ctx.Pipe(duplex=False)
    alive_r, alive_w = ctx.Pipe(duplex=False)
    payload = cloudpickle.dumps((num, sweep_config, shared))
    process = ctx.Process(
        target=job_process, args=(payload, result_w, alive_r), name=f"procmem-job-{num}"
    )
    process.start()
    result_w.close()
    alive_r.close()
    return Slot(num, list(overrides), process, result_r, alive_w)


def collect(slot: Slot, ready: list) -> JobReturn | None:
    """The slot's return if its job is over (reported or died), else None."""
    if slot.result not in ready and slot.process.sentinel not in ready:
        return None
    ret = None
    try:
        if slot.result.poll():
            ret = slot.result.recv()
    except (EOFError, OSError):
        ret = None
    if ret is None and slot.process.is_alive():
        return None  # the pipe closed first: wait for the process itself
    slot.process.join(STOP_GRACE_SECONDS)
    if slot.process.is_alive():
        slot.process.kill()
        slot.process.join()
    if ret is None:
        ret = lost_return(slot, why_lost(slot.process.exitcode))
    slot.result.close()
    slot.alive.close()
    return ret


def stop_all(running: list[Slot], why: str) -> None:
    """Tell every job in flight to stop, with ``why`` (its watch thread raises the stop
    in the job, which marks its run KILLED with that reason), wait for them to close
    their runs, kill stragglers. Job processes ignore SIGINT: a Ctrl-C reaches every
    process of the terminal's group, and each job must be stopped once, by this."""
    for slot in running:
        with contextlib.suppress(OSError):
            slot.alive.send(why)
    for slot in running:
        slot.process.join(STOP_GRACE_SECONDS)
        if slot.process.is_alive():
            slot.process.kill()
            slot.process.join()
        LOST.setdefault(slot.num, why)
        slot.alive.close()


def preload(uri: str) -> list[str]:
    """What the fork server imports for jobs that log to ``uri``: ``PRELOAD``, and
    ``SQL_STORE`` unless ``uri`` is a tracking server (http or https)."""
    return [*PRELOAD] + ([] if uri.startswith(("http:", "https:")) else [SQL_STORE])


def context(uri: str) -> Any:
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(preload(uri))
    return ctx


def launch(launcher: Any, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list:
    """Run every job, ``launcher.n_jobs`` at a time; returns their ``JobReturn`` in order."""
    setup_globals()
    config = launcher.config
    configure_log(config.hydra.hydra_logging, config.hydra.verbose)
    n_jobs = check_int("hydra.launcher.n_jobs", launcher.n_jobs, minimum=1)
    sweep_dir = Path(str(config.hydra.sweep.dir))
    sweep_dir.mkdir(parents=True, exist_ok=True)
    log.info("launching %d jobs, %d at a time, into %s", len(job_overrides), n_jobs, sweep_dir)
    shared = (launcher.hydra_context, config, launcher.task_function, Singleton.get_state())
    ctx = context(tracking_uri(OmegaConf.select(config, "tracking.uri")))
    queue = deque((initial_job_idx + i, o) for i, o in enumerate(job_overrides))
    running: list[Slot] = []
    returns: dict[int, JobReturn] = {}
    try:
        while queue or running:
            while queue and len(running) < n_jobs:
                with deferred():  # a stop waits until the job's process has its payload
                    running.append(start(ctx, *queue.popleft(), shared))
            ready = wait([s.result for s in running] + [s.process.sentinel for s in running])
            for slot in list(running):
                ret = collect(slot, ready)
                if ret is not None:
                    returns[slot.num] = ret
                    running.remove(slot)
    except BaseException as exc:
        why = exc.reason if isinstance(exc, Stopped) else f"stopped with the sweep: {exc!r}"
        stop_all(running, why)
        raise
    out = [returns[initial_job_idx + i] for i in range(len(job_overrides))]
    if OmegaConf.select(config, "objective"):  # a search: a lost job is a failed trial (NaN)
        for ret in out:
            if ret.status == JobStatus.COMPLETED and ret.return_value == "failed":
                ret.return_value = math.nan
    return out
