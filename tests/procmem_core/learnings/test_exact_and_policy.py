"""The exact support arithmetic against references that do not call it (scipy's negative
binomial and binomial, a convolution of geometric laws, occupancy by enumeration), and
the review policy's bar."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from procmem_core.errors import ParameterError
from procmem_core.learnings import (
    Learning,
    ReviewPolicy,
    expected_distinct_ids,
    first_reach,
    reach_probability,
)


@pytest.mark.parametrize(("rate", "k", "sessions"), [(0.2, 3, 60), (0.05, 5, 200), (0.9, 1, 5)])
def test_with_every_supporter_new_it_is_the_negative_binomial(rate, k, sessions):
    t = np.arange(1, sessions + 1)
    want = stats.nbinom.pmf(t - k, k, rate)  # failures before the k-th success
    np.testing.assert_allclose(first_reach(rate, k, sessions), want, rtol=1e-10, atol=1e-15)
    assert reach_probability(rate, k, sessions) == pytest.approx(
        stats.binom.sf(k - 1, sessions, rate), rel=1e-10
    )


def geometric_sum_pmf(rates: list[float], horizon: int) -> np.ndarray:
    """Law of a sum of independent geometric waiting times (support 1, 2, ...), by
    convolution: the reference for a finite user pool."""
    total = np.zeros(horizon + 1)
    total[0] = 1.0
    t = np.arange(horizon + 1)
    for p in rates:
        g = np.where(t >= 1, p * (1 - p) ** np.clip(t - 1, 0, None), 0.0)
        total = np.convolve(total, g)[: horizon + 1]
    return total[1:]


@pytest.mark.parametrize(("rate", "k", "users", "sessions"), [(0.3, 4, 6, 80), (0.1, 3, 50, 120)])
def test_a_finite_user_pool_is_a_sum_of_geometric_waits(rate, k, users, sessions):
    want = geometric_sum_pmf([rate * (users - d) / users for d in range(k)], sessions)
    np.testing.assert_allclose(first_reach(rate, k, sessions, users), want, atol=1e-13)


def test_reach_edges():
    assert reach_probability(0.3, 0, 10) == 1.0
    assert reach_probability(0.0, 1, 10) == 0.0
    assert reach_probability(0.5, 4, 30, users=3) == 0.0  # three users cannot make four
    assert reach_probability(1.0, 3, 3) == pytest.approx(1.0)
    assert reach_probability(1.0, 3, 2) == 0.0


def test_expected_distinct_ids_is_occupancy():
    rate, pool, sessions = 0.25, 12, 40
    n = np.arange(sessions + 1)
    rows = stats.binom.pmf(n, sessions, rate)  # rows sent
    want = float(rows @ (pool * (1 - (1 - 1 / pool) ** n)))  # E[distinct | n rows]
    assert expected_distinct_ids(rate, pool, sessions) == pytest.approx(want, rel=1e-12)
    assert expected_distinct_ids(1.0, 1, 5) == 1.0
    assert expected_distinct_ids(0.5, 10, 0) == 0.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: first_reach(1.2, 2, 5), "rate=1.2"),
        (lambda: first_reach(0.2, 0, 5), "k=0"),
        (lambda: first_reach(0.2, 2, 0), "sessions=0"),
        (lambda: first_reach(0.2, 2, 5, users=0), "users=0"),
        (lambda: expected_distinct_ids(0.2, 0, 5), "pool=0"),
        (lambda: reach_probability(1.2, 0, 5), "rate=1.2"),  # k = 0 answered 1.0 unchecked
        (lambda: reach_probability(0.2, 0, 5, users=0), "users=0"),
        (lambda: reach_probability(0.2, -1, 5), "k=-1"),
        (lambda: ReviewPolicy(), "min_writers=0"),
        (lambda: ReviewPolicy(min_writers=-1), "min_writers=-1"),
        (lambda: ReviewPolicy(2, combine="xor"), "combine='xor'"),
    ],
)
def test_bad_arguments_are_refused(call, message):
    with pytest.raises(ParameterError, match=message):
        call()


def learning(writers: int, users: int) -> Learning:
    return Learning(
        candidate_id="lrn_1", namespace="default", text="rule", source_kind="assistant_turn",
        agent="triage", status="pending", supporter_count=users,
        supporters=tuple(f"u{i}" for i in range(users)), supporter_sessions=users,
        supporter_writers=writers, confidence_avg=None, rationale=(),
    )  # fmt: skip


POLICIES = [  # policy, (writers, users), meets
    (ReviewPolicy(min_writers=3), (3, 3), True),
    (ReviewPolicy(min_writers=3), (2, 40), False),  # one relay's forty ids are not three sources
    (ReviewPolicy(min_users=5), (1, 40), True),  # ... but they are forty users
    (ReviewPolicy(3, 5, "and"), (3, 4), False),
    (ReviewPolicy(3, 5, "and"), (3, 5), True),
    (ReviewPolicy(3, 5, "or"), (1, 5), True),
    (ReviewPolicy(3, 5, "or"), (2, 4), False),
]


@pytest.mark.parametrize(("policy", "counts", "meets"), POLICIES)
def test_the_policy_bar(policy, counts, meets):
    assert policy.meets(learning(*counts)) is meets
    assert policy.admits(*counts) is meets


def test_the_policy_describes_itself():
    assert ReviewPolicy(3, 5, "or").describe() == "supporter_writers >= 3 or supporter_count >= 5"
    assert ReviewPolicy(min_users=4).describe() == "supporter_count >= 4"
