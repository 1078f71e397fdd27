"""Holds if / breaks when for a review policy (issue 30): exact precision, recall and
median wait in the world without erasures or a multi-user writer, checked against closed
forms computed independently (one supporter: a geometric wait; many users: the binomial
tail) and against the simulated queue, and moved the way they must."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from procmem_core.learnings import ReviewPolicy
from procmem_core.learnings.sensitivity import (
    ReviewWorld,
    bar,
    review_figures,
    review_sensitivity,
)

W = ReviewWorld(users=40, sessions=120, agents=2, helpful_rate=0.15, neutral_rate=0.08,
                harmful_rate=0.05, helpful_share=0.4, harmful_share=0.3,
                reviewer_accuracy=0.8, review_delay=10)  # fmt: skip


def _precision(w: ReviewWorld, reach: dict[str, float]) -> float:
    a, sh, sx = w.reviewer_accuracy, w.helpful_share, w.harmful_share
    good = sh * a * reach["helpful"]
    return good / (good + (1 - a) * ((1 - sh - sx) * reach["neutral"] + sx * reach["harmful"]))


def test_one_supporter_is_a_geometric_wait():
    f = review_figures(ReviewPolicy(1, 0), W)
    window = W.sessions - W.review_delay
    reach = {k: 1 - (1 - getattr(W, f"{k}_rate") / 2) ** window
             for k in ("helpful", "neutral", "harmful")}  # fmt: skip
    assert f.reviewed == pytest.approx(reach, abs=1e-12)
    assert f.recall == pytest.approx(0.8 * reach["helpful"], abs=1e-12)
    assert f.precision == pytest.approx(_precision(W, reach), abs=1e-12)
    # median: first t with 0.8 (1 - (1 - q)^(t - delay)) >= 1/2
    q = 0.075
    t = W.review_delay + math.ceil(math.log(1 - 0.5 / 0.8) / math.log(1 - q))
    assert f.median_wait == t


def test_many_users_is_the_binomial_tail_and_the_bar_combines():
    w = replace(W, users=10**9)
    for policy, k in ((ReviewPolicy(3, 6, "and"), 6), (ReviewPolicy(3, 6, "or"), 3),
                      (ReviewPolicy(0, 4), 4)):  # fmt: skip
        assert bar(policy) == k
        f = review_figures(policy, w)
        for kind in ("helpful", "neutral", "harmful"):
            q = getattr(w, f"{kind}_rate") / 2
            tail = stats.binom.sf(k - 1, w.sessions - w.review_delay, q)
            assert f.reviewed[kind] == pytest.approx(tail, abs=1e-6)


def test_rows_are_the_figures_at_the_moved_world_and_move_as_they_must():
    policy = ReviewPolicy(6, 0)
    rows = review_sensitivity(policy, W, 0.9, unmodelled=(("erasure_share", 0.1),
                                                          ("multi_user_share", 0.0)))  # fmt: skip
    by = {(r.assumption, r.value): r for r in rows}
    assert rows[0].assumption == "as assumed"
    base = review_figures(policy, W)
    assert rows[0].figure("precision") == base.precision
    moves = (
        (("user count", "20"), "users", 20),
        (("harmful rate", "0.1"), "harmful_rate", 0.1),
        (("reviewer accuracy", "0.7"), "reviewer_accuracy", 0.7),
    )
    for (name, value), field, v in moves:
        f = review_figures(policy, replace(W, **{field: v}))
        r = by[(name, value)]
        assert (r.figure("precision"), r.figure("recall")) == (f.precision, f.recall)
        assert r.holds == (f.precision >= 0.9)
    acc = [by[("reviewer accuracy", v)].figure("precision") for v in ("0.7", "0.75")]
    assert acc[0] < acc[1] < base.precision < by[("reviewer accuracy", "0.85")].figure("precision")
    assert by[("harmful rate", "0.1")].figure("precision") < base.precision
    assert by[("helpful rate", "0.075")].figure("recall") < base.recall
    # erasures have no exact answer: said, not invented; a share never run is not a row
    gone = by[("erasure share", "0.1")]
    assert gone.holds is None and not gone.figures and "no exact answer" in gone.note
    assert not [r for r in rows if r.assumption == "multi-user writer share"]  # share 0: no row
    writer = review_sensitivity(policy, W, 0.9, unmodelled=(("multi_user_share", 0.2),))[-1]
    assert (writer.assumption, writer.value, writer.holds) == (
        "multi-user writer share",
        "0.2",
        None,
    )


def test_the_simulated_queue_agrees_with_the_exact_precision():
    from simulators.scenarios.learnings import LearningsScenario

    sc = LearningsScenario(users=W.users, sessions=W.sessions, reviewer_accuracy=0.8,
                           erasure_share=0.0, multi_user_share=0.0, min_writers=4,
                           min_users=6, combine="or", replications=200)  # fmt: skip
    m = sc.run(5).metrics
    f = review_figures(ReviewPolicy(4, 6, "or"), W)
    for name, exact in (("precision", f.precision), ("recall", f.recall)):
        assert abs(m[name] - exact) <= 4 * m[f"{name}_se"], (name, m[name], exact)
    assert np.isfinite(m["precision_se"]) and m["precision_se"] > 0
