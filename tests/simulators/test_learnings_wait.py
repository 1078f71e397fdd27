"""The wait to promotion as censored data: the Kaplan-Meier median (rules not promoted
censored at the horizon), its test-inversion interval and the share not promoted."""

from __future__ import annotations

import numpy as np
import pytest

from simulators.scenarios.learnings import LearningsScenario, median_wait


def test_median_by_hand_and_beyond_the_horizon():
    # 11 helpful rules in 3 replications; promoted by t: 3/11 at 1, 5/11 at 2, 6/11 at 3
    assert median_wait([[1, 2, 3], [2, 5], [1, 1, 4]], [4, 3, 4], 10)[0] == 3
    # 3 of 11 ever promoted: the median is beyond the horizon (horizon + 1)
    assert median_wait([[1], [2], [1]], [4, 3, 4], 10) == (11, 11, 11)


def test_the_scenario_logs_the_median_of_its_own_rules():
    sc = LearningsScenario(replications=6, sessions=120, min_writers=2, reviewer_accuracy=1.0)
    result = sc.run(11)
    m, rules = result.metrics, result.tables["rules"]
    helpful = rules[rules["kind"] == "helpful"]
    wait = helpful["promoted_session"].astype(float) + 1  # NaN: never promoted
    share = lambda t: float((wait <= t).sum()) / len(helpful)  # noqa: E731
    median = m["helpful_wait_median"]
    assert share(median) >= 0.5 > share(median - 1)
    assert m["helpful_wait_median_low"] <= median <= m["helpful_wait_median_high"]
    assert m["helpful_unpromoted"] == pytest.approx(1 - m["recall"], rel=1e-12)
    assert m["helpful_unpromoted"] == pytest.approx(float(np.isnan(wait).mean()), rel=1e-12)
