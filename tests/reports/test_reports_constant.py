"""A figure that did not vary across replications (SE 0) reads as its exact bound, never
as "0 ± 0" or "1 ± 0" (README, "A report never states more than its numbers")."""

from __future__ import annotations

import pandas as pd
import pytest

from reports.evidence import fmt, fmt_exact, fmt_metric
from reports.sections.explore_format import with_se
from reports.sections.learnings import recommend_policy


def test_a_constant_figure_gives_the_exact_bound_over_its_replications():
    # none of 100 replications differed: 1 - 0.05^(1/100) = 0.0295
    assert (
        fmt(0.0, 0.0, replications=100)
        == "0 (in all 100 replications; another value in < 0.03 at 95 %)"
    )
    assert (
        fmt(1.0, 0.0, replications=4)
        == "1 (in all 4 replications; another value in < 0.53 at 95 %)"
    )
    assert fmt(3.0, 0.0) == "3 (the same in every replication)"
    assert fmt(0.5, 0.01, 100) == "0.5 ± 0.01"
    row = pd.Series({"x": 1.0, "x_se": 0.0, "params.scenario.replications": "20"})
    assert fmt_metric(row, "x") == "1 (in all 20 replications; another value in < 0.14 at 95 %)"
    assert with_se(0.0, 0.0, 100) == fmt(0.0, 0.0, replications=100)


def test_the_learnings_sentence_has_no_plus_minus_zero():
    t = pd.DataFrame(
        [("slow and precise", 1.0, 0.0, 150.0, 1.0, 0.5, 0.02, 0.0, 0.0, 4, "100")],
        columns=[
            "policy", "precision", "precision_se", "helpful_wait", "helpful_wait_se",
            "recall", "recall_se", "harmful_served_sessions", "harmful_served_sessions_se",
            "conditions", "params.scenario.replications",
        ],
    )  # fmt: skip
    sentence = recommend_policy(t).sentence
    assert "± 0 " not in sentence and "± 0," not in sentence
    assert "precision at least 1 (in all 100 replications; another value in < 0.03" in sentence
    assert "served in at most 0 (in all 100 replications;" in sentence


def test_the_wait_is_read_as_censored_data_with_its_horizon():
    """Issue 30, item 5: "waits at most 176 ± 1.2 sessions" at recall 0.468 was mostly the
    200-session horizon; the sentence gives the Kaplan-Meier median and the share not
    promoted by the horizon, and names the horizon."""
    cols = [
        "policy", "precision", "precision_se", "helpful_wait", "helpful_wait_se", "recall",
        "recall_se", "harmful_served_sessions", "harmful_served_sessions_se", "conditions",
        "helpful_wait_median", "helpful_wait_median_low", "helpful_wait_median_high",
        "helpful_unpromoted", "helpful_unpromoted_se", "params.scenario.sessions",
    ]  # fmt: skip
    low_recall = ("k", 0.95, 0.01, 176.0, 1.2, 0.468, 0.02, 1.0, 0.5, 1, 201, 180, 201, 0.532,
                  0.02, "200")  # fmt: skip
    s = recommend_policy(pd.DataFrame([low_recall], columns=cols)).sentence
    assert "Fewer than half the helpful rules are promoted within the 200-session horizon" in s
    assert "95 % interval 180 to beyond the 200-session horizon" in s
    assert "A share of 0.532 ± 0.02 of them is not promoted by session 200, the horizon" in s
    fast = ("k", 0.95, 0.01, 90.0, 1.2, 0.9, 0.02, 1.0, 0.5, 1, 61, 55, 70, 0.1, 0.01, "200")
    s = recommend_policy(pd.DataFrame([fast], columns=cols)).sentence
    assert "Half the helpful rules are promoted within 61 sessions (Kaplan-Meier median" in s
    assert "the restricted mean wait, which counts them, is 90 ± 1.2 sessions." in s


def test_an_exact_share_near_1_never_prints_as_certainty():
    """The seed's rule excludes 0.99995 of harmful procedures within 60 sessions (the
    confidence_sweep report printed "excludes 1.000 (exact)")."""
    assert fmt_exact(0.9999514340722039) == "0.99995"
    assert fmt_exact(0.00004) == "0.00004"
    assert fmt_exact(0.06575635108409528) == "0.066"
    assert fmt_exact(1.0) == "1.000" and fmt_exact(0.0) == "0.000"


def test_the_learnings_sentence_says_harmful_servings_are_summed_over_rules():
    """harmful_served_sessions sums each promoted harmful rule's later conversations of its
    agent: at min_writers 1, accuracy 0.7 it read 155.5 'conversations per replication'
    where 101 distinct conversations were served one (434 in one replication of 200
    sessions). The sentence now says the figure is summed over the harmful rules."""
    from simulators.scenarios.learnings import LearningsScenario

    sc = LearningsScenario(min_writers=1, reviewer_accuracy=0.7, replications=4)
    worlds = sc.simulate(3)
    summed = distinct = 0
    for w in worlds:
        bad = [r for r in w.rules if r.kind == "harmful" and r.promoted_at is not None]
        summed += sum(w.served_sessions(r) for r in bad)
        start = {}
        for r in bad:
            start[r.agent] = min(start.get(r.agent, sc.sessions), r.promoted_at)
        distinct += sum(a == b for b, s in start.items() for a in w.session_agent[s + 1 :])
    assert sc.run(3).metrics["harmful_served_sessions"] == pytest.approx(summed / 4)
    assert summed > distinct  # so the figure is not a count of conversations
    t = pd.DataFrame(
        [("p", 0.9, 0.01, 150.0, 1.0, 0.5, 0.02, summed / 4, 1.0, 1, "4")],
        columns=[
            "policy", "precision", "precision_se", "helpful_wait", "helpful_wait_se",
            "recall", "recall_se", "harmful_served_sessions", "harmful_served_sessions_se",
            "conditions", "params.scenario.replications",
        ],
    )  # fmt: skip
    assert "per replication (summed over the harmful rules)" in recommend_policy(t).sentence
