"""The learnings scenario's standard errors are right: the figures of one replication are
one unit (docs/statistics.md, "Monte Carlo hygiene"), and over many simulated-vs-exact
pairs the z-scores look standard normal (reports.calibration)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reports.calibration import calibration
from simulators.scenarios.learnings import LearningsScenario


def test_fabricated_ids_se_is_the_se_of_per_replication_means():
    """One writer pushes 3 rules; they share its sessions (correlation about 0.7), so the
    SE is that of the 12 per-replication means, not of 36 pooled values."""
    sc = LearningsScenario(replications=12, sessions=100, multi_user_share=0.2, min_users=0)
    m = sc.run(3).metrics
    per = np.array(
        [
            np.mean([len(r.fabricated.get(0, ())) for r in w.rules if r.pushed_by])
            for w in sc.simulate(3)
        ]
    )
    assert per.size == 12
    assert m["fabricated_ids_per_writer"] == pytest.approx(per.mean(), rel=1e-12)
    assert m["fabricated_ids_per_writer_se"] == pytest.approx(
        per.std(ddof=1) / np.sqrt(12), rel=1e-12
    )


@pytest.mark.slow
def test_z_scores_of_many_configurations_look_standard_normal():
    """At least 100 simulated-vs-exact pairs from 18 small runs (each its own seed; low
    thresholds, so every kind's reach share is away from 0 and 1 and logged): the
    z-scores' variance is in [0.8, 1.25] and the tail counts in their Binomial 99 %
    ranges."""
    rows = []
    policies = [(3, 2), (2, 3), (3, 4), (4, 3)]
    for i in range(18):
        k, m = policies[i % 4]
        share = (0.0, 0.2)[i % 2]
        sc = LearningsScenario(
            replications=30, sessions=80, users=20, min_writers=k, min_users=m,
            multi_user_share=share, erasure_share=0.0,
        )  # fmt: skip
        got = sc.run(100 + i).metrics
        for name in [n.removesuffix("_exact") for n in got if n.endswith("_exact")]:
            se = got[f"{name}_se"]
            rows.append({"z": (got[name] - got[f"{name}_exact"]) / se, "se": se})
    cal = calibration(pd.DataFrame(rows))
    assert cal.pairs >= 100, cal.describe()
    assert 0.8 <= cal.variance <= 1.25, cal.describe()
    assert all(t.ok for t in cal.tails), cal.describe()
