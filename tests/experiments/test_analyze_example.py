"""The committed example log is what its documented command writes, and it reads back
with the store's verdicts replayed exactly by the seed's SPRT."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from experiments.analyze.example import write_example
from experiments.analyze.read import read_log
from experiments.analyze.steps import default_gates
from procmem_core.logs.replay import agreement, gate_replay

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "session_log"


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
