"""Issue 31 on real processes, files and signals: a terminal status is written once,
refusals create nothing, a store that is not ours is never written, nothing hangs.

Stops are raised at a chosen point by a callback (``stop_points``) and sweeps are held
by ``sweep_barrier``; tests wait on files and process exits, never on seconds of work.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
HERE = Path(__file__).resolve().parent
FATE = ["experiment=quickstart", "case=fate_seed", "scenario.replications=200", "progress=off"]
WAIT_SECONDS = 300.0  # a bound on events, generous: up to 9 agents share 2 cores


def cli_env(tmp: Path, uri: str | None) -> dict[str, str]:
    """The environment ``run_cli`` gives the command."""
    return dict(
        os.environ,
        MLFLOW_TRACKING_URI=uri or f"sqlite:///{tmp / 'mlflow.db'}",
        PYTHONPATH=os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")]),
    )


def run_cli(tmp: Path, args: list[str], uri: str | None = None, cwd: Path = ROOT):
    """``python -m experiments.run <args>`` in ``cwd`` against ``uri`` (default
    ``tmp/mlflow.db``)."""
    full = cli_env(tmp, uri)
    return subprocess.run(
        [sys.executable, "-m", "experiments.run", *args],
        cwd=cwd, env=full, capture_output=True, text=True, timeout=WAIT_SECONDS,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip


def wait_for(check, what: str, timeout: float = WAIT_SECONDS) -> None:
    """Poll ``check`` until it is true; fail after ``timeout`` seconds (a bound, not a
    measure: what is waited for is an event, a file the job writes)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def all_runs(db: Path, experiment: str = "quickstart") -> list:
    client = MlflowClient(f"sqlite:///{db}")
    exp = client.get_experiment_by_name(experiment)
    return client.search_runs([exp.experiment_id], max_results=1000)


def test_a_stop_just_after_finished_leaves_the_run_finished(tmp_path):
    proc = run_cli(
        tmp_path,
        [*FATE, "+hydra.callbacks.stop._target_=stop_points.StopAfterFinished",
         f"hydra.run.dir={tmp_path / 'run'}"],
    )  # fmt: skip
    assert proc.returncode == 143, proc.stderr[-2000:]  # the stop did arrive, after the commit
    assert f"creating a new MLflow store at {tmp_path / 'mlflow.db'}" in proc.stderr
    (run,) = all_runs(tmp_path / "mlflow.db")
    assert run.info.status == "FINISHED"
    assert "procmem.end_reason" not in run.data.tags
    assert 0.0 <= run.data.metrics["p_excluded"] <= 1.0


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def error_lines(proc) -> list[str]:
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return [line for line in proc.stderr.splitlines() if line.startswith("Error")]


@pytest.fixture(scope="module")
def template(mlflow_template: Path) -> Path:
    """A new, empty MLflow store of the installed MLflow (tests/conftest.py)."""
    return mlflow_template


def test_a_changed_mlflow_schema_stops_the_sweep_before_anything(tmp_path, template):
    db = tmp_path / "changed.db"
    shutil.copy(template, db)
    probe = (
        "from alembic.script import ScriptDirectory as S\n"
        "from mlflow.store.db.utils import _get_alembic_config as c\n"
        "print(S.from_config(c('sqlite://')).get_current_head())"
    )
    head = subprocess.run(  # asked in the CLI's environment, as the CLI's check asks it
        [sys.executable, "-c", probe], cwd=ROOT, env=cli_env(tmp_path, None),
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    with sqlite3.connect(db) as con:  # latest_metrics replaced by a table of other columns
        con.executescript(
            "alter table latest_metrics rename to latest_metrics_old;"
            "create table latest_metrics (run_uuid text, key text, v real);"
        )
        # the head the CLI's check compares with, stated (whole-suite runs once read the
        # copy one migration short: the template had been made in WAL mode, its last
        # migrations in a -wal file the copy missed; see ``mlflow_template``)
        con.execute("update alembic_version set version_num = ?", (head,))
    con.close()
    before = digest(db)
    proc = run_cli(tmp_path, ["-m", *FATE, f"hydra.sweep.dir={tmp_path / 's'}"], f"sqlite:///{db}")
    assert proc.returncode == 1
    (line,) = error_lines(proc)
    assert line.startswith("Error: the sweep cannot start: tracking store") and str(db) in line
    assert "table latest_metrics was changed (no column is_nan, step, timestamp, value" in line
    assert digest(db) == before and not (tmp_path / "s").exists()


def test_a_sweep_failing_after_its_parent_exists_ends_it_failed(tmp_path):
    sweep = tmp_path / "s"
    sweep.mkdir()
    (sweep / "parent_artifacts").write_text("a file where the sweep keeps its folder")
    proc = run_cli(tmp_path, ["-m", *FATE, f"hydra.sweep.dir={sweep}"])
    assert proc.returncode == 1
    (line,) = error_lines(proc)
    assert line.startswith("Error: the sweep cannot start: "), line
    (parent,) = all_runs(tmp_path / "mlflow.db")
    assert parent.data.tags["procmem.role"] == "parent" and parent.info.status == "FAILED"
    assert parent.data.tags["procmem.end_reason"].startswith("the sweep could not start: ")


NAME_RULE = "a name of letters, digits, '.', '_' or '-' (at most 100, starting with"


@pytest.mark.parametrize(
    ("args", "uri", "message"),
    [
        (["tracking.experiment="], None, f"tracking.experiment='' is not allowed: {NAME_RULE}"),
        (["tracking.experiment=../../../escape"], None, "tracking.experiment='../../../escape'"),
        (["case=gate_sprt", "gate.alpha=1.5"], None, "gate.alpha=1.5 is not allowed"),
        ([], "sqlite:///{tmp}/missing/folder/mlflow.db", "the folder {tmp}/missing/folder does"),
    ],
)
def test_a_refused_single_run_creates_nothing(tmp_path, args, uri, message):
    work = tmp_path / "work"  # the run's working directory, where outputs/ would go
    work.mkdir()
    uri = uri and uri.format(tmp=tmp_path)
    proc = run_cli(tmp_path, ["experiment=quickstart", "progress=off", *args], uri, cwd=work)
    assert proc.returncode == 1
    (line,) = error_lines(proc)
    assert message.format(tmp=tmp_path) in line, line
    assert sorted(tmp_path.rglob("*")) == [work], sorted(tmp_path.rglob("*"))


def test_a_fifo_as_the_store_is_refused_in_one_line(tmp_path):
    """A FIFO has size 0 like a new store's file, but MLflow blocks reading it (and retried
    for minutes): refused as not a regular file, nothing created."""
    work = tmp_path / "work"
    work.mkdir()
    os.mkfifo(tmp_path / "pipe.db")
    proc = run_cli(tmp_path, FATE, f"sqlite:///{tmp_path / 'pipe.db'}", cwd=work)
    assert proc.returncode == 1
    (line,) = error_lines(proc)
    assert f"{tmp_path / 'pipe.db'} is not a regular file" in line, line
    assert sorted(tmp_path.rglob("*")) == [tmp_path / "pipe.db", work]


@pytest.mark.parametrize(
    ("pragma", "mark"),
    [("user_version = 7", "user_version 7"), ("application_id = 1234", "application_id 0x4d2"),
     ("application_id = 1886217581", "application_id 0x706d656d")],  # procmem's own mark
)  # fmt: skip
def test_an_empty_database_another_program_marked_is_not_taken_for_a_new_store(
    tmp_path, pragma, mark
):
    """No table, but another program's ``user_version`` or ``application_id`` (MLflow sets
    neither): the store check let MLflow write its 218 tables and indexes into it (as
    the procmem store openers refuse it)."""
    from experiments.stores import TrackingError, check_uri

    path = tmp_path / "theirs.db"
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA {pragma}")
    con.commit()
    con.close()
    before = folder_digest(tmp_path)
    with pytest.raises(TrackingError) as err:
        check_uri(f"sqlite:///{path}")
    assert f"{path} is an SQLite database of another application ({mark})" in str(err.value)
    assert folder_digest(tmp_path) == before


def folder_digest(folder: Path) -> dict[str, str]:
    """Every path under ``folder``, a file with the SHA-256 of its bytes."""
    return {
        str(p.relative_to(folder)): digest(p) if p.is_file() else "dir"
        for p in sorted(folder.rglob("*"))
    }


@pytest.mark.parametrize("form", ["query", "percent-encoded"])
def test_a_foreign_file_named_by_a_query_or_percent_encoded_uri_is_refused_untouched(
    tmp_path, form
):
    """MLflow opens the file SQLAlchemy reads from the URI (its ``?query`` dropped, then
    percent-decoded); the check must identify that file, not the raw text after
    ``sqlite:///`` (which named no file, so a procedure store got MLflow's tables)."""
    from urllib.parse import quote

    from procmem_core.graph.store import ProcedureStore

    folder = tmp_path / "their store ü"
    folder.mkdir()
    store = folder / "loom.db"
    with ProcedureStore.open(store) as procedures:
        procedures.add("refund", "a customer wants a refund", ["look it up", "refund it"])
    work = tmp_path / "work"
    work.mkdir()
    before = folder_digest(tmp_path)
    uri = f"sqlite:///{store}?timeout=10" if form == "query" else f"sqlite:///{quote(str(store))}"
    proc = run_cli(tmp_path, ["experiment=quickstart", "progress=off"], uri, cwd=work)
    assert proc.returncode == 1
    (line,) = error_lines(proc)
    assert f"{store} is a SQLite database but not an MLflow store" in line, line
    assert folder_digest(tmp_path) == before


def test_a_relative_sqlite_uri_is_the_store_in_the_working_directory(tmp_path):
    """``sqlite:///rel.db`` (MLflow's own relative form) in a folder with a space and a
    non-ASCII letter: the run finishes, its store and artifacts beside each other there
    (was: a traceback, "relative path can't be expressed as a file URI", after the store
    and the run's folder were made)."""
    work = tmp_path / "my work ü"
    work.mkdir()
    proc = run_cli(tmp_path, ["experiment=seed_demo", "progress=off"], "sqlite:///rel.db", cwd=work)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"creating a new MLflow store at {work / 'rel.db'}" in proc.stderr
    (run,) = all_runs(work / "rel.db", "seed_demo")
    assert run.info.status == "FINISHED"
    assert run.info.artifact_uri.startswith((work / "mlartifacts" / "seed_demo").as_uri())
    assert (work / "mlartifacts" / "seed_demo" / run.info.run_id / "artifacts").is_dir()


def test_a_refused_run_in_a_folder_of_the_users_keeps_their_files(tmp_path):
    """``hydra.run.dir`` at a folder that already holds the user's ``run.log``: the
    refusal takes back only what this run added (was: the user's log deleted)."""
    mine = tmp_path / "my folder"
    mine.mkdir()
    (mine / "run.log").write_text("my notes from yesterday\n")
    (mine / "data.csv").write_text("a,b\n1,2\n")
    before = folder_digest(mine)
    args = ["experiment=quickstart", "case=gate_sprt", "gate.alpha=1.5", f"hydra.run.dir={mine}"]
    proc = run_cli(tmp_path, args, cwd=tmp_path)
    assert proc.returncode == 1
    (line,) = error_lines(proc)
    assert "gate.alpha=1.5 is not allowed" in line
    assert folder_digest(mine) == before


def test_a_stop_inside_deferred_waits_for_the_block_and_a_second_is_ignored():
    from experiments.stopping import Stopped, deferred, install_handlers

    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        install_handlers()
        steps = []
        with pytest.raises(Stopped) as stop, deferred():
            os.kill(os.getpid(), signal.SIGTERM)  # handled at once: recorded, not raised
            steps.append("block ran to its end")
        assert steps == ["block ran to its end"] and stop.value.exit_code == 143
        os.kill(os.getpid(), signal.SIGTERM)  # the process is already stopping: ignored
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def test_ctrl_c_on_a_sweep_prints_one_line_with_what_finished_and_how_to_resume(tmp_path):
    gate = tmp_path / "barrier"
    gate.mkdir()
    env = dict(
        os.environ,
        MLFLOW_TRACKING_URI=f"sqlite:///{tmp_path / 'mlflow.db'}",
        PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "experiments.run", "-m", *FATE, "scenario.p=0.6,0.7,0.8",
         "hydra.launcher.n_jobs=2", "+hydra.callbacks.barrier._target_=sweep_barrier.Barrier",
         f"+hydra.callbacks.barrier.folder={gate}", "+hydra.callbacks.barrier.hold=[1,2]",
         f"hydra.sweep.dir={tmp_path / 's'}"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    for num in (1, 2):  # job 2 starts only once job 0 has finished and freed its slot
        wait_for(lambda n=num: (gate / f"reached-{n}").exists(), f"job {num} at the barrier")
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: every process of the group gets it
    _, err = proc.communicate(timeout=WAIT_SECONDS)
    assert proc.returncode == 130, err[-3000:]
    assert "Traceback" not in err and "Error" not in err, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith(
        "experiments.run: stopped by SIGINT: 1 of 3 jobs finished, 2 in flight marked KILLED"
    ), last
    assert "; resume with: python -m experiments.run -m experiment=quickstart" in last
    assert last.endswith(" resume=true")
    by_num = {
        int(r.data.tags.get("procmem.job_num", -1)): r for r in all_runs(tmp_path / "mlflow.db")
    }
    assert by_num[0].info.status == "FINISHED"
    for num in (1, 2):
        assert by_num[num].info.status == "KILLED"
        assert by_num[num].data.tags["procmem.end_reason"] == "stopped by SIGINT"
