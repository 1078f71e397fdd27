"""Shared fixtures: compose the real config tree, keep MLflow stores in ``tmp_path``.

As in lightning-hydra-template: tests compose ``conf/`` with Hydra's compose API
(``experiments.run.compose_job``, no mock of it), and sweeps run
``python -m experiments.run`` in a subprocess with their MLflow store
(``MLFLOW_TRACKING_URI``) and Hydra folders in a temporary directory. ``store``: every
test taking it runs against an in-memory, a SQLite and a PostgreSQL ``ProcedureStore``
(one PostgreSQL cluster on 127.0.0.1 for the session, ``pg_cluster``, and a fresh
database per test, ``pg_database``; skipped with the reason when PostgreSQL cannot be
started here). This folder is on ``sys.path`` so tests import ``local_services``.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from omegaconf import DictConfig

from experiments.run import compose_job
from procmem_core.graph import ProcedureStore

sys.path.insert(0, str(Path(__file__).parent))

from local_services import fresh_database, postgres


@pytest.fixture(scope="session", autouse=True)
def calibration_cache(tmp_path_factory) -> Iterator[Path]:
    """Calibrations and design answers the tests compute go to one folder for the whole
    pytest run, not the repo's default (``$PROCMEM_CALIBRATION_CACHE``: read by
    ``conf/config.yaml`` and by sweeps run in a subprocess).

    The folder is new with each run (under pytest's base temporary folder; with xdist, the
    run's, which every worker's lies in), so nothing outlives the run, and the sweeps and
    tests of all workers ask each question once (``FileStore`` writes are atomic). Tests of
    the cache itself install their own folder (``test_calibration_store.py``)."""
    from procmem_core.gates.calibration_store import CACHE_ENV

    base = tmp_path_factory.getbasetemp()
    run = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = run / "calibrations"
    folder.mkdir(exist_ok=True)
    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(folder)
    yield folder
    if before is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = before


@pytest.fixture
def compose_preset() -> Callable[..., DictConfig]:
    """``compose_preset("gate_tuning", ["gate.alpha=0.1"])``: a job's composed config."""
    return compose_job


@pytest.fixture
def tracking_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new_mlflow_store: Callable[[Path], str]
) -> Path:
    """A temporary SQLite MLflow store for code running in this process (new and empty)."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", new_mlflow_store(tmp_path / "mlflow.db"))
    return tmp_path / "mlflow.db"


@pytest.fixture
def unmade_tracking_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``MLFLOW_TRACKING_URI`` at a SQLite file not yet made: for the tests that check
    whether code in this process creates it."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    return tmp_path / "mlflow.db"


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[str]:
    """One PostgreSQL cluster on 127.0.0.1 for the session (``local_services.postgres``)."""
    with postgres() as uri:
        yield uri


@pytest.fixture
def pg_database(pg_cluster: str) -> Iterator[str]:
    """A new, empty database in the session's cluster: its ``postgresql://`` URI."""
    with fresh_database(pg_cluster) as uri:
        yield uri


STORE_BACKENDS = ("memory", "sqlite")
"""``store``'s backends in every module; a module that tests what a journal keeps adds
PostgreSQL with ``pytestmark = pytest.mark.store_backends("memory", "sqlite",
"postgresql")`` (a PostgreSQL case costs a database and several times a SQLite case)."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``store_backend`` (``store``'s) by the module's ``store_backends``."""
    if "store_backend" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("store_backends")
        metafunc.parametrize("store_backend", marker.args if marker else STORE_BACKENDS)


@pytest.fixture
def store(
    store_backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[ProcedureStore]:
    """An empty ``ProcedureStore``: in memory, in a SQLite file under ``tmp_path``, or in
    a fresh PostgreSQL database (``store_backends``)."""
    if store_backend == "memory":
        s = ProcedureStore()
    elif store_backend == "sqlite":
        s = ProcedureStore.open(tmp_path / "procedures.db")
    else:
        s = ProcedureStore.open(request.getfixturevalue("pg_database"))
    yield s
    s.close()


@pytest.fixture(scope="session")
def mlflow_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new, empty MLflow store of the installed MLflow, at its latest schema revision,
    whole in one file (rollback journal, no ``-wal``), so a plain copy of it is the store.

    It is made in a child process. Made in the test process, it once came out one
    migration short in its copies: a process that has used procmem's ``Tracker`` opens
    every SQLite connection in WAL mode (``experiments.tracking.tune_sqlite``), the last
    migrations then sat in ``mlflow.db-wal``, and a copy of ``mlflow.db`` alone missed
    them. ``mlflow db upgrade`` (idempotent) is run too, and the revision is checked."""
    import sqlite3
    import subprocess
    import sys

    from mlflow.store.db.utils import _get_latest_schema_revision

    path = tmp_path_factory.mktemp("mlflow-template") / "mlflow.db"
    uri = f"sqlite:///{path}"
    make = (
        "import sys; from mlflow.tracking import MlflowClient; "
        "MlflowClient(sys.argv[1]).search_experiments()"
    )
    subprocess.run([sys.executable, "-c", make, uri], check=True, capture_output=True)
    mlflow_cli = Path(sys.executable).with_name("mlflow")
    subprocess.run([mlflow_cli, "db", "upgrade", uri], check=True, capture_output=True)
    with sqlite3.connect(path) as db:
        (version,) = db.execute("select version_num from alembic_version").fetchone()
        (journal,) = db.execute("pragma journal_mode").fetchone()
    db.close()
    assert version == _get_latest_schema_revision(), version
    assert journal == "delete" and not path.with_name("mlflow.db-wal").exists(), journal
    return path


@pytest.fixture(scope="session")
def new_mlflow_store(mlflow_template: Path) -> Callable[[Path], str]:
    """``new_mlflow_store(path)``: a new, empty MLflow SQLite store at ``path`` (a copy of
    ``mlflow_template``), and its URI. MLflow creates a store by running its Alembic
    migrations, about 1.2 s of CPU each time; a test whose subject is not that creation
    starts from the copy. The tests of procmem creating the store itself (a sweep's first
    run, bad input that must leave no store) do not use it."""

    def make(path: Path) -> str:
        if path.exists():
            raise FileExistsError(f"{path} exists: new_mlflow_store makes a new store only")
        shutil.copyfile(mlflow_template, path)
        return f"sqlite:///{path}"

    return make
