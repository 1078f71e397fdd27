"""MLflow tracking: one experiment per preset, one parent run per sweep, one child per job.

The contract (docs/architecture.md, "MLflow contract"; reports rely on it):

- tracking URI: ``$MLFLOW_TRACKING_URI``, else ``sqlite:///<absolute repo root>/mlflow.db``;
  for a SQLite store the artifacts go beside the database, in ``mlartifacts/<experiment>``;
- a sweep is one parent run (tag ``procmem.role=parent``); each job is a child run with
  the ``mlflow.parentRunId`` tag; a single run without ``-m`` is a plain run;
- child params: the flattened resolved config; tags ``procmem.config_hash``,
  ``procmem.scenario``, ``procmem.seed``, ``mlflow.source.git.commit``,
  ``procmem.overrides``; metrics: ``ScenarioResult.metrics``; artifacts ``config.yaml``,
  ``tables/<name>.parquet``, ``figures/*.png``.

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

from experiments.identity import ROOT

if TYPE_CHECKING:
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient

T = TypeVar("T")

DEFAULT_DB = ROOT / "mlflow.db"
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


def tracking_uri() -> str:
    """``$MLFLOW_TRACKING_URI`` if set, else the SQLite store at the repo root."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{DEFAULT_DB}"


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (None for any other store)."""
    prefix = "sqlite:///"
    return Path(uri[len(prefix) :]) if uri.startswith(prefix) else None


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
        self.experiment = experiment
        self.uri = uri or tracking_uri()
        self.seconds = 0.0
        self.calls = 0
        self._client: MlflowClient | None = None
        self._experiment_id: str | None = None

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
            return found.experiment_id
        path = sqlite_path(self.uri)
        location = (path.parent / "mlartifacts" / self.experiment).as_uri() if path else None
        try:
            return self.client.create_experiment(self.experiment, artifact_location=location)
        except Exception:
            # another process created it between our lookup and our create
            found = self.client.get_experiment_by_name(self.experiment)
            if found is None:
                raise
            return found.experiment_id

    def start_run(self, name: str, tags: Mapping[str, str]) -> str:
        """Create a run (RUNNING) with ``tags`` and return its id."""
        run = self.call(self.client.create_run, self.experiment_id, tags=dict(tags), run_name=name)
        return run.info.run_id

    def log(
        self,
        run_id: str,
        params: Mapping[str, str] = (),
        metrics: Mapping[str, float] = (),
        tags: Mapping[str, str] = (),
    ) -> None:
        """Log params, metrics and tags with as few ``log_batch`` calls as MLflow allows."""
        from mlflow.entities import Metric, Param, RunTag

        now = int(time.time() * 1000)
        p = [Param(k, str(v)) for k, v in dict(params).items()]
        t = [RunTag(k, str(v)) for k, v in dict(tags).items()]
        m = [Metric(k, float(v), now, 0) for k, v in dict(metrics).items()]
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

    def finish(self, run_id: str, status: str = "FINISHED") -> None:
        """End a run: FINISHED, FAILED or KILLED."""
        self.call(self.client.set_terminated, run_id, status)

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

    def running_parents(self, sweep_dir: str) -> list[Run]:
        """RUNNING parent runs of ``sweep_dir``, newest first."""
        quoted = sweep_dir.replace("'", "\\'")
        return self.search(
            f"attributes.status = 'RUNNING' and tags.`{TAG_ROLE}` = 'parent' "
            f"and tags.`{TAG_SWEEP_DIR}` = '{quoted}'",
            order_by=["attributes.start_time DESC"],
        )

    def children(self, parent_id: str) -> list[Run]:
        """Every child run of the parent ``parent_id``."""
        return self.search(f"tags.`{TAG_PARENT}` = '{parent_id}'")
