"""``experiments.analyze`` reads a deployment wherever its log lives: one deployment on
procmem's engine (a SQLite ``ProcedureStore`` whose ``ContextPacker`` logs every pack,
sessions rated through ``rate_session``, runs recorded, a revision gated by ``evolve``)
exported through the store's public API as CSV, Parquet and JSON Lines gives the same
``lifts.csv`` and ``gate_replay.csv`` bytes as the store read straight, and the same
deployment run on a PostgreSQL store (a fresh database in the session's cluster on
127.0.0.1; skipped with the reason when PostgreSQL cannot be started) gives them too;
the live loop's MLflow traces give the lifts of its sessions table; every source that is
none of the accepted forms is refused naming the argument, before anything is
written."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from local_services import fresh_database

from experiments.analyze import analyze
from experiments.analyze.__main__ import main
from experiments.analyze.read import read_log, source_kind
from procmem_core.graph import ContextPacker, ProcedureGraph, ProcedureStore
from procmem_core.logs import LogError
from procmem_core.logs.schema import Text
from procmem_core.logs.store import store_tables

REPO = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
SITUATIONS = ("refund an invoice", "close the month", "reset a password", "ship an order")
RATES = ((0.70, 0.50), (0.55, 0.55), (0.40, 0.60), (0.65, 0.45))  # (shown, withheld)
SESSIONS = 1200


def deploy(path: Path | str, seed: int = 3) -> None:
    """The deployment: packs at explore rate 0.2 on a store (an SQLite file or a
    PostgreSQL URI), 8 % of ratings never
    arriving, one run per shown top procedure, one revision judged by the seed's SPRT
    (no quarantine: every procedure stays matched)."""
    rng = np.random.default_rng(seed)
    with ProcedureStore.open(path, strike_limit=0) as store:
        keys = [store.add(s, s, [f"{s}: look", f"{s}: act", f"{s}: check"]).ref for s in SITUATIONS]
        packer = ContextPacker(store, explore_rate=0.2, max_procedures=1, rng=rng)
        for i in range(SESSIONS):
            j = int(rng.integers(len(SITUATIONS)))
            pack = packer.pack(SITUATIONS[j], session_id=f"s{i:05d}", time=i,
                               user_id=f"u{int(rng.integers(40))}")  # fmt: skip
            ok = bool(rng.random() < RATES[j][1 if pack.procedure_keys_withheld else 0])
            if rng.random() > 0.08:
                store.rate_session(f"s{i:05d}", ok, rated_at=i + int(rng.integers(1, 4)))
            for ref in pack.procedure_keys:
                store.record_run(ref, [], ok=ok)
            if i == 300:
                new = ProcedureGraph.from_steps(["look", "act", "check", "log"])
                store.revise(keys[2], new, "log it")
            if i > 300 and i % 10 == 0:
                store.evolve(keys[2])


def export(store_path: Path, out: Path, fmt: str) -> None:
    """The store's log through its public API (pack_log, runs, revisions) as files."""
    out.mkdir(parents=True)
    with ProcedureStore.open(store_path) as store:
        sessions = pd.DataFrame(
            [{"session_id": r.session_id, "time": r.time, "top_key": r.top_key,
              "withheld": r.withheld, "explore_rate": r.explore_rate,
              "outcome": r.outcome, "shown_keys": json.dumps(list(r.shown_keys)),
              "user_id": r.user_id, "rated_at": r.rated_at} for r in store.pack_log()]
        ).astype({"outcome": "Int64", "rated_at": "Int64"})  # fmt: skip
        runs, revisions = [], []
        for p in store.list():
            runs += [{"key": p.ref, "revision": str(r.revision), "ok": r.ok, "time": r.run_id}
                     for r in store.runs(p.ref)]  # fmt: skip
            accepted = None
            for h in store.revisions(p.ref):
                first = h.outcome == "original"
                revisions.append({
                    "key": p.ref, "revision": str(h.revision),
                    "prior_revision": "" if first else str(accepted),
                    "proposed_at": 0 if first else h.proposed_at,
                    "decided_at": h.decided_at,
                    "verdict": "accepted" if first else h.outcome,
                })  # fmt: skip
                accepted = h.revision if h.outcome in ("original", "accepted") else accepted
    frames = {"sessions": sessions, "runs": pd.DataFrame(runs).sort_values("time"),
              "revisions": pd.DataFrame(revisions).astype({"decided_at": "Int64"})}  # fmt: skip
    for name, frame in frames.items():
        path = out / f"{name}.{fmt}"
        if fmt == "csv":
            frame.to_csv(path, index=False)
        elif fmt == "parquet":
            frame.to_parquet(path, index=False)
        else:
            frame.to_json(path, orient="records", lines=True)


def _analyze(source: str, out: Path, **kw) -> dict[str, str]:
    analyze(source, out, track_run=False, design=False, prescribe=False, **kw)
    return {
        n: (out / n).read_text() for n in ("lifts.csv", "gate_replay.csv") if (out / n).exists()
    }


@pytest.fixture(scope="module")
def deployment(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("deployment") / "procedures.db"
    deploy(path)
    return path


def test_files_and_the_store_give_identical_lifts_and_gate_replays(deployment, tmp_path):
    direct = _analyze(str(deployment), tmp_path / "out-store")
    for fmt in ("csv", "parquet", "jsonl"):
        export(deployment, tmp_path / fmt, fmt)
        assert _analyze(str(tmp_path / fmt), tmp_path / f"out-{fmt}") == direct, fmt
    lifts = pd.read_csv(tmp_path / "out-store" / "lifts.csv").set_index("key")
    assert list(lifts.index) == [f"default/procedure_{s.replace(' ', '_')}" for s in sorted(
        SITUATIONS)]  # fmt: skip
    log = read_log(deployment)
    assert log.sessions.n == SESSIONS and lifts["n_shown"].sum() + lifts["n_withheld"].sum() == (
        SESSIONS)  # fmt: skip
    assert lifts["missing"].sum() == int(np.isnan(log.sessions.outcome).sum()) > 0
    assert (lifts["estimator"] == "dim, cluster-robust by user_id").all()
    # the lift each procedure was simulated with, within 4 SE
    truth = {f"default/procedure_{s.replace(' ', '_')}": a - b for s, (a, b) in zip(
        SITUATIONS, RATES, strict=True)}  # fmt: skip
    for key, row in lifts.iterrows():
        assert abs(row["lift"] - truth[key]) < 4 * row["se"], key
    # the gate replay agrees with the verdict the store's evolve made on the same ledger
    replay = pd.read_csv(tmp_path / "out-store" / "gate_replay.csv")
    assert len(replay) == 1 and replay.loc[0, "logged_verdict"] in ("accepted", "reverted")
    assert replay.loc[0, "sprt_verdict"] == replay.loc[0, "logged_verdict"]


@pytest.fixture(scope="module")
def pg_deployment(pg_cluster: str) -> Iterator[str]:
    """The same deployment (same seed) on a PostgreSQL store: its URI."""
    with fresh_database(pg_cluster) as uri:
        deploy(uri)
        yield uri


@pytest.mark.slow  # the deployment on PostgreSQL: about 20 s on the shared machine
def test_sqlite_and_postgresql_stores_give_identical_lifts_and_gate_replays(
    deployment, pg_deployment, tmp_path
):
    on_sqlite = _analyze(str(deployment), tmp_path / "out-sqlite")
    # a password in the URI (the test cluster trusts loopback, so any password logs in)
    with_password = pg_deployment.replace("mlflow@", "mlflow:s3cret@", 1)
    on_postgres = _analyze(with_password, tmp_path / "out-postgres")
    assert set(on_sqlite) == {"lifts.csv", "gate_replay.csv"}
    assert on_postgres == on_sqlite  # byte for byte
    report = (tmp_path / "out-postgres" / "report.md").read_text()
    assert "mlflow:***@" in report and "s3cret" not in report
    # the raw tables read from each store are the same, column by column
    a, b = store_tables(deployment), store_tables(pg_deployment)
    assert sorted(a) == sorted(b) == ["revisions", "runs", "sessions"]
    for table in a:
        ta, tb = a[table], b[table]
        assert ta.rows == tb.rows > 0 and list(ta.columns) == list(tb.columns), table
        for name, x in ta.columns.items():
            y = tb.columns[name]
            if isinstance(x, Text):
                assert list(x.values) == list(y.values), (table, name)
                np.testing.assert_array_equal(x.codes, y.codes, err_msg=f"{table}.{name}")
            else:
                np.testing.assert_array_equal(x, y, err_msg=f"{table}.{name}")
    assert a["sessions"].rows == SESSIONS and np.isnan(a["sessions"].columns["outcome"]).any()
    assert a["revisions"].rows == len(SITUATIONS) + 1  # the revision the test proposed


def test_cli_reads_a_store_path(deployment, tmp_path, capsys):
    out = tmp_path / "out"
    argv = [str(deployment), "--out", str(out), "--no-track", "--no-prescribe"]
    assert main([*argv, "--no-rule-design"]) == 0
    assert (out / "lifts.csv").is_file() and "report.md" in capsys.readouterr().out


def test_sources_are_told_apart_by_their_form(tmp_path, deployment):
    assert source_kind(deployment) == ("store", str(deployment))
    assert source_kind(tmp_path) == ("directory", str(tmp_path))
    run_id = "0123456789abcdef0123456789abcdef"
    assert source_kind(run_id) == ("artifacts", f"runs:/{run_id}")
    assert source_kind(f"traces:/{run_id}")[0] == "traces"
    assert source_kind("experiments:/live")[0] == "traces"
    for uri in ("postgresql://me@h/db", "postgres://me@h/db", "postgresql+psycopg://me@h/db",
                "postgresql+psycopg2://me:pw@h:5432/db"):  # fmt: skip
        assert source_kind(uri) == ("store", uri)  # a PostgreSQL store, not a path


def _v2_store(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.executescript((REPO / "tests" / "data" / "procedure_store_v2.sql").read_text())
    con.close()
    return path


def _empty_store(path: Path) -> Path:
    ProcedureStore.open(path).close()
    return path


def _mixed_clock(path: Path) -> Path:
    with ProcedureStore.open(path) as s:
        s.log_pack("a", "", False, 0.1, time=1)
        s.log_pack("b", "", False, 0.1, time="2026-01-01T00:00:00")
    return path


def _csv_file(path: Path) -> Path:
    path = path.with_suffix(".csv")
    path.write_text("session_id,time\n")
    return path


def _text_file(path: Path) -> Path:
    path.write_text("not a database\n")
    return path


BAD_SOURCES = [
    ("no such path", lambda p: p / "nope", "LOGS", "no such file or directory"),
    (
        "an unreachable postgresql uri",
        lambda p: "postgresql://me@127.0.0.1:1/db",
        "LOGS",
        "cannot be reached",
    ),
    ("an unknown scheme", lambda p: "mysql://me@127.0.0.1/db", "LOGS", "postgresql+psycopg2://"),
    ("a log file, not its folder", _csv_file, "LOGS", "the directory holding"),
    ("a text file", _text_file, "text", "is not an SQLite database"),
    ("a store without a pack log", _v2_store, "v2", "no table pack_log"),
    ("an empty pack log", _empty_store, "empty", "no sessions"),
    ("two clocks", _mixed_clock, "mixed", "row 2, column 'time'"),
    ("an unknown run", lambda p: "traces:/0123456789abcdef0123456789abcdef", "traces:/", "run"),
    ("an unknown experiment", lambda p: "experiments:/nope", "experiments:/nope", "nope"),
]


@pytest.mark.parametrize(("label", "make", "named", "fragment"), BAD_SOURCES)
def test_bad_sources_are_refused_naming_the_argument(
    tmp_path, tracking_store, capsys, label, make, named, fragment
):
    source = str(make(tmp_path / {"v2": "v2.db", "empty": "empty.db", "mixed": "mixed.db",
                                  "text": "text.db"}.get(named, "x.db")))  # fmt: skip
    out = tmp_path / "out"
    assert main([source, "--out", str(out), "--no-rule-design", "--no-prescribe"]) == 2, label
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after MLflow's own INFO lines
    assert err.startswith("python -m experiments.analyze: ") and fragment in err, (label, err)
    assert source in err  # the argument as given
    assert not out.exists()  # refused before anything was written


def test_a_bad_log_in_a_run_is_named_by_the_run_not_a_temporary_copy(tmp_path, tracking_store):
    from experiments.tracking import Tracker

    folder = tmp_path / "artifacts"
    folder.mkdir()
    sessions = pd.DataFrame({"session_id": ["a", "b"], "time": [1, 2], "top_key": ["k", "k"],
                             "withheld": [False, True], "explore_rate": [0.1, 1.0],
                             "outcome": [1, 0]})  # fmt: skip
    sessions.to_csv(folder / "sessions.csv", index=False)
    tracker = Tracker("live")
    run_id = tracker.start_run("a live run", {})
    tracker.log_artifacts(run_id, folder)
    tracker.finish(run_id)
    with pytest.raises(LogError) as err:
        read_log(f"runs:/{run_id}")  # no tables/ folder: the run's root, as a live run's
    assert (err.value.file, err.value.row, err.value.column) == (
        f"runs:/{run_id}/sessions.csv", 2, "explore_rate")  # fmt: skip


def test_bad_postgresql_stores_are_refused_naming_the_uri(
    pg_database, tmp_path, tracking_store, capsys
):
    out = tmp_path / "out"
    argv = [pg_database, "--out", str(out), "--no-rule-design", "--no-prescribe"]

    def refusal() -> str:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert err.startswith("python -m experiments.analyze: ") and pg_database in err
        return err

    assert "no table pack_log (has: none)" in refusal()  # a database with no store in it
    ProcedureStore.open(pg_database).close()
    assert "no sessions" in refusal()
    with ProcedureStore.open(pg_database) as s:
        s.log_pack("a", "", False, 0.1, time=1)
        s.log_pack("b", "", False, 0.1, time="2026-01-01T00:00:00")
    assert "(pack_log), row 2, column 'time'" in refusal()
    assert not out.exists()  # refused before anything was written
