"""The session log's readers and checks: every bad input the contract lists is refused
before anything is written or logged, naming file, row, column, value and what is allowed;
CSV, Parquet and JSON Lines give identical lifts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments.analyze import analyze
from experiments.analyze.__main__ import main
from experiments.analyze.read import read_log
from procmem_core.logs import LogError, schema
from simulators.session_log import LogWorld, log_columns, simulate


def _frame(n: int = 400, seed: int = 0, **world) -> pd.DataFrame:
    w = LogWorld((0.5, 0.6), (0.1, -0.05), explore_rate=0.2, missing=0.1, **world)
    return pd.DataFrame(log_columns(w, simulate(w, np.random.default_rng(seed), n)))


def _write(directory: Path, frame: pd.DataFrame, fmt: str = "csv", name: str = "sessions"):
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.{fmt}"
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_json(path, orient="records", lines=True)
    return path


def test_schema_ships_with_a_version_and_the_issue_columns():
    s = schema()
    assert s["version"] == 1
    sessions = s["tables"]["sessions"]
    assert sessions["required"] == [
        "session_id",
        "time",
        "top_key",
        "withheld",
        "explore_rate",
        "outcome",
    ]
    for col in (
        "user_id",
        "agent",
        "namespace",
        "shown_keys",
        "score",
        "covariate",
        "cost",
        "rated_at",
    ):
        assert col in sessions["properties"]
    assert s["tables"]["runs"]["required"] == ["key", "revision", "ok", "time"]
    assert s["tables"]["revisions"]["required"] == [
        "key",
        "revision",
        "prior_revision",
        "proposed_at",
    ]


def _bad(frame: pd.DataFrame, row: int, column: str, value) -> pd.DataFrame:
    f = frame.astype({column: object}).copy()
    f.loc[row, column] = value
    return f


BAD_SESSIONS = [
    ("missing column", lambda f: f.drop(columns="explore_rate"), None, "explore_rate", "missing"),
    ("duplicate id", lambda f: _bad(f, 7, "session_id", "s3"), 8, "session_id", "s3"),
    ("rate of 1", lambda f: _bad(f, 4, "explore_rate", 1.0), 5, "explore_rate", 1.0),
    ("negative rate", lambda f: _bad(f, 9, "explore_rate", -0.1), 10, "explore_rate", -0.1),
    ("rate not a number", lambda f: _bad(f, 2, "explore_rate", "high"), 3, "explore_rate", "high"),
    ("outcome 2", lambda f: _bad(f, 11, "outcome", 2), 12, "outcome", 2.0),
    ("outcome text", lambda f: _bad(f, 5, "outcome", "yes"), 6, "outcome", "yes"),
]


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
@pytest.mark.parametrize(("label", "spoil", "row", "column", "value"), BAD_SESSIONS)
def test_bad_sessions_refused_naming_where(tmp_path, fmt, label, spoil, row, column, value):
    frame = spoil(_frame())
    if fmt == "parquet" and frame.dtypes.get(column) is np.dtype(object):
        frame[column] = frame[column].astype(str)  # parquet needs one type per column
        value = str(value) if not isinstance(value, str) else value
    path = _write(tmp_path / "log", frame, fmt)
    with pytest.raises(LogError) as err:
        read_log(tmp_path / "log")
    e = err.value
    assert (e.file, e.row, e.column) == (str(path), row, column), label
    if value == "missing":
        assert e.value == "missing" and "needs column" in e.allowed
    else:
        assert str(e.value) == str(value) or float(e.value) == float(value)
    assert str(path) in str(e) and column in str(e) and "not allowed" in str(e)


def test_withheld_without_top_key_refused(tmp_path):
    f = _frame()
    f.loc[13, "withheld"] = True
    f.loc[13, "top_key"] = ""
    _write(tmp_path / "log", f)
    with pytest.raises(LogError, match=r"row 14, column 'top_key'.*a procedure key when"):
        read_log(tmp_path / "log")


def test_runs_naming_an_unknown_revision_refused(tmp_path):
    d = tmp_path / "log"
    _write(d, _frame())
    revs = pd.DataFrame(
        {
            "key": ["a", "a"],
            "revision": ["r1", "r2"],
            "prior_revision": ["", "r1"],
            "proposed_at": [0, 10],
        }
    )
    runs = pd.DataFrame(
        {
            "key": ["a", "a", "a"],
            "revision": ["r1", "r2", "r9"],
            "ok": [True, False, True],
            "time": [1, 11, 12],
        }
    )
    _write(d, revs, name="revisions")
    runs_path = _write(d, runs, name="runs")
    with pytest.raises(LogError) as err:
        read_log(d)
    assert (err.value.file, err.value.row, err.value.column, err.value.value) == (
        str(runs_path),
        3,
        "revision",
        "r9",
    )
    assert "revisions.csv" in err.value.allowed


@pytest.mark.parametrize(
    ("fmt", "content"),
    [
        ("parquet", b"session_id,time\ns1,0\n"),
        ("jsonl", b"session_id,time,top_key\ns1,0,a\n"),
        ("csv", b"PAR1\x00\x01\x02garbage\xff\xfe"),
    ],
)
def test_file_not_in_its_format_refused(tmp_path, fmt, content):
    d = tmp_path / "log"
    d.mkdir()
    (d / f"sessions.{fmt}").write_bytes(content)
    with pytest.raises(LogError) as err:
        read_log(d)
    assert err.value.file == str(d / f"sessions.{fmt}")
    assert err.value.row is None and err.value.column is None
    assert f"as its name ends in '.{fmt}'" in err.value.allowed


def test_cli_refuses_before_anything_is_written_or_logged(tmp_path, unmade_tracking_store, capsys):
    _write(tmp_path / "log", _bad(_frame(), 4, "explore_rate", 1.0))
    code = main([str(tmp_path / "log"), "--out", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert "sessions.csv, row 5, column 'explore_rate': 1.0 is not allowed" in err
    assert not (tmp_path / "out").exists() and not unmade_tracking_store.exists()


def test_extra_columns_are_kept_and_ignored(tmp_path):
    f = _frame()
    plain = read_log(_write(tmp_path / "a", f).parent).sessions
    f["note"] = "free text"
    extra = read_log(_write(tmp_path / "b", f).parent).sessions
    assert np.array_equal(plain.outcome, extra.outcome, equal_nan=True)


def test_formats_give_identical_lifts(tmp_path):
    f = _frame(n=3000, seed=4, users=40, user_sd=0.05)
    texts = []
    for fmt in ("csv", "parquet", "jsonl"):
        _write(tmp_path / fmt, f, fmt)
        analyze(
            str(tmp_path / fmt),
            tmp_path / f"out-{fmt}",
            track_run=False,
            design=False,
            prescribe=False,
        )
        texts.append((tmp_path / f"out-{fmt}" / "lifts.csv").read_text())
    assert texts[0] == texts[1] == texts[2]
    lifts = pd.read_csv(tmp_path / "out-csv" / "lifts.csv")
    assert list(lifts["key"]) == ["procedure-000", "procedure-001"]
    assert (lifts["estimator"] == "dim, cluster-robust by user_id").all()


def test_iso_timestamps_read_as_seconds(tmp_path):
    f = _frame(n=50)
    for c in ("time", "rated_at"):  # one clock for both (ticks beside timestamps are refused)
        f[c] = pd.Timestamp("2026-01-01T00:00:00Z") + pd.to_timedelta(f[c], unit="min")
        f[c] = f[c].dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    s = read_log(_write(tmp_path / "log", f).parent).sessions
    assert s.time_unit == "seconds"
    assert np.allclose(np.diff(s.time), 60.0)


@pytest.mark.parametrize(
    ("content", "row"),
    [
        (b"null\n", 1),  # pyarrow's reader crashed the process (a segmentation fault)
        (b'\n null\n{"session_id": "s1"}\n', 2),
        (b"[1, 2]\n", 1),  # was a TypeError traceback, exit 1
        (b"5\n", 1),
        (b'{"session_id": "s1"}\n[1]\n', None),  # pyarrow: "changed from object to array"
        (b'{"session_id": "s1"}\n5\n', None),
    ],
)
def test_json_lines_that_are_not_objects_refused(tmp_path, content, row):
    """A sessions.jsonl line that is JSON but not an object is a file not in the format
    its name says: refused naming the file (and the line, when it is the first), exit 2."""
    d = tmp_path / "log"
    d.mkdir()
    (d / "sessions.jsonl").write_bytes(content)
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "experiments.analyze", str(d), "--out", str(tmp_path / "out"),
         "--no-track"],
        capture_output=True, text=True, cwd=Path(__file__).parents[3],
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-500:]
    where = str(d / "sessions.jsonl") + ("" if row is None else f", row {row}")
    assert f"analyze: {where}: " in done.stderr
    assert "a JSON Lines file of one object per row" in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_an_empty_required_number_is_named_as_empty(tmp_path, fmt):
    """An explore_rate left empty (a session that matched nothing, logged without a rate)
    was refused as "nan is not allowed": a value the file does not hold. It is named as
    the empty cell it is."""
    frame = _frame().astype({"explore_rate": object})
    frame.loc[3, "explore_rate"] = None
    path = _write(tmp_path / "log", frame.astype({"explore_rate": float}), fmt)
    with pytest.raises(LogError) as err:
        read_log(tmp_path / "log")
    assert (err.value.file, err.value.row, err.value.column) == (str(path), 4, "explore_rate")
    assert "row 4, column 'explore_rate': '' is not allowed: a number in [0, 1)" in str(err.value)


def test_a_prior_revision_the_revisions_table_lacks_is_refused(tmp_path):
    """A revision whose prior_revision is not listed was replayed against a prior with no
    runs (every run must name a listed revision, so none can be the prior's): the gates
    judged it on nothing and the report counted their agreement. Refused like a run
    naming an unlisted revision."""
    d = tmp_path / "log"
    _write(d, _frame())
    revs = pd.DataFrame({"key": ["a", "a"], "revision": ["r1", "r2"],
                         "prior_revision": ["", "r0"], "proposed_at": [0, 10]})  # fmt: skip
    runs = pd.DataFrame({"key": ["a", "a"], "revision": ["r1", "r2"], "ok": [True, False],
                         "time": [1, 11]})  # fmt: skip
    revs_path = _write(d, revs, name="revisions")
    _write(d, runs, name="runs")
    with pytest.raises(LogError) as err:
        read_log(d)
    e = err.value
    assert (e.file, e.row, e.column, e.value) == (str(revs_path), 2, "prior_revision", "r0")
    assert e.allowed == "a revision of key 'a' listed in this file, or empty for a first revision"
