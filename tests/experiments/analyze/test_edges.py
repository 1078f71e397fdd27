"""The analysis CLI on logs it cannot analyze: refused in one line naming the file,
before anything is written under --out and before an MLflow store is made."""

from __future__ import annotations

import pytest

from experiments.analyze.__main__ import main

HEADER = "session_id,time,top_key,withheld,explore_rate,outcome\n"


@pytest.mark.parametrize(
    "rows, value",
    [
        ("", "'no session rows' is not allowed: at least one session"),
        ("s1,1,p,false,0.2,\ns2,2,p,true,0.2,\n", "(2 sessions, 2 matched, 0 rated)"),
        ("s1,1,,false,0.2,1\ns2,2,,false,0.2,0\n", "(2 sessions, 0 matched, 2 rated)"),
    ],
)
def test_nothing_to_fit_is_refused_before_any_output(tmp_path, unmade_tracking_store, capsys,
                                                     rows, value):  # fmt: skip
    # was: a traceback (ValueError from holm or Generator.binomial) after --out was made
    log = tmp_path / "log"
    log.mkdir()
    (log / "sessions.csv").write_text(HEADER + rows)
    code = main([str(log), "--out", str(tmp_path / "out"), "--no-prescribe"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"python -m experiments.analyze: {log / 'sessions.csv'}")
    assert value in err[0]
    assert not (tmp_path / "out").exists() and not unmade_tracking_store.exists()
