"""``python -m experiments.answers`` and ``python -m experiments.analyze`` check their
tracking store before MLflow opens it, as runs, sweeps, figures and reports do (issue 31,
items 2, 4 and 7): a file that is not an MLflow store is named and left byte for byte, a
store that does not exist is not created (nor its folders), and a server that is not
there, or never answers, is named within seconds. Before, both commands handed the URI
straight to MLflow: a procedure store got MLflow's tables, a missing store was created,
and an unreachable server hung the command for minutes."""

from __future__ import annotations

import hashlib
import socket
import threading

import pytest

from experiments.analyze.__main__ import main as analyze_main
from experiments.answers.__main__ import main as answers_main
from procmem_core.graph.store import ProcedureStore

COMMANDS = {
    "answers": lambda out: answers_main(["quickstart", "--run", "abc"]),
    "analyze runs:/": lambda out: analyze_main(["runs:/abc", "--out", str(out)]),
    "analyze traces:/": lambda out: analyze_main(["traces:/abc", "--out", str(out)]),
}


def snapshot(folder) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        if p.is_file()
        else "dir"
        for p in sorted(folder.rglob("*"))
    }


def procedure_store(folder):
    path = folder / "their store" / "loom.db"
    path.parent.mkdir()
    with ProcedureStore.open(path) as store:
        store.add("refund", "a customer wants a refund", ["look it up", "refund it"])
    return f"sqlite:///{path}", f"{path} is a SQLite database but not an MLflow store"


def missing_store(folder):
    return f"sqlite:///{folder / 'mlflow.db'}", "no store there; nothing to read"


def missing_folder(folder):
    path = folder / "nowhere" / "mlflow.db"
    return f"sqlite:///{path}", f"the folder {path.parent} does not exist"


def closed_port(folder):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    uri = f"http://127.0.0.1:{port}"
    return uri, f"the tracking server {uri} cannot be reached"


STORES = [procedure_store, missing_store, missing_folder, closed_port]


@pytest.mark.parametrize("store", STORES, ids=[s.__name__ for s in STORES])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_store_it_cannot_read_is_named_and_left_as_it_was(
    command, store, tmp_path, capsys, monkeypatch
):
    uri, fragment = store(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    before = snapshot(tmp_path)
    assert COMMANDS[command](tmp_path / "out") == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], lines
    assert snapshot(tmp_path) == before  # no byte changed, no store, folder or output made


def test_a_server_that_never_answers_is_given_up_in_seconds(tmp_path, capsys, monkeypatch):
    """A listening socket that accepts and never answers: each command names it (the
    probe's 5 s bound), where MLflow's own client retried for minutes."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    uri = f"http://127.0.0.1:{server.getsockname()[1]}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    try:
        for command in COMMANDS.values():
            assert command(tmp_path / "out") == 2
            (line,) = capsys.readouterr().err.strip().splitlines()
            assert f"the tracking server {uri} cannot be reached (no answer in 5 s)" in line
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()
    assert list(tmp_path.iterdir()) == []
