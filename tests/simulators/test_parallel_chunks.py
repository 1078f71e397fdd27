"""One big job across cores: the same numbers on 1 and 2 worker processes.

Each scenario below runs in several chunks (the loop: one replication each, its whole
object engine pickled back from the worker); on 2 workers the chunks run in a pool of
fresh processes and are gathered in chunk order, so every metric and every table must
be equal exactly to the one-process run (the chunks draw from their own spawned seeds).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from procmem_core.errors import ParameterError
from simulators import ConfidenceScenario, ExploreScenario, GateScenario, ProcedureFateScenario
from simulators.parallel import CHUNK_WORKERS, chunk_workers, map_chunks
from simulators.replication import chunks
from simulators.scenarios.loop import LoopScenario

SCENARIOS = {
    "fate": ProcedureFateScenario(replications=3_000, chunk_size=1_000),
    "confidence": ConfidenceScenario(replications=3_000, chunk_size=1_000, sessions=12),
    "gate": GateScenario(replications=3_000, chunk_size=1_000, ledger_size=20),
    "explore": ExploreScenario(replications=24, chunk_size=8, sessions=200),
    "loop": LoopScenario(replications=4, sessions=80, evolve_every=3, revise_every=20),
}


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_two_workers_give_the_numbers_of_one(name):
    scenario = SCENARIOS[name]
    one = scenario.run(7)
    with chunk_workers(2):
        two = scenario.run(7)
    assert CHUNK_WORKERS.get() == 1  # the setting ends with the block
    assert sorted(one.metrics) == sorted(two.metrics)
    assert all(same(one.metrics[k], two.metrics[k]) for k in one.metrics)
    assert sorted(one.tables) == sorted(two.tables)
    for key, table in one.tables.items():
        pd.testing.assert_frame_equal(table, two.tables[key])


def _first_draw(chunk) -> tuple[int, float]:
    return chunk.index, float(chunk.rng.random())


def test_chunks_on_workers_draw_the_streams_of_replication_chunks():
    with chunk_workers(2):
        mapped = map_chunks(_first_draw, 11, 10, 3)
    direct = [(c.index, float(c.rng.random())) for c in chunks(11, 10, 3)]
    assert mapped == direct and len(direct) == 4


def test_workers_must_be_a_positive_integer():
    with pytest.raises(ParameterError, match="workers"), chunk_workers(0):
        pass
