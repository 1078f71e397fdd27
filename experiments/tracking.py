"""MLflow tracking: one experiment per preset, one parent run per sweep, one child per job.

The contract (docs/architecture.md, "MLflow contract"; reports rely on it):

- tracking URI: ``tracking.uri``, else ``$MLFLOW_TRACKING_URI``, else
  ``sqlite:///<absolute repo root>/mlflow.db`` (``experiments.stores``); for a SQLite
  store the artifacts go beside the database, in ``mlartifacts/<experiment>``;
- a sweep is one parent run (tag ``procmem.role=parent``); each job is a child run with
  the ``mlflow.parentRunId`` tag; a single run without ``-m`` is a plain run;
- child params: the flattened resolved config; tags ``procmem.config_hash``,
  ``procmem.scenario``, ``procmem.seed``, ``mlflow.source.git.commit``,
  ``procmem.overrides``; metrics: ``ScenarioResult.metrics``; artifacts ``config.yaml``,
  ``tables/<name>.parquet``, ``figures/*.png``.

The experiment is tagged ``mlflow.experimentKind`` so that MLflow 3 opens it as runs, not
as a GenAI traces page. Every run carries the process that owns it (``procmem.process``);
``Tracker.reap_orphans`` fails the RUNNING runs whose process is gone, with the reason.
MLflow's "View run" lines are kept off stdout (``MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT``),
so a job's stdout is its own.

Every call goes through :meth:`Tracker.call`, which retries while SQLite says "database is
locked" (parallel jobs share one file) and adds the time spent to ``Tracker.seconds``, so
the cost of tracking can be measured (benchmarks/bench_tracking.py). Params, metrics and
tags are logged with ``MlflowClient.log_batch`` in as few calls as MLflow's limits allow.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from experiments.stopping import is_dead, this_process
from experiments.stores import (  # noqa: F401
    DEFAULT_DB,
    check_experiment_name,
    sqlite_path,
    tracking_uri,
)

# MLflow prints "View run ... at: <url>" on stdout when a run on a server ends; stdout is
# the job's own (the seed demo prints exactly the seed's text), so that stays off.
os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

if TYPE_CHECKING:
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient

T = TypeVar("T")

LOCK_MARKERS = ("database is locked", "database table is locked")
RETRY_SECONDS = 120.0
BATCH_PARAMS_TAGS = 100  # MLflow: at most 100 params and 100 tags per log_batch call
BATCH_ENTITIES = 1000  # MLflow: at most 1000 entities (metrics + params + tags) per call

TAG_ROLE = "procmem.role"
TAG_HASH = "procmem.config_hash"
TAG_SCENARIO = "procmem.scenario"
TAG_SEED = "procmem.seed"
TAG_JOB_SEED = "procmem.job_seed"
TAG_OVERRIDES = "procmem.overrides"
TAG_SWEEP_DIR = "procmem.sweep_dir"
TAG_PRESET = "procmem.preset"
TAG_COMMIT = "mlflow.source.git.commit"
TAG_PARENT = "mlflow.parentRunId"
TAG_RUN_NAME = "mlflow.runName"
TAG_PROCESS = "procmem.process"
TAG_END_REASON = "procmem.end_reason"
TAG_HEARTBEAT = "procmem.heartbeat"
TAG_NOTE = "mlflow.note.content"
EXPERIMENT_KIND = {"mlflow.experimentKind": "custom_model_development"}
"""MLflow 3 opens an experiment without this tag as a GenAI traces page; these are runs."""

STALE_HEARTBEAT_SECONDS = 600.0
"""A RUNNING parent of another machine whose heartbeat is older than this is an orphan."""


def is_lock_error(exc: BaseException) -> bool:
    """True when ``exc`` says SQLite was busy (worth retrying), anywhere in its chain."""
    while exc is not None:
        text = str(exc).lower()
        if any(marker in text for marker in LOCK_MARKERS):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


@cache
def tune_sqlite() -> None:
    """Every SQLite connection this process opens: WAL journal, ``synchronous=NORMAL``.

    WAL lets readers run while a job writes (fewer "database is locked") and, with
    NORMAL, commits without an fsync each: a crash of a job loses nothing committed, a
    power cut may lose the last commits. Installed once per process, for SQLite only.
    """
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    @event.listens_for(Engine, "connect")
    def _pragmas(dbapi_connection: Any, _record: Any) -> None:
        if type(dbapi_connection).__module__.startswith("sqlite3"):
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()


class Tracker:
    """One MLflow experiment, reached through ``MlflowClient``; every call retried and timed."""

    def __init__(self, experiment: str, uri: str | None = None) -> None:
        self.experiment = check_experiment_name(experiment)
        self.uri = tracking_uri(uri)
        self.seconds = 0.0
        self.calls = 0
        self._client: MlflowClient | None = None
        self._experiment_id: str | None = None
        self.ended: dict[str, str] = {}  # run id -> the terminal status this tracker wrote

    @property
    def client(self) -> MlflowClient:
        if self._client is None:
            from mlflow.tracking import MlflowClient

            path = sqlite_path(self.uri)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                tune_sqlite()
            self._client = self.call(MlflowClient, self.uri)
        return self._client

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)``, retried with back-off while the database is locked."""
        start = time.perf_counter()
        delay = 0.02 * (1 + os.getpid() % 5)  # processes spread out their retries
        try:
            while True:
                try:
                    self.calls += 1
                    return fn(*args, **kwargs)
                except Exception as exc:
                    if not is_lock_error(exc) or time.perf_counter() - start > RETRY_SECONDS:
                        raise
                    time.sleep(delay)
                    delay = min(delay * 2, 1.0)
        finally:
            self.seconds += time.perf_counter() - start

    @property
    def experiment_id(self) -> str:
        """The experiment's id, creating the database and the experiment on first use."""
        if self._experiment_id is None:
            self._experiment_id = self.call(self._get_or_create)
        return self._experiment_id

    def _get_or_create(self) -> str:
        found = self.client.get_experiment_by_name(self.experiment)
        if found is not None:
            if any(found.tags.get(k) != v for k, v in EXPERIMENT_KIND.items()):
                for key, value in EXPERIMENT_KIND.items():
                    self.client.set_experiment_tag(found.experiment_id, key, value)
            return found.experiment_id
        path = sqlite_path(self.uri)
        location = (path.parent / "mlartifacts" / self.experiment).as_uri() if path else None
        try:
            return self.client.create_experiment(
                self.experiment, artifact_location=location, tags=EXPERIMENT_KIND
            )
        except Exception:
            # another process created it between our lookup and our create
            found = self.client.get_experiment_by_name(self.experiment)
            if found is None:
                raise
            return found.experiment_id

    def start_run(self, name: str, tags: Mapping[str, str]) -> str:
        """Create a run (RUNNING) with ``tags`` and this process as its owner; its id."""
        tags = {TAG_PROCESS: this_process(), **tags}
        run = self.call(self.client.create_run, self.experiment_id, tags=tags, run_name=name[:250])
        return run.info.run_id

    def log(
        self,
        run_id: str,
        params: Mapping[str, str] = (),
        metrics: Mapping[str, float] = (),
        tags: Mapping[str, str] = (),
        steps: Iterable[tuple[str, float, int]] = (),
    ) -> None:
        """Log params, metrics (``steps``: ``(name, value, step)`` of stepped metrics) and
        tags with as few ``log_batch`` calls as MLflow allows."""
        from mlflow.entities import Metric, Param, RunTag

        now = int(time.time() * 1000)
        p = [Param(k, str(v)) for k, v in dict(params).items()]
        t = [RunTag(k, str(v)) for k, v in dict(tags).items()]
        m = [Metric(k, float(v), now, 0) for k, v in dict(metrics).items()]
        m += [Metric(k, float(v), now, int(step)) for k, v, step in steps]
        while p or t or m:
            bp, p = p[:BATCH_PARAMS_TAGS], p[BATCH_PARAMS_TAGS:]
            bt, t = t[:BATCH_PARAMS_TAGS], t[BATCH_PARAMS_TAGS:]
            room = BATCH_ENTITIES - len(bp) - len(bt)
            bm, m = m[:room], m[room:]
            self.call(self.client.log_batch, run_id, metrics=bm, params=bp, tags=bt)

    def log_artifacts(self, run_id: str, folder: Path) -> None:
        """Upload every file under ``folder`` (paths kept relative to it)."""
        if folder.is_dir() and any(folder.iterdir()):
            self.call(self.client.log_artifacts, run_id, str(folder))

    def finish(self, run_id: str, status: str = "FINISHED", reason: str | None = None) -> None:
        """End a run: FINISHED, FAILED or KILLED, with the ``reason`` (tag
        ``procmem.end_reason``) when it did not finish. A run this tracker has ended is
        never ended again."""
        if run_id in self.ended:
            return
        if reason:
            self.log(run_id, tags={TAG_END_REASON: reason})
        self.call(self.client.set_terminated, run_id, status)
        self.ended[run_id] = status

    def end_if_running(self, run_id: str, status: str, reason: str) -> str:
        """End ``run_id`` with ``status`` only if the store still has it RUNNING; returns
        the status it has now. For the paths that handle an exception or a stop: a
        signal that arrives just after ``set_terminated(FINISHED)`` committed (before
        this process could note it) must not relabel a finished run, so the store is
        asked, not this process's memory. A terminal status is written once."""
        if run_id not in self.ended:
            current = self.call(self.client.get_run, run_id).info.status
            if current != "RUNNING":
                self.ended[run_id] = current
        if run_id in self.ended:
            return self.ended[run_id]
        self.finish(run_id, status, reason)
        return status

    def log_table(self, run_id: str, frame: Any, name: str) -> None:
        """``frame`` as an MLflow table (``tables/<name>.json``), shown by the MLflow UI."""
        self.call(self.client.log_table, run_id, frame, f"tables/{name}.json")

    def reap_orphans(self) -> list[str]:
        """Fail every RUNNING run of the experiment whose process is gone, and the RUNNING
        children of such a parent; returns their ids.

        A run's owner (tag ``procmem.process``) on this machine is checked directly; a
        parent of another machine is an orphan when its heartbeat is older than
        ``STALE_HEARTBEAT_SECONDS``.
        """
        running = self.search("attributes.status = 'RUNNING'")
        reaped: list[str] = []
        now = time.time()
        for run in running:
            tags = run.data.tags
            owner = tags.get(TAG_PROCESS, "")
            beat = float(tags.get(TAG_HEARTBEAT, "nan"))
            if is_dead(owner):
                why = f"orphaned: its process ({owner}) ended without closing the run"
            elif tags.get(TAG_ROLE) == "parent" and now - beat > STALE_HEARTBEAT_SECONDS:
                why = f"orphaned: no heartbeat from its process ({owner}) for {now - beat:.0f} s"
            else:
                continue
            self.finish(run.info.run_id, "FAILED", why)
            reaped.append(run.info.run_id)
        for run in running:
            parent = run.data.tags.get(TAG_PARENT)
            if parent in reaped and run.info.run_id not in reaped:
                self.finish(
                    run.info.run_id,
                    "FAILED",
                    f"orphaned: its sweep's parent run {parent} was orphaned",
                )
                reaped.append(run.info.run_id)
        return reaped

    def search(self, filter_string: str, order_by: Iterable[str] = ()) -> list[Run]:
        """Every run of the experiment matching ``filter_string`` (all pages)."""
        runs: list[Run] = []
        token = None
        while True:
            page = self.call(
                self.client.search_runs,
                [self.experiment_id],
                filter_string=filter_string,
                max_results=5000,
                order_by=list(order_by) or None,
                page_token=token,
            )
            runs.extend(page)
            token = page.token
            if not token:
                return runs

    def finished_hashes(self) -> dict[str, str]:
        """``{config hash: run id}`` of every FINISHED job run of the experiment."""
        runs = self.search(f"attributes.status = 'FINISHED' and tags.`{TAG_ROLE}` != 'parent'")
        return {r.data.tags[TAG_HASH]: r.info.run_id for r in runs if TAG_HASH in r.data.tags}

    def finished_run(self, digest: str) -> str | None:
        """The id of a FINISHED job run with config hash ``digest``, if there is one."""
        runs = self.search(f"attributes.status = 'FINISHED' and tags.`{TAG_HASH}` = '{digest}'")
        return runs[0].info.run_id if runs else None

    def children(self, parent_id: str) -> list[Run]:
        """Every child run of the parent ``parent_id``."""
        return self.search(f"tags.`{TAG_PARENT}` = '{parent_id}'")
