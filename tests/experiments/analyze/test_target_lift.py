"""``--target-lift`` where the log's success rate leaves one direction only: the lift the
planner sizes for is the target where base + target is a rate, else its opposite, for a
negative target too; a target no success rate can hold in both directions is refused
naming the flag before anything is written."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.analyze.__main__ import main
from procmem_core.logs import Table, Text, check_log, estimate_lifts
from procmem_core.logs.prescribe import explore_rate

HEADER = "session_id,time,top_key,withheld,explore_rate,outcome\n"


def _low_rate_log(n: int = 200, successes: int = 30) -> Table:
    """No withheld session; a success rate of 0.15 (30 of 200)."""
    cols = {
        "session_id": Text.encode(np.array([f"s{i}" for i in range(n)], dtype=object)),
        "time": np.arange(n, dtype=float),
        "top_key": Text.encode(np.array(["p"] * n, dtype=object)),
        "withheld": np.zeros(n, dtype=bool),
        "explore_rate": np.full(n, 0.1),
        "outcome": (np.arange(n) < successes).astype(float),
    }
    return Table("sessions", "sessions.csv", n, cols)


def test_a_negative_target_at_a_low_rate_is_sized_upwards():
    """At a success rate of 0.15 a lift of -0.3 cannot happen; the planner stopped with
    "lift=-0.3 is not allowed" (a field the command has no flag for) after --out was
    made. It now sizes for +0.3, the direction the rate allows, as it sized a positive
    target past 1 downwards: the same answer as --target-lift 0.3."""
    s = check_log(_low_rate_log()).sessions
    down = estimate_lifts(s, target_lift=-0.3).plan
    up = estimate_lifts(s, target_lift=0.3).plan
    assert down["base"] == pytest.approx(0.15)
    assert down == up and down["target_lift"] == 0.3


def test_the_explore_rate_prescription_sizes_a_negative_target_the_same_way():
    """The prescription's planner at draws of the base below the target's size: the same
    sessions for -0.3 as for +0.3 (it stopped with the same 'lift=-0.3')."""
    bases = np.array([0.12, 0.15, 0.2])
    down = explore_rate(bases, -0.3, 200)
    up = explore_rate(bases, 0.3, 200)
    assert down.details["worst_sessions"] == up.details["worst_sessions"]
    assert down.setting == up.setting


def test_a_target_larger_than_a_half_is_refused_before_anything_is_written(
    tmp_path, unmade_tracking_store, capsys
):
    """0.6 fits neither way at a success rate of 0.5 (nor at any between 0.4 and 0.6,
    which the bootstrap draws may reach): it was refused as 'lift=-0.6' (or 'lift=0.6')
    after lifts.csv, rule_replay.csv and world.json were written."""
    log = tmp_path / "log"
    log.mkdir()
    (log / "sessions.csv").write_text(HEADER + "s1,1,p,false,0.2,1\ns2,2,p,false,0.2,0\n")
    code = main([str(log), "--out", str(tmp_path / "out"), "--target-lift", "0.6"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("python -m experiments.analyze: --target-lift=0.6 is not allowed: ")
    assert "at most 0.5 in size" in err
    assert not (tmp_path / "out").exists() and not unmade_tracking_store.exists()
