"""The sample-ratio test of a procedure whose logged explore rate changed during the log:
the withheld count is Poisson-binomial (one Bernoulli per session at its logged rate), and
its p-value is the exact doubled tail of that law, checked here against the law built
session by session in the test. The normal approximation it replaced flagged honest
procedures with few expected withheld sessions far more often than 0.001, and missed a
session withheld at a logged rate of 0 (impossible under the logged rates)."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.ab import SRM_ALPHA, srm_p_value_rates
from procmem_core.logs import Table, Text, check_log, estimate_lifts


def _pmf(rates: np.ndarray) -> np.ndarray:
    """The Poisson-binomial law, one session at a time (the reference)."""
    pmf = np.array([1.0])
    for r in rates:
        pmf = np.convolve(pmf, [1.0 - r, r])
    return pmf


def _exact(withheld: int, rates: np.ndarray) -> float:
    pmf = _pmf(rates)
    return min(1.0, 2.0 * min(pmf[: withheld + 1].sum(), pmf[withheld:].sum()))


def _log(rates: np.ndarray, withheld: np.ndarray) -> Table:
    n = rates.size
    return Table("sessions", "sessions.csv", n, {
        "session_id": Text(np.arange(n), np.arange(n).astype(str)),
        "time": np.arange(n, dtype=float),
        "top_key": Text(np.zeros(n, dtype=np.int64), np.array(["p"], dtype=object)),
        "withheld": withheld,
        "explore_rate": rates,
        "outcome": (np.arange(n) % 3 == 0).astype(float),
    })  # fmt: skip


def test_a_changed_rate_with_few_withheld_sessions_is_tested_exactly():
    """40 sessions at 0.01 then 40 at 0.03, 6 withheld: the exact p is 0.0106 (not a
    mismatch at 0.001); the normal test read 0.00043 and flagged it."""
    rates = np.repeat([0.01, 0.03], 40)
    withheld = np.zeros(80, dtype=bool)
    withheld[[3, 17, 45, 50, 61, 77]] = True
    lifts = estimate_lifts(check_log(_log(rates, withheld)).sessions).columns
    assert lifts["srm_p"][0] == pytest.approx(_exact(6, rates), rel=1e-9)
    assert lifts["srm_p"][0] == pytest.approx(0.010613, abs=1e-6)
    assert not lifts["srm_flag"][0]


def test_a_session_withheld_at_a_logged_rate_of_zero_is_a_mismatch():
    """100 sessions at 0.1 (10 withheld) and 50 logged at rate 0, 5 of them withheld: a
    withheld session at rate 0 cannot happen under the logged rates (p = 0); the normal
    test read 0.096."""
    rates = np.r_[np.full(100, 0.1), np.zeros(50)]
    withheld = np.zeros(150, dtype=bool)
    withheld[np.r_[np.arange(0, 100, 10), np.arange(100, 105)]] = True
    lifts = estimate_lifts(check_log(_log(rates, withheld)).sessions).columns
    assert lifts["srm_p"][0] == 0.0 and lifts["srm_flag"][0]
    assert not lifts["effect"][0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_exact_p_value_matches_the_law_built_session_by_session(seed):
    rng = np.random.default_rng(seed)
    rates = rng.choice([0.0, 0.02, 0.05, 0.1, 0.3, 0.55], size=int(rng.integers(20, 120)))
    law = _pmf(rates)
    for w in range(rates.size + 1):
        ref = _exact(w, rates)
        assert srm_p_value_rates(w, rates) == pytest.approx(ref, rel=1e-9, abs=1e-300)
    # the constant-rate case is the exact binomial test
    assert law.size == rates.size + 1


def test_the_exact_test_keeps_its_level_where_the_normal_one_did_not():
    """No mismatch, 80 sessions at 0.01 then 0.03 (1.6 withheld expected): the exact
    chance of a flag, summed over the law, is at most SRM_ALPHA (the normal test's was
    0.0053)."""
    rates = np.repeat([0.01, 0.03], 40)
    law = _pmf(rates)
    p = np.array([srm_p_value_rates(w, rates) for w in range(81)])
    assert law[p < SRM_ALPHA].sum() <= SRM_ALPHA
