"""``collector_paused``: the loop runs with Python's cyclic collector off and gives it back
as it found it, nested or after an error; the worlds it runs leave no garbage cycles."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from simulators.scenarios.loop import LoopScenario, collector_paused


def test_the_collector_is_off_inside_and_restored_after():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block leaves it as the outer one set it
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # a collector that was off stays off
    finally:
        gc.enable()


WORLD_GARBAGE = """
import gc
import numpy as np
from simulators.scenarios.loop import LoopScenario, collector_paused
from simulators.scenarios.loop_world import LoopWorld
sc = LoopScenario(sessions=300, replications=1, revise_every=20, evolve_every=2)
gc.collect()
with collector_paused():
    world = LoopWorld(sc, np.random.default_rng(3))
    for t in range(sc.sessions):
        world.session(t)
    assert world.revisions and world.store.gate_decisions()  # the engine did work
    del world
    print(gc.collect())
"""


def test_a_run_restores_the_collector_and_its_worlds_leave_no_cycles():
    """The garbage count is taken in a fresh interpreter: the collector is global, so in a
    test worker another thread's cycles (xdist's channel) would count as the world's."""
    sc = LoopScenario(sessions=300, replications=1, revise_every=20, evolve_every=2)
    sc.run(3)
    assert gc.isenabled()
    done = subprocess.run(
        [sys.executable, "-c", WORLD_GARBAGE], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "0"  # nothing only the collector could free
