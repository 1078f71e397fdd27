"""The null tables by total successes (issue 28, item 4, fourth pass): one ``np.bincount``
for every row (``mixture.by_row``) gives the sums ``np.add.at`` gave row by row, to the
last bit, so every figure built on them is unchanged."""

from __future__ import annotations

import numpy as np

from procmem_core.gates import TwoSampleGate
from procmem_core.gates.mixture import by_row


def test_by_row_adds_each_bin_in_the_order_add_at_does():
    rng = np.random.default_rng(np.random.SeedSequence(28))
    sizes = [0, 5, 40, 0, 300]
    index = [rng.integers(0, 30, size) for size in sizes]
    # masses over many magnitudes: a different order would change the last bits
    mass = [rng.random(size) * 10.0 ** rng.integers(-12, 1, size) for size in sizes]
    expected = np.zeros((len(sizes), 30))
    for row, (x, m) in enumerate(zip(index, mass, strict=True)):
        np.add.at(expected[row], x, m)
    assert np.array_equal(by_row(index, mass, 30), expected)


def test_the_two_sample_null_tables_match_add_at_row_by_row():
    gate = TwoSampleGate(ledger=20, max_runs=80, accept_level=-1.5)
    lat = gate.lattice
    masses = gate.half_masses(gate.ledger)
    tables = masses.null_tables(lat)
    steps = len(masses.revert)
    n = tables["N"]
    by_s, by_f = np.zeros_like(tables["S"]), np.zeros_like(tables["F"])
    for row, (i, j, m) in enumerate((*masses.revert, *masses.accept)):
        np.add.at(by_s[row], i + j, m)
        np.add.at(by_f[row], n[row % steps] - i - j, m)
    assert np.count_nonzero(by_s) > 100
    assert np.array_equal(tables["S"], by_s) and np.array_equal(tables["F"], by_f)
    # every decided mass is in the tables once: the revert and accept rows sum to them
    decided = sum(m.sum() for _, _, m in (*masses.revert, *masses.accept))
    assert np.isclose(tables["S"].sum(), decided, rtol=1e-12)
