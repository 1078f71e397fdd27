"""Services the tests start on loopback, shared by every test folder (``tests/conftest.py``
puts this folder on ``sys.path``): a PostgreSQL cluster from Debian's package
(``postgres``, skipped with the reason when it cannot be started here), a fresh database
in it (``fresh_database``), free ports and the check that a service listens on loopback
only (read with ``ss``)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

LOOPBACK = ("127.", "[::1]", "[::ffff:127.", "::1")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def marked(marker: str) -> list[int]:
    """Pids of the processes whose environment carries ``marker``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if f"PROCMEM_SERVICE={marker}".encode() in (entry / "environ").read_bytes():
                    pids.append(int(entry.name))
    return pids


def listeners(pids: set[int]) -> list[str]:
    """``address:port`` of every TCP/UDP socket listened on by the processes ``pids``."""
    if shutil.which("ss") is None:
        pytest.skip("`ss` (Debian's iproute2) is not installed: the loopback check needs it")
    out = subprocess.run(["ss", "-H", "-lntup"], capture_output=True, text=True, timeout=10)
    found = []
    for line in out.stdout.splitlines():
        fields = line.split()
        if any(f"pid={pid}," in line for pid in pids):
            found.append(fields[4])
    return found


def assert_loopback_only(marker: str | None = None, pids: set[int] = frozenset()) -> None:
    """Every socket of the marked processes (and of ``pids``) listens on loopback."""
    found = listeners(set(marked(marker) if marker else ()) | set(pids))
    assert found, "the service listens on nothing?"
    outside = [a for a in found if not a.startswith(LOOPBACK)]
    assert not outside, f"listening beyond loopback: {outside}"


def postgres_binaries() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return found[-1].parent if found else None


@contextlib.contextmanager
def postgres() -> Iterator[str]:
    """A PostgreSQL cluster on 127.0.0.1 (as user postgres); yields its database URL.

    Skips with the reason when the `postgres` extra (psycopg 3, which the URL names as its
    driver) or Debian's postgresql package is missing; a cluster that fails to start
    fails at once with PostgreSQL's own output."""
    pytest.importorskip(
        "psycopg", reason="the `postgres` extra is not installed: pip install -e '.[postgres]'"
    )
    bins = postgres_binaries()
    if bins is None or os.geteuid() != 0 or shutil.which("runuser") is None:
        pytest.skip("PostgreSQL (Debian's postgresql package) cannot be started here")
    folder = Path(tempfile.mkdtemp(prefix="procmem-pg-"))
    shutil.chown(folder, "postgres")
    as_pg = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    service_step(
        [*as_pg, bins / "initdb", "-D", folder / "data", "-A", "trust", "-U", "mlflow",
         "--no-sync", "-E", "UTF8"], "initdb", timeout=120,
    )  # fmt: skip
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c fsync=off"
    ctl = [*as_pg, bins / "pg_ctl", "-D", folder / "data", "-w", "-t", "60"]
    try:
        service_step([*ctl, "-l", folder / "log", "-o", options, "start"], "pg_ctl start",
                     timeout=90, log=folder / "log")  # fmt: skip
        # the postmaster (first line of postmaster.pid) holds every listening socket
        postmaster = int((folder / "data" / "postmaster.pid").read_text().split()[0])
        assert_loopback_only(pids={postmaster})
        service_step(
            [*as_pg, bins / "createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "mlflow",
             "mlflow"], "createdb", timeout=60,
        )  # fmt: skip
        yield f"postgresql+psycopg://mlflow@127.0.0.1:{port}/mlflow"
    finally:
        subprocess.run([*ctl, "-m", "fast", "stop"], capture_output=True, timeout=90)
        shutil.rmtree(folder, ignore_errors=True)


def service_step(cmd: list, what: str, timeout: float, log: Path | None = None) -> None:
    """Run one start-up step of a service; on failure fail now, with its own output."""
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
        pytest.fail(f"{what} failed ({proc.returncode}):\n{proc.stdout[-1500:]}"
                    f"{proc.stderr[-1500:]}\n{tail}")  # fmt: skip


@contextlib.contextmanager
def fresh_database(cluster: str) -> Iterator[str]:
    """A new, empty database in the cluster ``postgres()`` yielded; yields its
    ``postgresql://`` URI and drops it afterwards (closing whatever still holds it)."""
    import psycopg

    admin_uri = cluster.replace("postgresql+psycopg://", "postgresql://", 1)
    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(admin_uri, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield f"{admin_uri.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(admin_uri, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
