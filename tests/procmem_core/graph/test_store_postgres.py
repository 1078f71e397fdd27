"""What only the PostgreSQL store has to show (its behaviour tests run through the ``store``
fixture, tests/conftest.py): the driver is optional and a missing one is named; a
database that is not the store's is refused before anything is written; an unreachable
server is named with its password hidden; values keep their types and bits across a
reopen; the write lock makes a second writer wait (and give up after ``busy_timeout``)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from procmem_core.errors import ParameterError
from procmem_core.graph import ProcedureStore, StoreFileError
from procmem_core.graph.postgres import MissingDriver, conninfo, is_uri, shown_uri

REPO = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
STEPS = ["look up the invoice", "check the refund policy window", "issue or decline"]


def _tables(uri: str) -> list[str]:
    import psycopg

    with psycopg.connect(uri) as con:
        rows = con.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema() ORDER BY table_name"
        ).fetchall()
    return [r[0] for r in rows]


def test_procmem_imports_without_the_driver_and_a_missing_one_names_the_extra(monkeypatch):
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "import procmem_core, procmem_core.graph, procmem_core.logs.store\n"
        "from procmem_core.graph import ProcedureStore\n"
        "from procmem_core.logs import LogError\n"
        "try:\n"
        "    procmem_core.logs.store.read_store('postgresql://me@127.0.0.1:1/db')\n"
        "except LogError as exc:\n"
        "    print(exc)\n"
        "ProcedureStore.open('postgresql://me@127.0.0.1:1/db')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 1 and last.startswith("procmem_core.graph.postgres.MissingDriver")
    assert "`postgres` extra" in last and "pip install 'procmem[postgres]'" in last
    read = proc.stdout.strip()  # the logs reader: a LogError naming the URI and the extra
    assert read.startswith("postgresql://me@127.0.0.1:1/db: 'psycopg 3 is not installed'")
    assert read.endswith("pip install 'procmem[postgres]'")
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(MissingDriver, match="needs psycopg 3"):
        ProcedureStore.open("postgresql://me@127.0.0.1:1/db")


def test_an_unreachable_server_is_named_with_its_password_hidden():
    uri = "postgresql://me:s3cret@127.0.0.1:1/db"
    assert shown_uri(uri) == "postgresql://me:***@127.0.0.1:1/db"
    with pytest.raises(StoreFileError) as err:
        ProcedureStore.open(uri)
    assert str(err.value).startswith("postgresql://me:***@127.0.0.1:1/db: cannot be reached (")
    assert "s3cret" not in str(err.value)


@pytest.mark.parametrize("where", ["default", "uri"])
def test_a_silent_server_is_given_up_after_the_connect_timeout(monkeypatch, where):
    """A server that accepts the connection and never answers: the opener gives up after
    ``CONNECT_SECONDS`` (here lowered to libpq's smallest, 2 s) or the URI's own
    ``connect_timeout``, naming the URI (it waited forever)."""
    import socket

    pytest.importorskip("psycopg")
    from procmem_core.graph import postgres

    with socket.socket() as silent:  # accepts connections (the backlog), never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        uri = f"postgresql://me@127.0.0.1:{silent.getsockname()[1]}/db"
        if where == "uri":
            monkeypatch.setattr(postgres, "CONNECT_SECONDS", 3600)
            uri += "?connect_timeout=2"
        else:
            monkeypatch.setattr(postgres, "CONNECT_SECONDS", 2)
        with pytest.raises(StoreFileError) as err:
            ProcedureStore.open(uri)
    assert str(err.value).startswith(f"{uri}: cannot be reached (")
    assert "timeout" in str(err.value)


URIS = {
    "postgresql://me@h/db": "postgresql://me@h/db",
    "postgres://me@h/db": "postgresql://me@h/db",
    "postgresql+psycopg://me@h/db": "postgresql://me@h/db",
    "postgresql+psycopg2://me:pw@h:5/db": "postgresql://me:pw@h:5/db",
    "PostgreSQL+Psycopg2://me@h/db": "postgresql://me@h/db",
}


def test_uris_with_a_driver_are_postgresql_and_other_schemes_are_refused(tmp_path):
    for uri, libpq in URIS.items():
        assert is_uri(uri) and conninfo(uri) == libpq, uri
    assert shown_uri("postgresql+psycopg2://me:pw@h/db") == "postgresql+psycopg2://me:***@h/db"
    assert not is_uri(str(tmp_path / "procedures.db")) and not is_uri("procedures.db")
    for bad in ("mysql://me:pw@h/db", "sqlite:///procedures.db", "postgresql+asyncpg://h/db"):
        with pytest.raises(ParameterError) as err:
            ProcedureStore.open(bad)  # refused as a URI, not opened as a file of that name
        text = str(err.value)
        assert text.startswith(f"store URI={shown_uri(bad)!r} is not allowed: ")
        assert all(s in text for s in ("postgresql://", "postgres://", "postgresql+psycopg2://"))
        assert "pw" not in text and repr(bad.split("://")[0]) in text
    assert list(tmp_path.iterdir()) == [] and not Path("mysql:").exists()


def test_a_driver_uri_opens_the_same_database(pg_database):
    """A store written through ``postgresql+psycopg2://`` is read back through
    ``postgres://`` (both the same database: the driver part dropped)."""
    with ProcedureStore.open(pg_database.replace("postgresql://", "postgresql+psycopg2://")) as s:
        key = s.add("refund", "a refund", STEPS).ref
        s.record_run(key, ["n1"], ok=True)
    with ProcedureStore.open(pg_database.replace("postgresql://", "postgres://")) as s:
        assert [r.ok for r in s.runs(key)] == [True]


def test_a_database_of_another_application_is_refused_untouched(pg_database):
    import psycopg

    with psycopg.connect(pg_database, autocommit=True) as con:
        con.execute("CREATE TABLE runs (run_uuid TEXT PRIMARY KEY, name TEXT)")  # MLflow's
        con.execute("CREATE TABLE experiments (experiment_id INT)")
    with pytest.raises(StoreFileError, match="has a table runs but no schema_version"):
        ProcedureStore.open(pg_database)
    assert _tables(pg_database) == ["experiments", "runs"]  # nothing created


def test_other_tables_may_share_the_database_and_a_reopen_keeps_types_and_bits(pg_database):
    import psycopg

    with psycopg.connect(pg_database, autocommit=True) as con:
        con.execute("CREATE TABLE unrelated (x INT)")
    rate = 0.1 + 0.2  # 0.30000000000000004: a double a 4-byte REAL would not keep
    with ProcedureStore.open(pg_database) as store:
        key = store.add("refund", "a refund", STEPS).ref
        run = store.record_run(key, ["n1", "n2"], ok=True, cost=1 / 3, agent="a")
        store.log_pack("s1", key, True, rate, [key], time=2**40, user_id="u")
        store.log_pack("s2", key, False, rate, time="2026-01-02T03:04:05.123456")
        store.rate_session("s1", 0, rated_at=2**40 + 1)
        store.grant("bob", "default", "writer")
    assert "unrelated" in _tables(pg_database) and "pack_log" in _tables(pg_database)
    with ProcedureStore.open(pg_database) as store:
        (r,) = store.runs(key)
        assert (r.run_id, r.path, r.ok, r.cost, r.agent) == (run.run_id, ("n1", "n2"), True,
                                                             1 / 3, "a")  # fmt: skip
        one, two = store.pack_log()
        assert (one.time, one.rated_at, one.outcome, one.explore_rate) == (
            2**40, 2**40 + 1, 0, rate)  # fmt: skip
        assert (two.time, two.rated_at, two.outcome) == ("2026-01-02T03:04:05.123456", None,
                                                         None)  # fmt: skip
        assert store.roles_of("bob") == {"default": "writer"}


def test_a_second_writer_waits_for_the_write_lock_and_gives_up_after_its_timeout(
    pg_database,
):
    import psycopg

    holder = ProcedureStore.open(pg_database)
    key = holder.add("refund", "a refund", STEPS).ref
    waiter = ProcedureStore.open(pg_database, busy_timeout=0.2)
    patient = ProcedureStore.open(pg_database, busy_timeout=120)
    started, done = threading.Event(), threading.Event()
    outcome: list[object] = []

    def write_when_free() -> None:
        started.set()
        outcome.append(patient.record_run(key, ["n1"], ok=True).run_id)
        done.set()

    with holder._journal.transaction() as tx:  # the lock, held by this block
        tx.next_run_id()  # run id 1 taken inside the held transaction
        with pytest.raises(psycopg.errors.LockNotAvailable):
            waiter.record_run(key, ["n1"], ok=True)
        thread = threading.Thread(target=write_when_free)
        thread.start()
        assert started.wait(60)
        assert not done.is_set()  # it cannot have written: the lock is held
    assert done.wait(120)
    thread.join(60)
    assert outcome == [2]  # after the holder's counter, never the same id
    assert [r.run_id for r in waiter.runs(key)] == [2]  # the timed-out write left nothing
    for s in (holder, waiter, patient):
        s.close()
