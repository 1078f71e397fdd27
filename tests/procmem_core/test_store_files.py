"""Every store opener identifies its file read-only before it writes (issue 31, items 2
and 5): a file that is not procmem's is refused with one error naming the path, and its
bytes (hashed before and after) and its folder are as they were; a zero-byte file, an
SQLite file with no tables and a file of procmem's other stores become stores."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from procmem_core.errors import ParameterError
from procmem_core.graph import ProcedureStore, StoreFileError
from procmem_core.learnings import LearningsQueue
from procmem_core.memory import MemoryStore, Principal
from procmem_core.reflections.ledger import DistillLedger
from procmem_core.storefile import APPLICATION_ID

STEPS = ["look up the order", "issue the refund"]
ADMIN = Principal("root", "admin")
OPENERS = {
    "procedures": ProcedureStore.open,
    "memory": MemoryStore.open,
    "learnings": LearningsQueue.open,
    "distill": DistillLedger.open,
}


def _digest(folder: Path) -> dict[str, str]:
    """Every file of the folder with the SHA-256 of its bytes."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


def _sqlite(path: Path, *statements: str, wal: bool = False) -> None:
    con = sqlite3.connect(path)
    if wal:
        con.execute("PRAGMA journal_mode=WAL")
    for stmt in statements:
        con.execute(stmt)
    con.commit()
    con.close()


def _mlflow_shaped(p: Path) -> None:
    """The tables MLflow's database starts with, and its rows (MLflow's own ``runs``
    table among them)."""
    _sqlite(
        p,
        "CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)",
        "INSERT INTO alembic_version VALUES ('1b5f0d9ad7c1')",
        "CREATE TABLE experiments (experiment_id INTEGER PRIMARY KEY, name TEXT)",
        "INSERT INTO experiments VALUES (0, 'Default')",
        "CREATE TABLE runs (run_uuid TEXT PRIMARY KEY, experiment_id INTEGER)",
        "CREATE TABLE metrics (key TEXT, value FLOAT, run_uuid TEXT)",
    )


def _other_app_wal(p: Path) -> None:
    """Another application's database in WAL mode, closed (no -wal file beside it)."""
    _sqlite(p, "CREATE TABLE notes (id INTEGER, body TEXT)", "INSERT INTO notes VALUES (1, 'x')",
            wal=True)  # fmt: skip


def _crashed_app_wal(p: Path) -> None:
    """Another application's WAL database whose writer died with its table still in the
    ``-wal``, and no ``-shm`` beside it (copied, or cleaned up): reading it must not make
    one."""
    code = (
        "import os, sqlite3, sys\n"
        "con = sqlite3.connect(sys.argv[1])\n"
        "con.execute('PRAGMA journal_mode=WAL')\n"
        "con.execute('PRAGMA wal_autocheckpoint=0')\n"
        "con.execute('CREATE TABLE notes (id INTEGER, body TEXT)')\n"
        "con.commit()\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(p)], check=True)
    Path(f"{p}-shm").unlink()
    assert Path(f"{p}-wal").stat().st_size > 0


def _other_app_id(p: Path) -> None:
    """An empty database stamped with another application's id."""
    _sqlite(p, "PRAGMA application_id = 1234")


def _views_only(p: Path) -> None:
    """Another program's database that holds only a view (no table): not empty."""
    _sqlite(p, "CREATE VIEW answer AS SELECT 42 AS value")


def _user_version_only(p: Path) -> None:
    """Another program's database that keeps only its ``user_version`` (procmem never
    sets one)."""
    _sqlite(p, "PRAGMA user_version = 7")


def _text(p: Path) -> None:
    p.write_text("name,value\nalpha,1\n")


def _random(p: Path) -> None:
    p.write_bytes(bytes(range(256)) * 8)


def _truncated(p: Path) -> None:
    with ProcedureStore.open(p) as store:
        for i in range(40):
            store.add(f"refund {i}", "a customer wants a refund " * 20, STEPS)
    p.write_bytes(p.read_bytes()[:3000])


FOREIGN = [
    (_mlflow_shaped, "of another kind (alembic_version, experiments, metrics, runs)"),
    (_other_app_wal, "of another kind (notes)"),
    (_crashed_app_wal, "of another kind (notes)"),
    (_other_app_id, "another application (application_id 0x4d2)"),
    (_views_only, "of another kind (answer)"),
    (_user_version_only, "another application (user_version 7)"),
    (_text, "is not an SQLite database"),
    (_random, "is not an SQLite database"),
    (_truncated, "cannot be"),
]


@pytest.mark.parametrize("opener", OPENERS)
@pytest.mark.parametrize(("make", "fragment"), FOREIGN, ids=[m.__name__ for m, _ in FOREIGN])
def test_a_foreign_file_is_refused_and_left_byte_for_byte(tmp_path, opener, make, fragment):
    path = tmp_path / "theirs.db"
    make(path)
    before = _digest(tmp_path)
    with pytest.raises(StoreFileError) as err:
        OPENERS[opener](path)
    message = str(err.value)
    assert message.startswith(f"{path}: ") and fragment in message
    assert "expected a procmem" in message and "\n" not in message
    assert _digest(tmp_path) == before  # same bytes, no -wal, -shm or -journal left


def test_the_refusal_names_the_store_each_opener_expected(tmp_path):
    path = tmp_path / "notes.txt"
    _text(path)
    with pytest.raises(StoreFileError, match="expected a procmem procedure store"):
        ProcedureStore.open(path)
    with pytest.raises(StoreFileError, match="expected a procmem store file"):
        MemoryStore.open(path)


BAD_PATHS = {
    "NUL byte": ("a\x00b.db", "holds a NUL byte"),
    "300-character name": ("x" * 300 + ".db", "cannot be examined (File name too long)"),
    "under /proc": ("/proc/procmem_store.db", "cannot be opened or created"),
    "a /proc file": ("/proc/version", "is not an SQLite database"),
    "a directory": (".", "is a directory"),
    "a FIFO": ("pipe.db", "is not a regular file"),
}


@pytest.mark.parametrize("opener", OPENERS)
@pytest.mark.parametrize("kind", BAD_PATHS)
def test_a_path_that_cannot_be_a_store_is_one_error_naming_it(tmp_path, opener, kind):
    name, fragment = BAD_PATHS[kind]
    path = str(tmp_path / name) if not name.startswith("/") else name
    if kind == "a FIFO":
        os.mkfifo(path)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(StoreFileError) as err:
        OPENERS[opener](path)
    shown = repr(path) if "\x00" in path else str(Path(path))
    assert str(err.value).startswith(f"{shown}: {fragment}"), str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_missing_folder_is_refused_naming_the_path(tmp_path):
    path = tmp_path / "nowhere" / "loom.db"
    for open_ in OPENERS.values():
        with pytest.raises(ValueError, match=r"nowhere/loom\.db"):
            open_(path)
    assert list(tmp_path.iterdir()) == []


def _application_id(path: Path) -> int:
    return int.from_bytes(path.read_bytes()[68:72], "big")


@pytest.mark.parametrize("start", ["zero-byte", "empty SQLite"])
def test_a_zero_byte_or_empty_sqlite_file_becomes_a_store(tmp_path, start):
    path = tmp_path / "loom.db"
    path.write_bytes(b"") if start == "zero-byte" else _sqlite(path, "VACUUM")
    with ProcedureStore.open(path) as store:
        store.add("refund", "a customer wants a refund", STEPS)
    assert _application_id(path) == APPLICATION_ID
    with ProcedureStore.open(path) as store:
        assert [p.key for p in store.list()] == ["procedure_refund"]
    other = tmp_path / "memory.db"
    other.write_bytes(b"")
    with MemoryStore.open(other) as memory:
        memory.set("the refund window is 30 days")
    assert _application_id(other) == APPLICATION_ID
    with MemoryStore.open(other) as memory:
        assert [r.text for r in memory.records()] == ["the refund window is 30 days"]


@pytest.mark.parametrize("first", OPENERS)
def test_the_stores_share_one_file_whichever_opens_it_first(tmp_path, first):
    """A file a memory store created takes the procedure tables too (it was refused)."""
    path = tmp_path / "loom.db"
    OPENERS[first](path).close()
    procedures = ProcedureStore.open(path)
    memory = MemoryStore.open(path, procedures=procedures)
    queue = LearningsQueue.open(path, memory)
    ledger = DistillLedger.open(path)
    procedures.add("refund", "a customer wants a refund", STEPS)
    memory.set("the refund window is 30 days")
    queue.propose("always confirm the amount", principal=ADMIN)
    for store in (procedures, memory, queue, ledger):
        store.close()
    with ProcedureStore.open(path) as procedures, MemoryStore.open(path) as memory:
        assert (len(procedures), len(memory)) == (1, 1)
    with LearningsQueue.open(path) as queue:
        assert len(queue) == 1


def test_a_damaged_memory_row_names_the_path_and_the_table(tmp_path):
    path = tmp_path / "loom.db"
    with MemoryStore.open(path) as memory:
        memory.set("the refund window is 30 days")
    _sqlite(path, "UPDATE memory_records SET body = '{\"text\": '")
    with pytest.raises(StoreFileError, match=r"damaged row in memory_records"):
        MemoryStore.open(path)
    _sqlite(path, "UPDATE memory_records SET body = '{\"text\": 1}'")
    with pytest.raises(StoreFileError, match=r"loom.db: has a damaged row in memory_records"):
        MemoryStore.open(path)


@pytest.mark.slow
def test_a_real_mlflow_database_is_refused_untouched(tmp_path):
    """MLflow's own database (made by MLflow, one run logged): no opener writes to it."""
    from mlflow.tracking import MlflowClient

    path = tmp_path / "mlflow.db"
    client = MlflowClient(tracking_uri=f"sqlite:///{path}")
    run = client.create_run(client.create_experiment("trial"))
    client.log_metric(run.info.run_id, "success_rate", 0.7)
    client._tracking_client.store.engine.dispose()
    before = _digest(tmp_path)
    for open_ in OPENERS.values():
        with pytest.raises(StoreFileError, match="of another kind"):
            open_(path)
    assert _digest(tmp_path) == before


@pytest.mark.parametrize(
    "uri",
    [
        "sqlite:////tmp/x/mlflow.db",
        "sqlite:////tmp/a%20b/m%C3%BC.db",
        "sqlite:////tmp/x.db?timeout=10&mode=rw",
        "sqlite:////tmp/a%3Fb.db?x=1",
        "sqlite:////tmp/a+b#c.db",
        "sqlite:///relative%20dir/x.db",
        "sqlite+pysqlite:////tmp/a%20b.db?timeout=10",
    ],
)
def test_a_sqlite_url_names_the_file_sqlalchemy_opens(uri):
    from sqlalchemy.engine import make_url

    from procmem_core.storefile import sqlite_url_path

    assert sqlite_url_path(uri) == Path(make_url(uri).database)
    assert sqlite_url_path("http://127.0.0.1:5000") is None


def test_a_run_takes_only_plain_sqlite_urls():
    """A run's machinery (``absolute_sqlite``, the artifact folder) reads ``sqlite:///``
    only, so a driver form is refused as malformed, before anything opens it."""
    from experiments.stores import check_uri_form
    from procmem_core.errors import ParameterError

    with pytest.raises(ParameterError, match="a malformed tracking URI"):
        check_uri_form("sqlite+pysqlite:////tmp/x.db")
    check_uri_form("sqlite:////tmp/x.db")


NEWER = {
    "procedures": "UPDATE schema_version SET version = 99",
    "memory": "UPDATE procmem_journal_meta SET value = '99' "
    "WHERE owner = 'memory' AND key = 'schema_version'",
    "learnings": "UPDATE procmem_journal_meta SET value = '99' "
    "WHERE owner = 'learnings' AND key = 'schema_version'",
    "distill": "UPDATE procmem_journal_meta SET value = '99' "
    "WHERE owner = 'reflection_distill' AND key = 'schema_version'",
}


@pytest.mark.parametrize("opener", OPENERS)
def test_a_store_of_another_schema_version_is_refused_naming_the_file(tmp_path, opener):
    """A store a newer procmem wrote: a ``StoreFileError`` naming the file and both
    versions (a bare ``schema_version=99 is not allowed`` named no file), still the
    ``ParameterError`` naming the field it was, bytes unchanged."""
    path = tmp_path / "newer.db"
    OPENERS[opener](path).close()
    _sqlite(path, NEWER[opener])
    before = _digest(tmp_path)
    with pytest.raises(StoreFileError) as err:
        OPENERS[opener](path)
    field = "schema_version"
    assert str(err.value).startswith(f"{path}: has "), err.value
    assert f"{field}=99; this procmem reads " in str(err.value)
    assert isinstance(err.value, ParameterError) and err.value.field.endswith(field)
    assert _digest(tmp_path) == before


@pytest.mark.parametrize("opener", OPENERS)
def test_a_store_whose_write_lock_is_held_is_said_to_be_busy_not_unreadable(tmp_path, opener):
    """Another connection holds the write lock past ``busy_timeout``: the store is whole,
    so the refusal says it is being written (it read 'cannot be read as a store (database
    is locked)', as for a damaged file)."""
    path = tmp_path / "busy.db"
    OPENERS[opener](path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreFileError) as err:
            if opener == "procedures":
                ProcedureStore.open(path, busy_timeout=0)
            else:
                from procmem_core.memory.journal import RowJournal

                RowJournal(path, opener, ("rows",), busy_timeout=0)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert str(err.value).startswith(f"{path}: is being written by another connection")
    assert "busy_timeout=0 s" in str(err.value) and "cannot be read" not in str(err.value)
