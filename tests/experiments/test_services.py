"""The scale-out path on real services, on loopback only.

- an ``mlflow server`` on a SQL backend (PostgreSQL from Debian's package when it can be
  started here, and SQLite always) at ``http://127.0.0.1:<port>``: a sweep and a report
  through it, with metrics identical to the same sweep into a local SQLite file; the
  seed demo's stdout stays the seed's text (no "View run" lines); the server gone in the
  middle of a sweep, until its jobs' requests have been refused and retried, loses nothing;
- a Ray head (``ray start --head --node-ip-address 127.0.0.1``) and a sweep through
  ``hydra/launcher=ray_cluster``: the jobs reach the store the sweep was started with,
  although the Ray processes' environment names another one;
- every socket these services listen on is on loopback (read with ``ss``): the mlflow
  server's, the Ray head's processes' and the PostgreSQL postmaster's.

Each service is started with a marker in its environment; the test finds its processes
by that marker and stops them by pid. Ports come from the kernel (bind to port 0).
Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest
from local_services import assert_loopback_only, free_port, marked, postgres
from mlflow.tracking import MlflowClient

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
SMALL = ["experiment=quickstart", "scenario.replications=300", "progress=off"]
JOBS = "case=fate_seed,gate_sprt"
WAIT = 120.0

# Each test runs sweeps and reports in subprocesses; the limit catches a hang, and a
# loaded 2-core machine needs more than the suite's default 300 s for the slowest one.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def wait_for(check: Callable[[], object], what: str, timeout: float = WAIT) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            value = check()
            if value:
                return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def stop_marked(marker: str, signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGKILL)) -> None:
    """``signals`` in turn (SIGTERM, then SIGKILL) to the processes this test started (found
    by marker), each time until none is left or 15 s have passed."""
    for sig in signals:
        for pid in marked(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        with contextlib.suppress(AssertionError):
            wait_for(lambda: not marked(marker), "the service to stop", 15)


def run_cli(args: list[str], uri: str, env: dict | None = None, module: str = "experiments.run"):
    full = dict(os.environ, MLFLOW_TRACKING_URI=uri, **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=600,
    )


# --- services ------------------------------------------------------------------------


class Server:
    """``mlflow server`` on 127.0.0.1 with a SQL backend; ``stop``/``start`` keep its port."""

    def __init__(self, backend: str, artifacts: Path) -> None:
        self.backend, self.artifacts = backend, artifacts
        self.port = free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.marker = uuid.uuid4().hex
        self.log = artifacts.parent / f"server-{self.marker[:6]}.log"

    def start(self) -> None:
        # No GenAI job runner: procmem submits no server-side jobs, and its seven Huey
        # consumer processes cost about 20 s of CPU per start (MLflow 3's default is on).
        env = dict(
            os.environ, PROCMEM_SERVICE=self.marker, MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false"
        )
        env.pop("MLFLOW_TRACKING_URI", None)
        with self.log.open("a") as log:
            proc = subprocess.Popen(
                [BIN / "mlflow", "server", "--host", "127.0.0.1", "--port", str(self.port),
                 "--backend-store-uri", self.backend, "--artifacts-destination",
                 str(self.artifacts), "--workers", "1"],
                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        import requests

        def up() -> bool:
            if proc.poll() is not None:  # it exited: no point waiting out the timeout
                return True
            return requests.get(f"{self.uri}/health", timeout=2).ok

        wait_for(up, "mlflow server", 180)
        if proc.poll() is not None:
            pytest.fail(
                f"mlflow server exited with {proc.returncode} before serving:\n"
                + self.log.read_text(errors="replace")[-3000:]
            )

    def stop(self) -> None:
        stop_marked(self.marker)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def server(request, tmp_path_factory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp(f"server-{request.param}")
    with contextlib.ExitStack() as stack:
        if request.param == "sqlite":
            backend = f"sqlite:///{folder / 'server.db'}"
        else:
            backend = stack.enter_context(postgres())
        srv = Server(backend, folder / "artifacts")
        srv.start()
        stack.callback(srv.stop)
        yield srv


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory, new_mlflow_store) -> dict[str, dict[str, float]]:
    """The same sweep into a local SQLite file: metrics by config hash."""
    folder = tmp_path_factory.mktemp("local")
    uri = new_mlflow_store(folder / "mlflow.db")
    proc = run_cli(["-m", *SMALL, JOBS, f"hydra.sweep.dir={folder / 's'}"], uri)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return metrics_by_hash(uri, "quickstart")


def metrics_by_hash(uri: str, experiment: str) -> dict[str, dict[str, float]]:
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], "tags.`procmem.role` = 'child'")
    return {r.data.tags["procmem.config_hash"]: r.data.metrics for r in runs}


# --- tests ---------------------------------------------------------------------------


def test_a_sweep_and_its_report_through_a_tracking_server(server, local_sweep, tmp_path):
    assert_loopback_only(server.marker)
    proc = run_cli(["-m", *SMALL, JOBS, f"hydra.sweep.dir={tmp_path / 's'}"], server.uri)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "View run" not in proc.stdout
    assert f"browse:  open {server.uri}/#/experiments/" in proc.stdout
    logged = metrics_by_hash(server.uri, "quickstart")
    assert set(local_sweep) <= set(logged)
    for digest, metrics in local_sweep.items():
        assert logged[digest] == metrics  # the same numbers, exactly, whatever the store
    if server.backend.startswith("postgresql"):
        return  # the report reads the server's REST API, whatever store is behind it
    report = run_cli(["quickstart", "--out", str(tmp_path / "r")], server.uri, module="reports")
    assert report.returncode == 0, report.stderr[-3000:]
    summary = pd.read_csv(tmp_path / "r" / "summary.csv")
    fate = summary[summary["scenario"] == "fate"].iloc[0]
    expected = local_sweep[fate["config_hash"]]
    assert fate["p_excluded"] == pytest.approx(expected["p_excluded"], rel=1e-12)
    assert (tmp_path / "r" / "index.html").stat().st_size > 10_000


def test_the_seed_demo_prints_only_the_seed_text_through_a_server(server, tmp_path):
    if server.backend.startswith("postgresql"):
        pytest.skip("the backend does not change what reaches stdout")
    proc = run_cli(["experiment=seed_demo", f"hydra.run.dir={tmp_path / 'run'}"], server.uri)
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = (ROOT / "tests" / "data" / "seed_demo_expected.txt").read_text(encoding="utf-8")
    assert proc.stdout == expected
    assert "run " in proc.stderr and "-m reports seed_demo --run " in proc.stderr


def refused_and_retried(sweep_dir: Path) -> bool:
    """A job of the sweep logged urllib3's "Retrying (...)": one of its requests to the
    tracking server failed and is being retried (the job's Hydra log, ``<num>/*.log``)."""
    return any("Retrying (" in log.read_text(errors="replace") for log in sweep_dir.glob("*/*.log"))


def test_a_server_gone_while_its_jobs_log_loses_nothing(server, tmp_path):
    if server.backend.startswith("postgresql"):
        pytest.skip("one backend is enough for the outage")
    gate = tmp_path / "gate"
    gate.mkdir()
    env = {
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        # MLflow retries 7 times with back-off 2 (waits of 4, 8, 16, ... s); back-off 1
        # with more retries rides out the outage (and the server's restart on a
        # loaded machine) and reconnects soon after it
        "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "10",
    }
    args = [
        "-m", *SMALL, "case=fate_seed", "scenario.p=0.6,0.7,0.8", "tracking.experiment=outage",
        "+hydra.callbacks.barrier._target_=sweep_barrier.Barrier",
        f"+hydra.callbacks.barrier.folder={gate}", "+hydra.callbacks.barrier.hold=[1]",
        f"hydra.sweep.dir={tmp_path / 's'}",
    ]  # fmt: skip
    full = dict(os.environ, MLFLOW_TRACKING_URI=server.uri, **env)
    proc = subprocess.Popen(
        [sys.executable, "-m", "experiments.run", *args], cwd=ROOT, env=full,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    reached = wait_for(
        lambda: (gate / "reached-1").exists() or proc.poll() is not None, "job 1 at the barrier"
    )
    assert reached and proc.poll() is None, proc.communicate()[1][-3000:]
    server.stop()
    (gate / "release").write_text("go")  # job 1 and job 2 log while the server is away
    # the outage lasts until a job's request has been refused and retried (an event, not a
    # span of seconds: a fixed 10 s once stood here), then as long as the restart takes
    wait_for(lambda: refused_and_retried(tmp_path / "s"), "a request refused and retried")
    assert proc.poll() is None, proc.communicate()[1][-3000:]
    server.start()
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    client = MlflowClient(server.uri)
    exp = client.get_experiment_by_name("outage")
    runs = client.search_runs([exp.experiment_id])
    children = [r for r in runs if r.data.tags.get("procmem.role") == "child"]
    assert sorted(r.info.status for r in children) == ["FINISHED"] * 3
    assert all("p_excluded" in r.data.metrics for r in children)
    for child in children:
        tables = client.list_artifacts(child.info.run_id, "tables")
        assert [a.path for a in tables] == ["tables/fates.parquet"]
    parent = next(r for r in runs if r.data.tags.get("procmem.role") == "parent")
    assert parent.info.status == "FINISHED" and parent.data.metrics["jobs_finished"] == 3


@pytest.fixture(scope="module")
def ray_head(tmp_path_factory) -> Iterator[tuple[str, str, Path]]:
    """A Ray head on loopback; yields its Ray client address, its marker and its folder
    (where the Ray processes' ``MLFLOW_TRACKING_URI`` points, a store nobody must use)."""
    pytest.importorskip("ray", reason="the `ray` extra is not installed: pip install -e '.[ray]'")
    folder = Path(tempfile.mkdtemp(prefix="procmem-ray-"))
    marker = uuid.uuid4().hex
    client_port = free_port()
    env = dict(
        os.environ,
        PROCMEM_SERVICE=marker,
        RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",  # without it Ray binds the outward interface
        RAY_USAGE_STATS_ENABLED="0",
        MLFLOW_TRACKING_URI=f"sqlite:///{folder / 'not-the-store.db'}",  # workers' env
    )
    start = subprocess.run(
        [BIN / "ray", "start", "--head", "--node-ip-address", "127.0.0.1", "--port", "0",
         "--ray-client-server-port", str(client_port),
         "--dashboard-agent-listen-port", str(free_port()), "--include-dashboard", "false",
         "--disable-usage-stats", "--num-cpus", "2", "--temp-dir", str(folder)],
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    try:
        assert start.returncode == 0, start.stdout[-2000:] + start.stderr[-2000:]
        address = f"ray://127.0.0.1:{client_port}"
        ray_client_ready(address, folder)
        yield address, marker, folder
    finally:
        # SIGKILL at once, as ``ray stop --force`` does, to this head's processes only: its
        # GCS server and monitor ignore SIGTERM (the grace cost 30 s), and nothing in its
        # temporary folder is kept
        stop_marked(marker, signals=(signal.SIGKILL,))
        shutil.rmtree(folder, ignore_errors=True)


RAY_PROBE = (
    "import sys, ray; ray.init(sys.argv[1]); "
    "assert ray.get(ray.remote(lambda: 1).remote()) == 1; ray.shutdown()"
)


def ray_client_ready(address: str, folder: Path, attempts: int = 3) -> None:
    """Wait until the head serves a Ray client end to end (a client connects and runs a
    task): ``ray start`` returns before its agents are up, and a client that comes too
    early gets "Starting Ray client server failed". Each attempt is bounded; the head's
    client-server logs go into the failure message."""
    for _ in range(attempts):
        probe = subprocess.run(
            [sys.executable, "-c", RAY_PROBE, address],
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        if probe.returncode == 0:
            return
    raise AssertionError(probe.stderr[-2000:] + ray_client_logs(folder))


def ray_client_logs(folder: Path) -> str:
    """The tails of the head's Ray client-server logs (why a client could not connect)."""
    logs = sorted(folder.glob("session_*/logs/ray_client_server*.err"))
    return "".join(f"\n== {f.name}\n" + f.read_text()[-1500:] for f in logs)


RAY_CLIENT_START_FAILURES = (
    "Starting Ray client server failed",
    # the proxy read a per-client server that had already died (psutil.ZombieProcess in
    # proxier.start_specific_server), seen once at load 7: no job had started
    "ConnectionAbortedError: Initialization failure from server",
)
"""Ray client start-up failures on a loaded head, before any job is sent: tried once more."""


def test_a_sweep_on_a_ray_cluster_reaches_the_store_it_was_started_with(
    ray_head, local_sweep, tmp_path
):
    address, marker, folder = ray_head
    assert_loopback_only(marker)
    for attempt in range(2):  # Ray's client proxy can fail to spawn its per-client server
        uri = f"sqlite:///{tmp_path / f'mlflow-{attempt}.db'}"  # on a loaded head: once more
        proc = run_cli(
            ["-m", *SMALL, JOBS, "hydra/launcher=ray_cluster",
             f"hydra.sweep.dir={tmp_path / f's{attempt}'}"],
            uri,
            env={"RAY_ADDRESS": address},
        )  # fmt: skip
        if not any(failure in proc.stderr for failure in RAY_CLIENT_START_FAILURES):
            break
    assert proc.returncode == 0, proc.stderr[-4000:] + ray_client_logs(folder)
    assert_loopback_only(marker)
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("quickstart")
    runs = client.search_runs([exp.experiment_id])
    parent = next(r for r in runs if r.data.tags.get("procmem.role") == "parent")
    assert parent.data.tags["procmem.launcher"].endswith("RayLauncher")
    assert parent.info.status == "FINISHED"
    children = [r for r in runs if r.data.tags.get("procmem.role") == "child"]
    assert sorted(r.info.status for r in children) == ["FINISHED", "FINISHED"]
    for child in children:  # the same numbers as the local sweep, from the Ray workers
        assert child.data.metrics == local_sweep[child.data.tags["procmem.config_hash"]]
        assert child.data.tags["procmem.process"] != parent.data.tags["procmem.process"]
    assert not (folder / "not-the-store.db").exists()
