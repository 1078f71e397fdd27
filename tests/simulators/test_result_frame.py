"""``ScenarioResult.frame`` on what the scenarios log: the z of a figure whose exact value
shares the replications' draws (the loop's lift) is over the paired SE ``x_diff_se``, as the
report's agreement table reads it, so the frame and the report tell the same story."""

from __future__ import annotations

import numpy as np
import pytest

from simulators import Feedback, InformativeMissing
from simulators.result import ScenarioResult
from simulators.scenarios.loop import LoopScenario


def test_the_frame_z_of_a_paired_exact_is_over_the_paired_se():
    result = ScenarioResult("loop", {"lift": 0.12, "lift_se": 0.02, "lift_exact": 0.1,
                                     "lift_diff_se": 0.004, "p": 0.5, "p_se": 0.1})  # fmt: skip
    frame = result.frame().set_index("metric")
    assert frame.at["lift", "z"] == pytest.approx(5.0)  # (0.12 - 0.1) / 0.004, not / 0.02
    assert frame.at["lift", "se"] == 0.02  # the value's own SE
    assert np.isnan(frame.at["p", "z"])


def test_the_loop_lift_z_scores_are_those_of_the_paired_difference():
    """Over 12 runs of a small loop under informative missingness, the frame's z of the
    lift and the naive lift equals ``(x - x_exact) / x_diff_se``. With ``lift_se`` instead
    (the old frame) the z-scores had variance about 0.39 where t with 11 df has 1.22."""
    fb = Feedback((InformativeMissing(missing_if_success=0.6, missing_if_failure=0.1),))
    zs = []
    for seed in range(12):
        r = LoopScenario(tasks=2, sessions=250, revise_every=20, explore_rate=0.25,
                         replications=12, feedback=fb).run(seed)  # fmt: skip
        frame, m = r.frame().set_index("metric"), r.metrics
        for name in ("lift", "naive_lift"):
            want = (m[name] - m[f"{name}_exact"]) / m[f"{name}_diff_se"]
            assert frame.at[name, "z"] == pytest.approx(want, rel=1e-12)
            zs.append(want)
    assert np.max(np.abs(zs)) < 6  # t with 11 df: |t| > 6 has probability 1e-4
    assert 0.4 < np.var(zs) < 3.0
