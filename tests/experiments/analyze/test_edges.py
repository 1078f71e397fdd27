"""The analysis CLI on logs it cannot analyze: refused in one line naming the file,
before anything is written under --out and before an MLflow store is made."""

from __future__ import annotations

import numpy as np
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


def test_world_json_weighs_lifts_by_the_pooled_rate_se(tmp_path):
    """The analysis's world.json fits the lifts' mean with ``pooled_se`` (was: the per-arm
    Wald SE of lifts.csv, biased where withheld arms are small and rates rare)."""
    import json

    import numpy as np

    from experiments.analyze.steps import world_section
    from procmem_core.logs import Table, Text, check_log, estimate_lifts
    from procmem_core.logs.world import normal_lifts, pooled_se

    rng = np.random.default_rng(3)  # 60 procedures, rates Beta(1.5, 3.5), no lift, 10 % withheld
    n, p = 8000, rng.beta(1.5, 3.5, 60)
    top = rng.integers(0, 60, n)
    cols = {
        "session_id": Text(np.arange(n), np.arange(n).astype(str)),
        "time": np.arange(n, dtype=float),
        "top_key": Text(top, np.array([f"p{k:02d}" for k in range(60)])),
        "withheld": rng.random(n) < 0.1,
        "explore_rate": np.full(n, 0.1),
        "outcome": (rng.random(n) < p[top]).astype(float),
    }
    log = check_log(Table("sessions", "sessions.csv", n, cols))
    lifts = estimate_lifts(log.sessions)
    world_section(log, lifts, tmp_path, 0, {})
    fitted = json.loads((tmp_path / "world.json").read_text())["lifts"]["mean"]["value"]
    c = lifts.columns
    counts = tuple(c[k] for k in ("successes_shown", "rated_shown",
                                  "successes_withheld", "rated_withheld"))  # fmt: skip
    pooled = normal_lifts(c["lift"], pooled_se(c["se"], counts))[0]["mean"].value
    wald = normal_lifts(c["lift"], c["se"])[0]["mean"].value
    assert fitted == pytest.approx(pooled) and abs(pooled - wald) > 0.005


@pytest.mark.parametrize(
    "withheld, outcome, base",
    [
        # withheld sessions, none rated: the rated sessions' 3/4 (was: NaN, and the CLI
        # stopped with "base=nan is not allowed" after lifts.csv was written)
        ([0, 0, 0, 0, 1, 1], [1, 0, 1, 1, None, None], 0.75),
        ([0, 0, 0, 0, 1, 1], [1, 1, 1, 1, 0, 1], 0.5),  # the withheld arm's 1/2
        ([0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0], 0.85),  # none withheld: 5/6, capped
    ],
)
def test_the_designed_rules_base_rate(withheld, outcome, base):
    import numpy as np

    from experiments.analyze.steps import rule_base
    from procmem_core.logs import Table, Text, check_log

    n = len(outcome)
    cols = {
        "session_id": Text(np.arange(n), np.arange(n).astype(str)),
        "time": np.arange(n, dtype=float),
        "top_key": Text(np.zeros(n, dtype=np.int64), np.array(["p"])),
        "withheld": np.array(withheld, dtype=bool),
        "explore_rate": np.full(n, 0.3),
        "outcome": np.array([np.nan if y is None else y for y in outcome], dtype=float),
    }
    assert rule_base(check_log(Table("sessions", "sessions.csv", n, cols))) == base


@pytest.mark.parametrize(
    "flag, value, message",
    [
        ("--level", "1.5", "--level=1.5 is not allowed: expected a number in (0, 1)"),
        ("--target-lift", "-3", "--target-lift=-3.0 is not allowed: a non-zero number in (-1, 1)"),
        ("--target-lift", "0", "--target-lift=0.0 is not allowed: a non-zero number in (-1, 1)"),
    ],
)
def test_bad_options_are_refused_before_the_log_is_read(tmp_path, unmade_tracking_store, capsys,
                                                        flag, value, message):  # fmt: skip
    # was: refused as "confidence_level=1.5" (or, on a log without withheld sessions,
    # "lift=-3.0") after --out had been made
    log = tmp_path / "log"
    log.mkdir()
    (log / "sessions.csv").write_text(HEADER + "s1,1,p,false,0.2,1\n")
    code = main([str(log), "--out", str(tmp_path / "out"), flag, value])
    assert code == 2
    assert capsys.readouterr().err.strip() == f"python -m experiments.analyze: {message}"
    assert not (tmp_path / "out").exists() and not unmade_tracking_store.exists()


@pytest.mark.parametrize(
    "files, sentence",
    [
        (
            {"runs.csv": "key,revision,ok,time\np,1,true,1\n"},
            "The log has runs but no revisions file: no revision to replay the gates on.",
        ),
        (
            {"revisions.csv": "key,revision,prior_revision,proposed_at\np,1,,0\n"},
            "The log has revisions but no runs file: no ledger to replay the gates on.",
        ),
        ({}, "The log has no runs and revisions files: no gate to replay."),
    ],
)
def test_the_gate_section_says_which_file_is_missing(tmp_path, files, sentence):
    # was: 'The log has no runs and revisions files' for a log with a runs file
    from experiments.analyze import analyze

    log = tmp_path / "log"
    log.mkdir()
    (log / "sessions.csv").write_text(HEADER + "s1,1,p,false,0.2,1\ns2,2,p,true,0.2,0\n")
    for name, text in files.items():
        (log / name).write_text(text)
    analyze(str(log), tmp_path / "out", track_run=False, design=False, prescribe=False)
    report = (tmp_path / "out" / "report.md").read_text()
    assert f"## Gate replay\n\n{sentence}\n" in report


def test_the_world_section_says_where_an_se_is_missing(tmp_path):
    """Ten procedures with the same counts (44 of 80 shown, 10 of 20 withheld succeed),
    so the same lift: the lifts' sd is estimated at 0 with no SE, and the report read
    'sd 0.000 +- nan'. It now says the log does not pin it down."""
    from experiments.analyze import analyze

    rows, i = [], 0
    for k in range(10):
        for j in range(100):
            withheld = j >= 80
            ok = int(j < 44 or 80 <= j < 90)
            rows.append(f"s{i},{i},k{k},{str(withheld).lower()},0.2,{ok}\n")
            i += 1
    log = tmp_path / "log"
    log.mkdir()
    (log / "sessions.csv").write_text(HEADER + "".join(rows))
    analyze(str(log), tmp_path / "out", track_run=False, design=False, prescribe=False)
    report = (tmp_path / "out" / "report.md").read_text()
    world = report.split("## Fitted world")[1].split("|")[0]
    assert "sd 0.000 (no SE: the log does not pin it down)" in world
    assert "nan" not in world


def test_a_second_analysis_into_the_same_out_leaves_no_file_of_the_first(tmp_path):
    """The example log (with a ledger) analyzed into DIR, then a log without runs into the
    same DIR: the command said 'wrote gate_replay.csv, ...' and kept (and would log as
    this run's artifact) the example's gate replay beside the new lifts. The analysis's
    own files from before are removed; other files in DIR are left alone."""
    from pathlib import Path

    from experiments.analyze import analyze

    out = tmp_path / "out"
    example = Path(__file__).parents[3] / "examples" / "session_log"
    analyze(str(example), out, track_run=False, design=False, prescribe=False)
    assert (out / "gate_replay.csv").exists()
    (out / "notes.txt").write_text("mine")
    log = tmp_path / "log"
    log.mkdir()
    (log / "sessions.csv").write_text(HEADER + "s1,1,p,false,0.2,1\ns2,2,p,true,0.2,0\n")
    second = analyze(str(log), out, track_run=False, design=False, prescribe=False)
    assert not (out / "gate_replay.csv").exists()
    assert "gate_replay.csv" not in second.files
    assert (out / "notes.txt").read_text() == "mine"


def test_the_prescriptions_name_the_parameters_they_hold_fixed(tmp_path):
    """Every rated session a success: the rates' mean is fitted at 1 with no SE, so each
    of the 200 bootstrap draws holds it (the report listed 'rates.mean 0.98-0.98') and the
    flat rule read 'meeting 0.9 and 0.9' at 'the worst draw' as if its uncertainty were
    covered. The section now names what it held fixed."""
    from experiments.analyze import analyze

    rows = "".join(f"s{i},{i},k{i % 3},{str(i % 4 == 0).lower()},0.25,1\n" for i in range(240))
    log = tmp_path / "log"
    log.mkdir()
    (log / "sessions.csv").write_text(HEADER + rows)
    analyze(str(log), tmp_path / "out", track_run=False, design=False, prescribe=True)
    report = (tmp_path / "out" / "report.md").read_text()
    section = report.split("## Prescriptions for this deployment")[1]
    assert (
        "Held at their estimates, with no SE to draw from (the log does not pin them down), "
        "so no prescription covers their uncertainty: rates.mean, rates.concentration."
    ) in section


def test_the_rule_replay_says_it_reads_top_matches_and_names_procedures_shown_below(tmp_path):
    """A live flat run logs every procedure shown (``shown_keys``), the replay walks each
    procedure over the sessions it top-matched only. The report said each confidence walks
    over 'the sessions where its procedure was shown and rated', yet ``b``, shown in every
    session (below ``a`` when ``a`` is shown), has no row. The sentence now says top match
    and names ``b``."""
    from experiments.analyze.steps import rule_section
    from procmem_core.logs import Table, Text, check_log

    n = 40
    withheld = np.arange(n) % 4 == 0
    shown = np.where(withheld, 0, 1)
    cols = {
        "session_id": Text(np.arange(n), np.arange(n).astype(str)),
        "time": np.arange(n, dtype=float),
        "top_key": Text(np.zeros(n, dtype=int), np.array(["a"])),
        "withheld": withheld,
        "explore_rate": np.full(n, 0.25),
        "outcome": (np.arange(n) % 3 > 0).astype(float),
        "shown_keys": Text(shown, np.array(['["b"]', '["a", "b"]'])),
    }
    log = check_log(Table("sessions", "sessions.csv", n, cols))
    _, text, frame = rule_section(log, tmp_path, design=False)
    assert list(frame["key"]) == ["a"]
    assert "where its procedure was the top match, shown and rated" in text
    assert "1 procedure shown only below the top match (b), with no row here" in text
