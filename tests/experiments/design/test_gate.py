"""``python -m experiments.design gate``: the answer on the command line, bad input in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.design.__main__ import main

ROOT = Path(__file__).resolve().parents[3]
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
        (["--ledger-sizes", "20", "-1"], "--ledger-sizes"),
        (["--ledger-sizes", "20", "20"], "--ledger-sizes"),
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


def test_prints_the_chosen_gates_worst_cases_against_the_ledger_size(capsys):
    """``--ledger-sizes``: the chosen two-sample gate recalibrated per size, each false
    revert within alpha, the figures those of ``ledger_profile``."""
    from procmem_core.gates import ledger_profile, make_gate
    from procmem_core.gates.design import design_gate
    from procmem_core.gates.question import DesignQuestion

    assert main(["gate", *EASY, "--ledger-sizes", "40", "0", "10"]) == 0
    out = capsys.readouterr().out
    assert "designed for 10 runs, levels recalibrated per size" in out
    rows = out.split("levels recalibrated per size")[1].splitlines()[2:5]
    got = [r.split() for r in rows]
    assert [int(r[0]) for r in got] == [0, 10, 40]
    q = DesignQuestion(alpha=0.1, beta=0.3, min_drop=0.3, ledger=10, concurrent=0.5,
                       p0_low=0.4, p0_high=0.9, max_runs=40)  # fmt: skip
    best = design_gate(q).feasible[0]
    want = ledger_profile(make_gate(**best.config), (0, 10, 40))
    for r, w in zip(got, want, strict=True):
        assert float(r[1]) == round(w.false_revert, 4) <= 0.1
        assert float(r[2]) == round(w.false_revert_kept, 4)
        assert float(r[3]) == round(w.power, 3)


def test_the_help_states_the_default_objective():
    """The subcommand's help said "smallest max runs per gate family", the objective
    before issue 28; the pick now minimises expected pairs when nothing changed."""
    from experiments.design import gate

    assert "smallest max runs" not in gate.HELP
    assert "fewest expected pairs when nothing changed (--objective)" in gate.HELP
