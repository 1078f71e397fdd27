"""A figure that did not vary across replications (SE 0) reads as its exact bound, never
as "0 ± 0" or "1 ± 0" (README, "A report never states more than its numbers")."""

from __future__ import annotations

import pandas as pd

from reports.evidence import fmt, fmt_metric
from reports.sections.explore_format import with_se
from reports.sections.learnings import recommend_policy


def test_a_constant_figure_gives_the_exact_bound_over_its_replications():
    # none of 100 replications differed: 1 - 0.05^(1/100) = 0.0295
    assert fmt(0.0, 0.0, 100) == "0 (in all 100 replications; another value in < 0.03 at 95 %)"
    assert fmt(1.0, 0.0, 4) == "1 (in all 4 replications; another value in < 0.53 at 95 %)"
    assert fmt(3.0, 0.0) == "3 (the same in every replication)"
    assert fmt(0.5, 0.01, 100) == "0.5 ± 0.01"
    row = pd.Series({"x": 1.0, "x_se": 0.0, "params.scenario.replications": "20"})
    assert fmt_metric(row, "x") == "1 (in all 20 replications; another value in < 0.14 at 95 %)"
    assert with_se(0.0, 0.0, 100) == fmt(0.0, 0.0, 100)


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
