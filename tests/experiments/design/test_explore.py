"""``python -m experiments.design explore``: the planner's table and answer on the command
line, and bad options refused in one line naming the option."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from experiments.design.__main__ import main
from procmem_core.ab.planner import Design, plan

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())


def test_the_issues_example_with_a_horizon(capsys):
    argv = ["explore", "--lift", "0.05", "--base", "0.6", "--power", "0.8", "--alpha", "0.05"]
    assert main([*argv, "--horizon", "20000"]) == 0
    out = capsys.readouterr().out
    want = plan(Design(0.05, 0.6), horizon=20_000)
    assert f"{want.pick.sessions:,}" == "15,822"
    assert "Use explore rate 0.05: 15,822 sessions (791 withheld), 39.6 successes forgone" in out
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [r[0] for r in rows] == ["0.01", "0.02", "0.05", "0.1", "0.2", "0.3", "0.5"]
    assert rows[3][1] == "8,329" and rows[3][4] == "0.991"  # sessions at 0.1, power at 20,000


def test_sequential_asks_for_more_sessions_and_small_arms_go_exact(capsys):
    assert main(["explore", "--lift", "0.05", "--base", "0.6", "--sequential"]) == 0
    seq = capsys.readouterr().out
    assert "confidence sequence" in seq and "15,949" in seq  # at 0.1, against 8,329 fixed-n
    assert main(["explore", "--lift", "0.3", "--base", "0.5", "--rates", "0.1,0.3"]) == 0
    small = capsys.readouterr().out
    assert small.count("exact binomial") == 2 and " 194 " in small


def test_nothing_reaches_the_power_within_a_short_horizon(capsys):
    assert main(["explore", "--lift", "0.05", "--base", "0.6", "--horizon", "1000"]) == 0
    assert (
        "No listed explore rate reaches power 0.8 within 1,000 sessions" in capsys.readouterr().out
    )


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (["--rates", "0,0.1"], "explore_rate=0.0"),
        (["--rates", "1"], "explore_rate=1.0"),
        (["--alpha", "1.5"], "alpha=1.5"),
        (["--power", "0"], "power=0.0"),
        (["--horizon", "1"], "horizon=1"),
        (["--rates", "a,b"], "--rates='a,b'"),
    ],
)
def test_bad_options_are_one_line_naming_the_option(capsys, extra, field):
    argv = ["explore", "--lift", "0.05", "--base", "0.6", *extra]
    if extra[0] == "--rates" and extra[1] == "a,b":
        with pytest.raises(SystemExit):  # argparse refuses the type itself
            main(argv)
        assert "invalid _rates value" in capsys.readouterr().err
        return
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and field in err


def test_the_command_runs_as_a_module():
    done = subprocess.run(
        [sys.executable, "-m", "experiments.design", "explore", "--lift", "0.1", "--base", "0.5"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0 and "Use explore rate 0.01" in done.stdout
