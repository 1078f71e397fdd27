"""The committed example log is what its documented command writes, and it reads back
with the store's verdicts replayed exactly by the seed's SPRT."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from experiments.analyze.example import write_example
from experiments.analyze.read import read_log
from experiments.analyze.steps import default_gates
from procmem_core.logs.replay import agreement, gate_replay

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "session_log"


def test_committed_example_is_what_the_command_writes(tmp_path):
    write_example(tmp_path)
    for name in ("sessions.csv", "runs.csv", "revisions.csv"):
        assert (tmp_path / name).read_bytes() == (EXAMPLE / name).read_bytes(), name


def test_example_reads_and_the_sprt_replays_the_stores_verdicts():
    log = read_log(EXAMPLE)
    assert log.sessions.n == 4000 and log.sessions.user is not None
    gates = {"sprt": default_gates()["sprt"]}
    counts = agreement(gate_replay(log, gates), gates)
    assert counts["sprt_agree"] == counts["with_logged_verdict"] == 4
    verdicts = pd.read_csv(EXAMPLE / "revisions.csv")["verdict"]
    assert set(verdicts) == {"accepted", "reverted"}


def test_design_explore_reads_a_fitted_world(tmp_path, capsys):
    import json

    from experiments.design.__main__ import main as design
    from experiments.design.explore import world_base
    from procmem_core.ab.planner import Design, plan, plan_rate

    world = {"schema_version": 1, "rates": {"mean": {"value": 0.6, "se": 0.03},
                       "concentration": {"value": 20.0, "se": 4.0}}}  # fmt: skip
    path = tmp_path / "world.json"
    path.write_text(json.dumps(world))
    base, sentence = world_base(str(path), 0.1)
    assert 0.45 < base < 0.6 and "worst of 200 draws" in sentence
    assert design(["explore", "--lift", "0.1", "--world", str(path), "--horizon", "3000"]) == 0
    out = capsys.readouterr().out
    pick = plan(Design(0.1, base), horizon=3000).pick
    assert f"Use explore rate {pick.explore_rate:g}" in out
    # at the estimate alone fewer sessions would do: the fit's uncertainty costs sessions
    assert plan_rate(Design(0.1, 0.6), 0.1).sessions < plan_rate(Design(0.1, base), 0.1).sessions
    assert design(["explore", "--lift", "0.1"]) == 2  # neither --base nor --world
    path.write_text(json.dumps({"schema_version": 1, "lifts": {}}))
    assert design(["explore", "--lift", "0.1", "--world", str(path)]) == 2
    assert "rates.mean" in capsys.readouterr().err
