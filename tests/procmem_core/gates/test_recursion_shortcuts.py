"""The design's sixth speed pass (issue 28, item 4) skips or reorders work whose result is
known: each shortcut here gives what the plain computation gives, bit for bit, or the same
decision (the frontier's pruned cap scans)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from procmem_core.gates import CalibratedSPRTGate, TwoSampleGate, lattice, mixture, twolattice
from procmem_core.gates.cap_scan import DOOM_SLACK, cap_scan, doomed
from procmem_core.gates.tolerance import MARGIN, at_least, at_most
from procmem_core.gates.twostats import accept_floor, drop_statistics, step_statistics
from procmem_core.gates.worst import P0Range

GRID = P0Range(0.3, 0.95).grid(13)


@pytest.mark.parametrize("ledger, concurrent", [(20, True), (0, True), (30, False)])
@pytest.mark.parametrize("shrink", [None, 4.0])
def test_step_statistics_are_drop_statistics_bit_for_bit(ledger, concurrent, shrink):
    """Denominators per total successes, lambda shared between accept statistics: the
    values of ``drop_statistics`` on the same cells, and the floor is their least."""
    step_statistics(ledger, concurrent, 5, 0.15, 1.0 if shrink is None else None)  # shared
    for k in (0, 1, 3, 17, 40):
        n = ledger + (k if concurrent else 0)
        a, b = np.arange(k + 1)[:, None], np.arange(n + 1)[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            plain = drop_statistics(k, a, b, n, 0.15, shrink)
        fast = step_statistics(ledger, concurrent, k, 0.15, shrink)
        for x, y in zip(fast, plain, strict=True):
            assert np.shape(x) == np.shape(y) and np.array_equal(x, y)
        assert accept_floor(ledger, concurrent, k, 0.15, shrink) == plain[1].min()


def test_doomed_stops_exactly_where_no_later_cap_can_qualify():
    early, accepted = np.array([0.01, 0.04]), np.array([0.1, 0.15])
    assert not doomed(early, accepted, 0.05, 0.8)
    assert doomed(np.array([0.01, 0.05]), accepted, 0.05, 0.8)  # at alpha: at_most fails
    edge = 1.0 - 0.8 * (1.0 + MARGIN)
    assert not doomed(early, np.array([0.1, edge + DOOM_SLACK]), 0.05, 0.8)
    assert doomed(early, np.array([0.1, edge + 2 * DOOM_SLACK]), 0.05, 0.8)


@pytest.mark.parametrize("accept_level", [-1.0, -1.6, -2.2])  # stops at cap 5, 25; none
def test_a_pruned_cap_scan_keeps_every_cap_the_full_scan_keeps(accept_level):
    """With a power floor the scan stops once no later cap can keep it; every cap before
    has the full scan's figures bit for bit, so the frontier keeps the same caps."""
    gate = TwoSampleGate(ledger=20, max_runs=80, accept_level=accept_level, final_level=0.0,
                         p0_low=0.3, p0_high=0.95, accept_shrink=4.0, min_drop=0.25)  # fmt: skip
    full = cap_scan(gate, GRID, 0.25, 0.05)
    floor = 1.0 - 0.2 + 0.002
    fast = cap_scan(gate, GRID, 0.25, 0.05, power_floor=floor)

    def kept(res):
        return {k for k in range(gate.min_runs, 81) if at_most(res.false_revert[k], 0.05)
                and at_most(res.early[k], 0.05) and at_least(res.power[k], floor)}  # fmt: skip

    assert kept(fast) == kept(full)
    done = ~np.isnan(fast.final)
    for field in dataclasses.fields(fast):
        x, y = getattr(fast, field.name), getattr(full, field.name)
        np.testing.assert_array_equal(x[done], y[done])
    stopped = np.flatnonzero(~done[gate.min_runs :]).size > 0
    assert stopped == (not kept(full))  # looser levels stop early; -2.2 keeps 32 caps


@pytest.mark.parametrize("design, ledger", [("concurrent", 20), ("fixed", 30)])
def test_trials_find_reverted_cells_without_tables_bit_for_bit(design, ledger):
    """``RevertSteps.reverted`` (accept boundary out of reach) gives the recursion the
    table-driven one gives; so does an accept boundary in reach (the tables are read)."""
    for accept_level in (-60.0, -2.0):
        gate = TwoSampleGate(design=design, ledger=ledger, max_runs=60, revert_level=2.6,
                             accept_level=accept_level, final_level=0.0, p0_low=0.3,
                             p0_high=0.95)  # fmt: skip
        lat = gate.lattice
        lazy = gate.tables(lat, at_cap=False, lazy=True)
        if accept_level < -50:
            assert lazy.reverted(30, np.ones((31, lat.prior_runs(30) + 1))) is not None
        fast = twolattice.half_masses(lat, lazy)
        plain = twolattice.half_masses(lat, gate.tables(lat, at_cap=False))
        for part in ("revert", "accept"):
            for x, y in zip(getattr(fast, part), getattr(plain, part), strict=True):
                for u, v in zip(x, y, strict=True):
                    assert u.dtype == v.dtype and np.array_equal(u, v)
        assert np.array_equal(fast.residual, plain.residual)


@pytest.mark.parametrize("accept_level", [-60.0, -2.0])
def test_the_calibrated_sprts_run_by_run_tables_are_its_verdict_table(accept_level):
    gate = CalibratedSPRTGate(ledger=30, max_runs=60, p0_low=0.3, p0_high=0.95, revert_level=2.5,
                              accept_level=accept_level, final_level=3.0)  # fmt: skip
    _, hats = gate.ledger_estimates(30)
    table = lattice.verdict_table(gate.rule, hats, 60)
    rows = gate.ledger_tables(30)
    for n in range(61):
        assert np.array_equal(rows[n], table[:, n, : n + 1])
    a = mixture.ledger_masses(rows, 30)
    b = mixture.ledger_masses(table, 30)
    assert np.array_equal(a.residual, b.residual)
    for x, y in zip(a.revert + a.accept, b.revert + b.accept, strict=True):
        assert all(np.array_equal(u, v) for u, v in zip(x, y, strict=True))


def test_unscaled_ledger_masses_are_the_halved_ones(monkeypatch):
    gate = CalibratedSPRTGate(ledger=30, max_runs=60, p0_low=0.3, p0_high=0.95,
                              revert_level=2.5, final_level=3.0)  # fmt: skip
    unscaled = mixture.ledger_masses(gate.ledger_tables(30), 30)
    monkeypatch.setattr(mixture, "UNSCALED_TOP", 0)  # every run halved, as before
    halved = mixture.ledger_masses(gate.ledger_tables(30), 30)
    assert np.array_equal(unscaled.residual, halved.residual)
    for x, y in zip(unscaled.revert + unscaled.accept, halved.revert + halved.accept,
                    strict=True):  # fmt: skip
        assert all(np.array_equal(u, v) for u, v in zip(x, y, strict=True))


def test_a_design_gate_and_its_certified_twin_share_one_recursion():
    """At the design ledger ``recalibrate`` does not change the levels, so the gate and the
    one its calibration certified (``recalibrate=False``) share a key; at another ledger
    they do not (the first recalibrates)."""
    gate = TwoSampleGate(ledger=20, max_runs=40, revert_level=2.6, final_level=1.0)
    twin = dataclasses.replace(gate, recalibrate=False)
    assert gate.recursion_key(20) == twin.recursion_key(20)
    assert gate.recursion_key(30) != twin.recursion_key(30)
    assert gate.half_masses(20) is twin.half_masses(20)


def test_a_whole_cap_scan_leaves_the_calibrations_trial_bit_for_bit():
    """A cap scan that walks every step keeps its uncapped recursion where the calibration
    of the same parameters looks for its trial: what ``half_masses`` gives, bit for bit."""
    from procmem_core.gates.two_sample import UNCAPPED

    gate = TwoSampleGate(ledger=20, max_runs=50, accept_level=-1.8, revert_level=2.9,
                         final_level=0.0, accept_shrink=4.0, p0_low=0.3, p0_high=0.95)  # fmt: skip
    cap_scan(gate, GRID, 0.15, 0.05)
    kept = UNCAPPED.store[(gate.key_at(20), 2.9)]
    lat = gate.lattice
    plain = twolattice.half_masses(lat, gate.tables(lat, at_cap=False))
    assert np.array_equal(kept.residual, plain.residual)
    for x, y in zip(kept.revert + kept.accept, plain.revert + plain.accept, strict=True):
        assert all(u.dtype == v.dtype and np.array_equal(u, v) for u, v in zip(x, y, strict=True))
