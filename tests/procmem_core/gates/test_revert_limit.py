"""A calibration trial stops once its early reverts fail the target (``revert_limit``), and
the recursions' reused buffers (``twolattice.Walk``, ``mixture.ledger_masses``) give the
masses of the plain recursion bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from procmem_core.gates import CalibratedSPRTGate, TwoSampleGate, mixture, twolattice
from procmem_core.gates.calibrate import NullPass
from procmem_core.gates.revert_limit import SLACK, RevertLimit
from procmem_core.gates.worst import P0Range

GRID = P0Range(0.3, 0.95).grid(13)


def two_sample(design: str, ledger: int) -> TwoSampleGate:
    return TwoSampleGate(design=design, ledger=ledger, max_runs=60, p0_low=0.3, p0_high=0.95,
                         accept_level=-2.0, accept_shrink=4.0, revert_level=2.6,
                         final_level=0.0)  # fmt: skip


def early_reverts(gate: TwoSampleGate) -> np.ndarray:
    """P(revert before the cap | no change) at GRID, from the full recursion."""
    lat = gate.lattice
    masses = twolattice.half_masses(lat, gate.tables(lat, at_cap=False))
    return twolattice.evaluate(lat, masses, GRID, GRID).revert


@pytest.mark.parametrize("design, ledger", [("concurrent", 20), ("fixed", 30), ("concurrent", 0)])
def test_the_limit_adds_the_early_reverts_of_the_full_recursion(design, ledger):
    gate = two_sample(design, ledger)
    lat = gate.lattice
    watch = RevertLimit(GRID, np.inf, lat.observations)
    assert twolattice.half_masses(lat, gate.tables(lat, at_cap=False), watch) is not None
    full = early_reverts(gate)
    assert full.max() > 0.01
    np.testing.assert_allclose(watch.spent, full, rtol=1e-13, atol=0)


@pytest.mark.parametrize("design, ledger", [("concurrent", 20), ("fixed", 30)])
def test_a_recursion_stops_only_when_its_early_reverts_pass_the_limit(design, ledger):
    gate = two_sample(design, ledger)
    lat = gate.lattice
    worst = early_reverts(gate).max()
    below = RevertLimit(GRID, worst * (1.0 - 10 * SLACK), lat.observations)
    assert twolattice.half_masses(lat, gate.tables(lat, at_cap=False, lazy=True), below) is None
    assert below.over and below.spent.max() > worst * (1.0 - 10 * SLACK)
    above = RevertLimit(GRID, worst * (1.0 + 10 * SLACK), lat.observations)
    kept = twolattice.half_masses(lat, gate.tables(lat, at_cap=False, lazy=True), above)
    assert kept is not None and not above.over


def test_a_stopped_pass_never_meets_a_target():
    stopped = NullPass.stopped(GRID, np.full(GRID.size, 0.001))
    assert not stopped.complete and not stopped.within(0.05)
    full = NullPass(GRID, np.full(GRID.size, 0.001), np.zeros(0), np.zeros(0), np.zeros(0), 0)
    assert full.within(0.05) and not full.within(0.001)


def test_the_ledger_mixture_stops_at_the_same_sum():
    gate = CalibratedSPRTGate(ledger=30, max_runs=60, p0_low=0.3, p0_high=0.95,
                              revert_level=2.0, final_level=9.0)  # fmt: skip
    hats = np.asarray(gate.estimate_p0(np.arange(31), 30), dtype=float)
    runs = np.arange(61)
    every = gate.statistic(runs[None, None, :], runs[None, :, None], hats[:, None, None])
    rows = mixture.Steps(lambda n: gate.codes_at(every[:, n, : n + 1], n, None), 61)
    watch = RevertLimit(GRID, np.inf, 90)
    masses = mixture.ledger_masses(rows, 30, watch)
    full = mixture.ledger_curve(masses, GRID, GRID).revert
    assert full.max() > 0.01
    np.testing.assert_allclose(watch.spent, full, rtol=1e-13, atol=0)
    assert mixture.ledger_masses(rows, 30, RevertLimit(GRID, full.max() * 0.999, 90)) is None


def plain_walk(lat: twolattice.TwoSampleLattice, steps: int) -> np.ndarray:
    """The recursion as written before the buffers: each term halved, a fresh array a step."""
    mass = stats.binom.pmf(np.arange(lat.ledger + 1), lat.ledger, 0.5)[None, :]
    for k in range(1, steps + 1):
        nxt = np.zeros((k + 1, mass.shape[1]))
        nxt[:k] = 0.5 * mass
        nxt[1:] += 0.5 * mass
        if lat.concurrent:
            both = np.zeros((k + 1, mass.shape[1] + 1))
            both[:, :-1] = 0.5 * nxt
            both[:, 1:] += 0.5 * nxt
            nxt = both
        mass = nxt
    return mass


@pytest.mark.parametrize("concurrent, ledger", [(True, 20), (False, 15), (True, 0)])
def test_the_walk_gives_the_plain_recursion_bit_for_bit(concurrent, ledger):
    lat = twolattice.TwoSampleLattice(ledger, concurrent, 40)
    walk = twolattice.Walk(lat)
    for _ in range(40):
        walk.step()
    mass = walk.masses()
    assert np.array_equal(mass, plain_walk(lat, 40))
    assert mass.sum() == pytest.approx(1.0, rel=1e-12)
