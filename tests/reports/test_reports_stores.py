"""``python -m reports`` on a store it cannot read: one line naming the file, exit 2, and
nothing written (the file's bytes hashed before and after), nothing created, nothing
that hangs (issue 31, items 2, 4, 5 and 7)."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from reports.__main__ import main

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def template(mlflow_template: Path) -> Path:
    """A new, empty MLflow store of the installed MLflow (tests/conftest.py)."""
    return mlflow_template


def report(uri: str, capsys, monkeypatch) -> list[str]:
    """Run ``python -m reports quickstart`` in this process; its stderr lines."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert main(["quickstart", "--no-log"]) == 2
    return capsys.readouterr().err.strip().splitlines()


def procedure_store(path: Path) -> None:
    from procmem_core.graph.store import ProcedureStore

    with ProcedureStore.open(path):
        pass


def text_file(path: Path) -> None:
    path.write_text("not a database\n")


def truncated(template: Path):
    def make(path: Path) -> None:
        data = template.read_bytes()
        path.write_bytes(data[: len(data) // 2])

    return make


def bad_version(template: Path):
    def make(path: Path) -> None:
        shutil.copy(template, path)
        db = sqlite3.connect(path)  # closed here: a WAL store checkpoints when it closes
        try:
            with db:
                db.execute("update alembic_version set version_num = 'not-a-revision'")
        finally:
            db.close()

    return make


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("text", "is not a SQLite database"),
        ("truncated", "is truncated ("),
        ("version", "has MLflow schema version ['not-a-revision'], not the one MLflow"),
        ("procedures", "is not an MLflow store (its tables: "),
    ],
)
def test_a_file_that_is_not_a_whole_mlflow_store_is_refused_unchanged(
    kind, message, template, tmp_path, capsys, monkeypatch
):
    path = tmp_path / "store.db"
    makers = {
        "text": text_file,
        "truncated": truncated(template),
        "version": bad_version(template),
        "procedures": procedure_store,
    }
    makers[kind](path)
    before, files = digest(path), sorted(tmp_path.iterdir())
    lines = report(f"sqlite:///{path}", capsys, monkeypatch)
    assert len(lines) == 1 and message in lines[0] and str(path) in lines[0], lines
    assert digest(path) == before and sorted(tmp_path.iterdir()) == files
    if kind == "procedures":
        with sqlite3.connect(f"file:{path}?immutable=1", uri=True) as db:
            tables = {r[0] for r in db.execute("select name from sqlite_master")}
        assert not tables & {"experiments", "alembic_version", "metrics", "params", "tags"}


@pytest.mark.parametrize("form", ["query", "percent-encoded", "driver"])
def test_the_file_checked_is_the_one_mlflow_opens(form, tmp_path, capsys, monkeypatch):
    """A ``?query``, a ``%20`` or a driver (``sqlite+pysqlite:///``, which MLflow opens as
    SQLite) in the URI: the check reads the file MLflow would open."""
    from urllib.parse import quote

    path = tmp_path / "a store ü" / "loom.db"
    path.parent.mkdir()
    procedure_store(path)
    before, files = digest(path), sorted(tmp_path.rglob("*"))
    uri = {
        "query": f"sqlite:///{path}?timeout=10",
        "percent-encoded": f"sqlite:///{quote(str(path))}",
        "driver": f"sqlite+pysqlite:///{path}",
    }[form]
    lines = report(uri, capsys, monkeypatch)
    assert len(lines) == 1 and f"{path} is not an MLflow store" in lines[0], lines
    assert digest(path) == before and sorted(tmp_path.rglob("*")) == files


@pytest.mark.parametrize("scheme", ["sqlite", "sqlite+pysqlite"])
@pytest.mark.parametrize("folder", ["nowhere", "."])
def test_a_store_that_does_not_exist_is_named_and_not_created(
    tmp_path, capsys, monkeypatch, scheme, folder
):
    path = (tmp_path / folder / "mlflow.db").resolve()
    lines = report(f"{scheme}:///{path}", capsys, monkeypatch)
    assert len(lines) == 1 and f"{path} does not exist" in lines[0], lines
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_store_path_that_is_no_file_is_named_as_such(tmp_path, capsys, monkeypatch, kind):
    path = tmp_path / "mlflow.db"
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    lines = report(f"sqlite:///{path}", capsys, monkeypatch)
    what = "is not a regular file" if kind == "fifo" else "is a folder"
    assert len(lines) == 1 and f"{path} {what}, not an MLflow store" in lines[0], lines
    assert list(tmp_path.iterdir()) == [path]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def refused_report(uri: str, timeout: float) -> tuple[subprocess.CompletedProcess, list[str]]:
    """``python -m reports quickstart`` against tracking store ``uri``, refused (exit 2):
    the process and its stderr's lines (``timeout``: a bound on a hang, not a measure)."""
    proc = subprocess.run(
        [sys.executable, "-m", "reports", "quickstart"],
        cwd=ROOT, env=dict(os.environ, MLFLOW_TRACKING_URI=uri), capture_output=True,
        text=True, timeout=timeout,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    return proc, proc.stderr.strip().splitlines()


def test_a_database_that_is_not_there_fails_in_one_line_naming_it(tmp_path):
    """A tracking database that refuses the connection: one line naming it (not its
    user), and no MLflow retry (MLflow retries a failed connection for about 2 minutes)."""
    pytest.importorskip("psycopg")
    uri = f"postgresql://someone@127.0.0.1:{closed_port()}/mlflow"
    proc, lines = refused_report(uri, timeout=300)
    shown = uri.replace("someone@", "")
    assert len(lines) == 1 and f"the tracking database {shown} cannot be used" in lines[0], lines
    assert "Connection refused" in lines[0] and "retried" not in proc.stderr


def test_a_server_that_is_not_there_fails_in_seconds_naming_it(tmp_path):
    uri = f"http://127.0.0.1:{closed_port()}"
    _, lines = refused_report(uri, timeout=120)
    assert len(lines) == 1 and f"the tracking server {uri} cannot be reached" in lines[0], lines


def test_a_server_that_never_answers_is_given_up_naming_it(capsys, monkeypatch):
    with socket.socket() as silent:  # accepts connections (the backlog), never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        uri = f"http://127.0.0.1:{silent.getsockname()[1]}"
        lines = report(uri, capsys, monkeypatch)
    assert len(lines) == 1 and f"{uri} cannot be reached (no answer in 5 s)" in lines[0], lines


@pytest.mark.parametrize("experiment", ["../../escape", "..", "a/b", "{tmp}/escape"])
def test_an_experiment_name_that_leaves_the_report_root_is_refused(
    experiment, tmp_path, monkeypatch
):
    """An MLflow experiment made outside procmem may have any name: its default report
    folder must stay inside ``reports/out`` (was: written at reports/out/../../escape)."""
    from reports import build
    from reports.errors import ReportError

    root = tmp_path / "reports" / "out"
    monkeypatch.setattr(build, "OUT_ROOT", root)
    experiment = experiment.format(tmp=tmp_path)  # an absolute name, inside tmp_path
    with pytest.raises(ReportError, match=r"names a folder outside .*; give --out <folder>"):
        build.out_folder(experiment, "abc", None)
    assert list(tmp_path.iterdir()) == []
    assert build.out_folder("quickstart", "abc", None) == root / "quickstart" / "abc"
    assert build.out_folder(experiment, "abc", tmp_path / "mine") == tmp_path / "mine"
