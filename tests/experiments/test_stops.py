"""Sweeps whose processes are killed or stopped, on real processes.

Each sweep holds chosen jobs at a barrier (``sweep_barrier.Barrier``, a Hydra callback
the test adds) until the test has done what it checks, so nothing depends on how fast
the machine is: a job worker killed with SIGKILL fails only its own job; SIGTERM to the
main process marks the parent and the jobs in flight KILLED and exits 143; a main
process killed with SIGKILL leaves no worker behind, and the next run of the preset
fails the orphaned parent; Ctrl-C (SIGINT, with the disposition reset in the child, so
a background shell's "ignore" is not inherited) stops a sweep that resumes without
duplicates.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from experiments.stopping import is_dead

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
HERE = Path(__file__).resolve().parent
FATE = ["experiment=quickstart", "case=fate_seed", "scenario.replications=400", "progress=off"]
WAIT_SECONDS = 300.0  # a bound on events, generous: up to 9 agents share 2 cores


def wait_for(check: Callable[[], object], what: str, timeout: float = WAIT_SECONDS) -> object:
    """Poll ``check`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def launch(tmp: Path, args: list[str], hold: list[int], name: str) -> subprocess.Popen:
    """``python -m experiments.run -m <args>`` with a barrier holding jobs ``hold``."""
    gate = tmp / f"barrier-{name}"
    gate.mkdir()
    env = dict(
        os.environ,
        MLFLOW_TRACKING_URI=f"sqlite:///{tmp / 'mlflow.db'}",
        PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    )
    barrier = [
        "+hydra.callbacks.barrier._target_=sweep_barrier.Barrier",
        f"+hydra.callbacks.barrier.folder={gate}",
        f"+hydra.callbacks.barrier.hold=[{','.join(map(str, hold))}]",
    ]
    return subprocess.Popen(
        [sys.executable, "-m", "experiments.run", "-m", *args, *barrier,
         f"hydra.sweep.dir={tmp / name}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip


def reached(tmp: Path, name: str, num: int, proc: subprocess.Popen) -> int:
    """The pid of held job ``num`` once it is at the barrier; fails at once, with the
    sweep's stderr, when the sweep exits before (rather than at the wait's bound)."""
    path = tmp / f"barrier-{name}" / f"reached-{num}"
    text = wait_for(
        lambda: (path.exists() and path.read_text()) or proc.poll() is not None,
        f"job {num} at the barrier",
    )
    if text is True:  # the sweep exited
        _, err = proc.communicate()
        raise AssertionError(f"the sweep exited ({proc.returncode}) first:\n{err[-3000:]}")
    return int(text)


def release(tmp: Path, name: str) -> None:
    (tmp / f"barrier-{name}" / "release").write_text("go")


def runs(tmp: Path, experiment: str = "quickstart") -> list:
    client = MlflowClient(f"sqlite:///{tmp / 'mlflow.db'}")
    exp = client.get_experiment_by_name(experiment)
    return client.search_runs([exp.experiment_id], max_results=1000)


def parent_of(tmp: Path, name: str):
    return next(r for r in runs(tmp) if r.data.tags.get("procmem.sweep_dir") == str(tmp / name))


def children_of(tmp: Path, parent) -> dict[int, object]:
    return {
        int(r.data.tags["procmem.job_num"]): r
        for r in runs(tmp)
        if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id
    }


def gone(pid: int) -> bool:
    return is_dead(f"{os.uname().nodename}/{_boot()}/{pid}/?")


def _boot() -> str:
    from experiments.stopping import boot_id

    return boot_id()


@pytest.fixture
def made_store(tmp_path, new_mlflow_store) -> None:
    """The test's store, made before its sweep starts (a copy of a new MLflow store: these
    tests are about stopping; a sweep creating its store is ``test_sweeps.py``'s)."""
    new_mlflow_store(tmp_path / "mlflow.db")


def test_a_killed_worker_fails_only_its_job_and_the_sweep_goes_on(tmp_path, made_store):
    proc = launch(tmp_path, [*FATE, "scenario.p=0.6,0.7,0.8"], hold=[1], name="s")
    worker = reached(tmp_path, "s", 1, proc)
    os.kill(worker, signal.SIGKILL)
    out, err = proc.communicate(timeout=WAIT_SECONDS)
    assert proc.returncode == 1, err[-2000:]
    assert "FAILED jobs (1):" in out
    assert "killed by SIGKILL (signal 9)" in out and "#1 " in out
    parent = parent_of(tmp_path, "s")
    assert parent.info.status == "FAILED"
    assert parent.data.metrics["jobs_finished"] == 2 and parent.data.metrics["jobs_failed"] == 1
    children = children_of(tmp_path, parent)
    assert {n: c.info.status for n, c in children.items()} == {
        0: "FINISHED", 1: "FAILED", 2: "FINISHED"
    }  # fmt: skip
    assert "killed by SIGKILL" in children[1].data.tags["procmem.end_reason"]


def test_sigterm_kills_the_parent_and_the_jobs_in_flight_and_exits_143(tmp_path, made_store):
    proc = launch(tmp_path, [*FATE, "scenario.p=0.6,0.7,0.8"], hold=[0, 1], name="s")
    workers = [reached(tmp_path, "s", n, proc) for n in (0, 1)]
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=WAIT_SECONDS)
    assert proc.returncode == 143, err[-2000:]
    assert "stopped by SIGTERM" in err
    wait_for(lambda: all(gone(w) for w in workers), "the job processes to exit", 30)
    parent = parent_of(tmp_path, "s")
    assert parent.info.status == "KILLED"
    assert "stopped by SIGTERM" in parent.data.tags["procmem.end_reason"]
    children = children_of(tmp_path, parent)
    assert sorted(children) == [0, 1]  # job 2 never started
    for child in children.values():
        assert child.info.status == "KILLED"
        assert child.data.tags["procmem.end_reason"] == "stopped by SIGTERM"


def test_a_killed_main_leaves_no_worker_and_the_next_run_fails_its_orphans(tmp_path, made_store):
    proc = launch(tmp_path, [*FATE, "scenario.p=0.6,0.7"], hold=[0, 1], name="s")
    workers = [reached(tmp_path, "s", n, proc) for n in (0, 1)]
    proc.kill()
    proc.communicate(timeout=WAIT_SECONDS)
    wait_for(lambda: all(gone(w) for w in workers), "the orphaned workers to exit", 30)
    parent = parent_of(tmp_path, "s")
    assert parent.info.status == "RUNNING"  # nobody was left to close it
    for child in children_of(tmp_path, parent).values():
        assert child.info.status == "KILLED"
        assert child.data.tags["procmem.end_reason"] == "the sweep's main process died"
    again = subprocess.run(  # a single run of the preset is enough to fail the orphans
        [sys.executable, "-m", "experiments.run", *FATE, f"hydra.run.dir={tmp_path / 't'}"],
        cwd=ROOT, env=dict(os.environ, MLFLOW_TRACKING_URI=f"sqlite:///{tmp_path / 'mlflow.db'}"),
        capture_output=True, text=True, timeout=WAIT_SECONDS,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-2000:]
    parent = parent_of(tmp_path, "s")
    assert parent.info.status == "FAILED"
    assert parent.data.tags["procmem.end_reason"].startswith("orphaned: its process (")


def test_an_interrupted_sweep_resumes_without_duplicates(tmp_path, made_store):
    args = [*FATE, "scenario.p=0.6,0.7,0.8", "hydra/launcher=basic"]
    proc = launch(tmp_path, args, hold=[1], name="first")
    reached(tmp_path, "first", 1, proc)  # job 0 has finished, job 1 is in flight
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=WAIT_SECONDS)
    assert proc.returncode == 130, err[-2000:]
    parent = parent_of(tmp_path, "first")
    assert parent.info.status == "KILLED"
    children = children_of(tmp_path, parent)
    assert {n: c.info.status for n, c in children.items()} == {0: "FINISHED", 1: "KILLED"}
    assert children[1].data.tags["procmem.end_reason"] == "stopped by SIGINT"
    resumed = launch(tmp_path, [*args, "resume=true"], hold=[], name="second")
    _, err = resumed.communicate(timeout=WAIT_SECONDS)
    assert resumed.returncode == 0, err[-2000:]
    new = parent_of(tmp_path, "second")
    assert new.data.metrics["jobs_skipped"] == 1 and new.data.metrics["jobs_finished"] == 2
    hashes = [
        r.data.tags["procmem.config_hash"]
        for r in runs(tmp_path)
        if r.info.status == "FINISHED" and r.data.tags.get("procmem.role") == "child"
    ]
    assert len(hashes) == len(set(hashes)) == 3


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    ("args", "uri", "message"),
    [
        (["scenario.p=range(0.9,0.1,0.1)"], None, "expand to none"),
        (["hydra.launcher.n_jobs=0"], None, "hydra.launcher.n_jobs=0 is not allowed"),
        (["scenario.replications=1000000000000"], None, "of memory and 23.1 days (estimated"),
        (["hydra.sweep.dir=/proc/procmem-cannot-write"], None, "hydra.sweep.dir='/proc/procmem"),
        ([], "http://127.0.0.1:{port}", "the tracking server http://127.0.0.1:"),
        ([], "htp://127.0.0.1:5000", "MLFLOW_TRACKING_URI='htp://127.0.0.1:5000' is not allowed"),
        ([], "sqlite:/relative.db", "a malformed tracking URI"),
        ([], "sqlite:///{tmp}/notes.txt", "notes.txt is not a SQLite database"),
    ],
)
def test_a_sweep_that_cannot_run_stops_before_any_run_in_one_line(tmp_path, args, uri, message):
    (tmp_path / "notes.txt").write_text("not a database")
    store = (uri or f"sqlite:///{tmp_path / 'mlflow.db'}").format(port=free_port(), tmp=tmp_path)
    env = dict(os.environ, MLFLOW_TRACKING_URI=store)
    defaults = [f"hydra.sweep.dir={tmp_path / 's'}"] * (not any("sweep.dir" in a for a in args))
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.run", "-m", *FATE, *defaults, *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=WAIT_SECONDS,
    )  # fmt: skip
    assert "Retrying" not in proc.stderr  # refused by the check, not after MLflow's retries
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and message in errors[0], proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["case=gate_sprt", "gate.alpha=1.5"],
         "Error: gate.alpha=1.5 is not allowed: expected a number in (0, 1)"),
        (
            ["gate=sprtt"],
            "Error: gate='sprtt' is not an option: one of "
            + ", ".join(sorted(p.stem for p in (ROOT / "conf" / "gate").glob("*.yaml"))),
        ),
        (["-m", "case=gate_sprt,gate_sprtt"], "Error: case='gate_sprtt' is not an option: one of"),
    ],
)  # fmt: skip
def test_a_bad_value_in_a_single_run_is_one_line_as_in_a_sweep(tmp_path, args, message):
    env = dict(os.environ, MLFLOW_TRACKING_URI=f"sqlite:///{tmp_path / 'mlflow.db'}")
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.run", "experiment=quickstart", *args,
         f"hydra.run.dir={tmp_path / 'run'}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=WAIT_SECONDS,
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [message] or (
        proc.stderr.strip().startswith(message) and "\n" not in proc.stderr.strip()
    ), proc.stderr
    assert "_schema" not in proc.stderr
    assert not (tmp_path / "mlflow.db").exists()
