"""``fail_prone_pvalues`` evaluates scipy's hypergeometric survival ufunc directly: its
p-values must equal ``scipy.stats.hypergeom.sf`` bit for bit, inside, below and above
the support, since the loop's recorded decisions (``FailProne.p_value``) hold them."""

from __future__ import annotations

import numpy as np
from scipy import stats

from procmem_core.graph import findings
from procmem_core.graph.findings import fail_prone_pvalues
from procmem_core.graph.ledger import Tally


def test_pvalues_equal_scipy_bit_for_bit_over_a_grid():
    checked = 0
    for total in (1, 2, 5, 17, 60, 333):
        for fails in sorted({0, 1, total // 3, total - 1, total}):
            n = np.arange(0, total + 1)
            for f in sorted({0, 1, 2, fails // 2, fails, fails + 1}):
                failures = np.minimum(np.full(n.shape, f), n)
                got = fail_prone_pvalues(n, failures, total, fails)
                want = stats.hypergeom.sf(failures - 1, total, fails, n)
                assert got.dtype == want.dtype
                assert np.array_equal(got, want), (total, fails, f)
                checked += n.size
    assert checked > 2000


def test_values_against_an_exact_tail_sum():
    # N = 10 runs, F = 4 failures, an item with n = 5 runs of which f = 4 failed:
    # P(X >= 4) = [C(4,4) C(6,1) + 0] / C(10,5) = 6 / 252
    p = fail_prone_pvalues(np.array([5]), np.array([4]), 10, 4)
    assert abs(p[0] - 6 / 252) < 1e-15
    assert fail_prone_pvalues(np.array([5]), np.array([0]), 10, 4)[0] == 1.0
    assert fail_prone_pvalues(np.array([3]), np.array([4]), 10, 4)[0] == 0.0


def test_arrays_of_totals_and_scalars_equal_scipy():
    rng = np.random.default_rng(np.random.SeedSequence(3))
    n = rng.binomial(60, 0.5, 500)
    f_in = rng.binomial(n, 0.3)
    f_all = f_in + rng.binomial(60 - n, 0.3)
    got = fail_prone_pvalues(n, f_in, 60, f_all)
    assert np.array_equal(got, stats.hypergeom.sf(f_in - 1, 60, f_all, n))
    one = fail_prone_pvalues(10, 7, 40, 12)
    assert one == stats.hypergeom.sf(6, 40, 12, 10) and np.ndim(one) == 0


def test_fail_prone_item_by_item_equals_the_array_path(monkeypatch):
    """A few items are tested one by one on Python numbers (``findings.SMALL_ITEMS``): the
    same flags, p-values, rates and order as the array path, bit for bit."""
    rng = np.random.default_rng(np.random.SeedSequence(29))
    compared = flagged = 0
    for _ in range(400):
        total = int(rng.integers(5, 200))
        wins = int(rng.binomial(total, rng.uniform(0.2, 0.95)))
        counts = {}
        for j in range(int(rng.integers(1, 12))):
            runs = int(rng.integers(0, total + 1))
            key = f"s{j}" if j % 2 else (f"s{j}", f"s{j + 1}")
            counts[key] = Tally(runs, int(rng.binomial(runs, rng.uniform(0.1, 1.0))))
        small = findings.fail_prone(counts, total, wins)
        monkeypatch.setattr(findings, "SMALL_ITEMS", 0)
        arrays = findings.fail_prone(counts, total, wins)
        monkeypatch.undo()
        assert small == arrays
        assert [x.p_value for x in small] == [x.p_value for x in arrays]
        compared += 1
        flagged += len(small)
    assert compared == 400 and flagged > 50
