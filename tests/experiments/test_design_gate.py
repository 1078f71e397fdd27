"""``python -m experiments.design gate``: the answer on the command line, bad input in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.design.__main__ import main

ROOT = Path(__file__).resolve().parents[2]
EASY = ["--alpha", "0.1", "--beta", "0.3", "--min-drop", "0.3", "--ledger", "10",
        "--concurrent", "0.5", "--p0-range", "0.4", "0.9", "--max-runs", "40"]  # fmt: skip


def test_prints_one_line_per_family_and_a_gate_to_use(capsys):
    assert main(["gate", *EASY]) == 0
    out = capsys.readouterr().out
    for family in ("sprt (fixed)", "calibrated_sprt (fixed)", "two_sample (concurrent)",
                   "discordant_sprt (concurrent)", "eprocess (concurrent)"):  # fmt: skip
        assert family in out
    assert "use " in out and "make_gate(**{'name':" in out
    assert "targets: false revert <= 0.1, power >= 0.7" in out


def test_json_output_rebuilds_gates(capsys):
    assert main(["gate", *EASY, "--json"]) == 0
    answers = json.loads(capsys.readouterr().out)
    assert len(answers) == 6
    assert all({"family", "feasible", "max_runs", "config", "runs_null"} <= set(a) for a in answers)


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--alpha", "0.6", "--beta", "0.5"], "--alpha"),
        (["--min-drop", "1.5"], "--min-drop"),
        (["--min-drop", "0.4"], "--min-drop"),
        (["--p0-range", "0.9", "0.3"], "--p0-range"),
        (["--p0-range", "0.0", "0.9"], "--p0-range"),
        (["--concurrent", "1.0"], "--concurrent"),
        (["--max-runs", "2"], "--max-runs"),
        (["--ledger", "-3"], "--ledger"),
    ],
)
def test_bad_input_is_one_line_naming_the_option_exit_2(args, option):
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.design", "gate", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and option in lines[0] and proc.stdout == ""


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--objective", "fastest"], "null_runs, max_runs, mixed"),
        (["--objective", "mixed", "1.5"], "[0, 1]"),
        (["--objective", "mixed", "-0.2"], "[0, 1]"),
        (["--objective", "mixed"], "mixed WEIGHT"),
        (["--objective", "mixed", "half"], "mixed WEIGHT"),
        (["--objective", "null_runs", "0.5"], "takes no weight"),
    ],
)
def test_bad_objective_is_one_line_naming_the_option_exit_2(args, fragment, capsys):
    assert main(["gate", *args]) == 2
    err = capsys.readouterr()
    lines = err.err.strip().splitlines()
    assert len(lines) == 1 and "--objective" in lines[0] and fragment in lines[0]
    assert err.out == ""


def test_prints_the_frontier_and_the_wald_wolfowitz_bound(capsys):
    assert main(["gate", *EASY]) == 0
    out = capsys.readouterr().out
    assert "frontier, two_sample (concurrent)" in out
    assert "Wald-Wolfowitz bound when nothing changed, at the achieved error rates" in out
    assert "chosen for the objective null_runs; sessions (revision + prior runs, share 0.5" in out
    rows = out.split("frontier, two_sample (concurrent)")[1].splitlines()[2:]
    caps = [int(r.split()[0]) for r in rows if r.strip() and r.split()[0].isdigit()]
    assert caps == sorted(caps) and len(caps) >= 2 and caps[-1] == 40
