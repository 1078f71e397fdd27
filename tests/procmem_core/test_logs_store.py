"""``procmem_core.logs.store``: a ``ProcedureStore`` file read as a session log, column by
column through SQL: numbers exact to the bit, strings in order of first appearance, rows
in ``seq`` order whatever order SQLite concatenates them in, a string holding the
separator read row by row; the revision history's priors, proposal and decision run ids;
the file never written."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from procmem_core.graph import ProcedureGraph, ProcedureStore
from procmem_core.logs import LogError
from procmem_core.logs.store import read_columns, read_store, store_tables
from procmem_core.logs.store_sql import SQLITE

STEPS = ["look", "act", "check"]


def test_numbers_round_trip_exactly_and_codes_follow_first_appearance(tmp_path):
    path = tmp_path / "p.db"
    rates = [0.1234567890123456789, 1 / 3, 0.0, np.nextafter(0.2, 1.0)]
    with ProcedureStore.open(path) as s:
        for i, (rate, top) in enumerate(zip(rates, ["b", "a", "", "b"], strict=True)):
            s.log_pack(f"s{i}", top, False, float(rate), [top] if top else [], time=10 - i)
        s.rate_session("s1", 1, rated_at=20)
    t = store_tables(path)["sessions"]
    assert list(t.columns["explore_rate"]) == [float(r) for r in rates]  # to the bit
    assert list(t.columns["time"]) == [10.0, 9.0, 8.0, 7.0]  # integers, in the order logged
    assert list(t.columns["outcome"][1:2]) == [1.0] and np.isnan(t.columns["outcome"][0])
    top = t.columns["top_key"]
    assert list(top.values) == ["b", "a"] and list(top.codes) == [0, 1, -1, 0]
    assert list(t.columns["rated_at"][:2]) == [pytest.approx(np.nan, nan_ok=True), 20.0]
    assert "user_id" not in t.columns and "agent" not in t.columns  # never given


def test_rows_come_in_seq_order_and_a_separator_falls_back_to_rows(tmp_path):
    path = tmp_path / "p.db"
    with ProcedureStore.open(path) as s:
        for i, key in enumerate(["x", "a\x1fb", "y", ""]):
            s.log_pack(f"s{i}", key, False, 0.1, time=i)
    con = sqlite3.connect(path)
    n, cols = read_columns(
        con.cursor(), "SELECT 100 - seq AS seq, top_key, time FROM pack_log",
        {"top_key": ("top_key", "text"), "time": ("time", "number")},
    )  # fmt: skip
    con.close()
    assert n == 4
    assert cols["top_key"].to_pylist() == ["", "y", "a\x1fb", "x"]  # reversed by seq
    assert list(cols["time"]) == [3.0, 2.0, 1.0, 0.0]


def test_a_store_reads_as_a_log_and_is_not_written(tmp_path):
    path = tmp_path / "p.db"
    with ProcedureStore.open(path, strike_limit=0) as s:
        k = s.add("refund", "a refund", STEPS).ref
        s.log_pack("s0", k, True, 0.5, time="2026-01-01T00:00:00", user_id="u1")
        s.rate_session("s0", 0, rated_at="2026-01-01T00:00:30")
        s.log_pack("s1", k, False, 0.5, [k], time="2026-01-01T00:01:00")
        for _ in range(4):
            s.record_run(k, ["n1"], ok=True, cost=0.25)
        s.revise(k, ProcedureGraph.from_steps([*STEPS, "log"]), "log")
        for _ in range(12):
            s.record_run(k, [], ok=False)
            if s.evolve(k).revision_outcome == "reverted":
                break
        s.revise(k, ProcedureGraph.from_steps([*STEPS, "tell"]), "tell")
        s.record_run(k, [], ok=True)
        decided = s.revisions(k)[1].decided_at
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    log = read_store(path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    s = log.sessions
    assert s.time_unit == "seconds" and list(s.time - s.time[0]) == [0.0, 60.0]
    assert s.optional["rated_at"][0] - s.time[0] == 30.0 and np.isnan(s.optional["rated_at"][1])
    assert list(s.user.codes) == [0, -1] and list(s.withheld) == [True, False]
    r = log.runs
    assert list(r["revision"].strings()) == ["1"] * 4 + ["2"] * int(decided - 4) + ["3"]
    assert list(r["time"]) == list(range(1, decided + 2)) and r["cost"][0] == 0.25
    assert r["path"].value(0) == '["n1"]' and bool(r["ok"][0])
    v = log.revisions
    assert list(v["revision"].strings()) == ["1", "2", "3"]
    assert list(v["prior_revision"].strings()) == ["", "1", "1"]  # a revert restores 1
    assert list(v["verdict"].strings()) == ["accepted", "reverted", "pending"]
    assert list(v["proposed_at"]) == [0.0, 4.0, float(decided)]
    assert v["decided_at"][1] == decided and np.isnan(v["decided_at"][2])


def test_a_store_without_runs_gives_sessions_only(tmp_path):
    path = tmp_path / "p.db"
    with ProcedureStore.open(path) as s:
        s.log_pack("s0", "", False, 0.0, time=1)
    log = read_store(path)
    assert log.runs is None and log.revisions is None and log.sessions.n == 1


@contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """``folder`` made read-only (a mounted snapshot, a backup): its mode, and for root,
    whom modes do not bind, the immutable attribute; skips where neither holds."""
    folder.chmod(0o555)
    attribute = os.access(folder, os.W_OK) and shutil.which("chattr") is not None
    if attribute:
        subprocess.run(["chattr", "+i", str(folder)], capture_output=True)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("cannot make a read-only folder here (root without chattr +i)")
        yield
    finally:
        if attribute:
            subprocess.run(["chattr", "-i", str(folder)], capture_output=True)
        folder.chmod(0o755)


def test_a_store_in_a_read_only_folder_is_read(tmp_path):
    """A closed store is a WAL file without ``-wal``; ``mode=ro`` alone must create its
    ``-shm`` to read it, which a read-only folder refuses: the log was refused as
    'cannot be read (unable to open database file)'. In a writable folder a writer may be
    at work, so the read keeps SQLite's lock (``storefile.snapshot_uri``)."""
    folder = tmp_path / "snapshot"
    folder.mkdir()
    with ProcedureStore.open(folder / "p.db") as s:
        s.log_pack("s0", "", False, 0.0, time=1)
        s.log_pack("s1", "", False, 0.0, time=2)
    before = sorted(folder.iterdir())
    with read_only(folder):
        log = read_store(folder / "p.db")
    assert log.sessions.n == 2 and sorted(folder.iterdir()) == before


def test_a_bad_value_names_the_store_table_row_and_column(tmp_path):
    path = tmp_path / "p.db"
    with ProcedureStore.open(path) as s:
        s.log_pack("s0", "k", False, 0.1, time=1)
        s.log_pack("s1", "k", False, 0.1, time=2)
    con = sqlite3.connect(path)
    con.execute("UPDATE pack_log SET explore_rate = 1.5 WHERE session_id = 's1'")
    con.commit()
    con.close()
    with pytest.raises(LogError) as err:
        read_store(path)
    assert (err.value.file, err.value.row, err.value.column) == (
        f"{path} (pack_log)", 2, "explore_rate")  # fmt: skip


def test_integral_real_clocks_read_as_numbers_and_fractions_are_refused(tmp_path):
    path = tmp_path / "p.db"
    with ProcedureStore.open(path) as s:
        s.log_pack("s0", "k", False, 0.1, time=1)
        s.log_pack("s1", "k", False, 0.1, time=2)
    con = sqlite3.connect(path)
    con.execute("UPDATE pack_log SET time = 2.0, outcome = 1, rated_at = 4.0 WHERE seq = 2")
    con.commit()
    assert list(read_store(path).sessions.time) == [1.0, 2.0]
    con.execute("UPDATE pack_log SET time = 2.5 WHERE seq = 2")
    con.commit()
    con.close()
    with pytest.raises(LogError) as err:
        read_store(path)
    assert (err.value.row, err.value.column, err.value.value) == (2, "time", 2.5)


def test_a_damaged_row_is_refused_naming_the_store(tmp_path):
    path = tmp_path / "p.db"
    with ProcedureStore.open(path) as s:
        k = s.add("refund", "a refund", STEPS).ref
        s.log_pack("s0", k, False, 0.1, time=1)
        s.record_run(k, [], ok=True)
    con = sqlite3.connect(path)
    con.execute("UPDATE runs SET body = '{not json'")
    con.commit()
    con.close()
    with pytest.raises(LogError, match=r"cannot be read .*malformed JSON") as err:
        read_store(path)
    assert err.value.file == str(path)


def test_doubles_read_back_to_the_bit_and_as_numpy_parses_them(tmp_path):
    """pyarrow's parser of SQLite's ``%!.17g`` text gives back every double of magnitude
    up to 1e100 (subnormals and negative values included; random bit patterns) to the bit,
    NULL as NaN, and for every double exactly what numpy's parser gives (SQLite's own
    ``%!.17g`` is off by an ulp for some doubles above about 1e180: not the parser's)."""
    bits = np.random.default_rng(11).integers(0, 2**63, 4000, dtype=np.int64)
    values = bits.view(np.float64)
    values = values[np.isfinite(values)]
    extremes = [5e-324, -2.2250738585072014e-308, 1e100, 2.0**53 + 2, -0.5, 0.1 + 0.2]
    values = np.concatenate([values, extremes, -values[:100]])
    con = sqlite3.connect(tmp_path / "x.db")
    con.execute("CREATE TABLE t (seq INTEGER PRIMARY KEY, x REAL)")
    con.executemany("INSERT INTO t (x) VALUES (?)", [(float(v),) for v in values] + [(None,)])
    n, cols = read_columns(con.cursor(), "SELECT seq, x FROM t", {"x": ("x", "number")})
    text = con.execute(f"SELECT {SQLITE.concat('x', 'number')} FROM t").fetchone()[0]
    con.close()
    got = cols["x"]
    assert n == values.size + 1 and np.isnan(got[-1])
    assert np.array_equal(got.view(np.int64), np.array(text.split(" "), float).view(np.int64))
    small = np.abs(values) <= 1e100
    assert small.sum() > 1000
    assert np.array_equal(got[:-1][small].view(np.int64), values[small].view(np.int64))
