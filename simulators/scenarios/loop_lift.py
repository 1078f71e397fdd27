"""The loop's shown-vs-withheld lift, as the outcomes give it and as the ratings do.

A deployment reads its explore-rate experiment from rated sessions. When whether a
session is rated depends on its outcome (``InformativeMissing``: failures rated more
often), the naive lift on rated sessions is biased (Little & Rubin 2019, ch. 1; issue 29
item 6). Per replication, with ``F`` the followed sessions (the task's procedure shown and
followed) at true success rates ``p_i``, ``W`` the withheld ones at the base rate ``b``:

- ``lift``: the outcomes' ``mean(ok | F) - mean(ok | W)``;
- ``naive_lift``: the same on rated sessions, with the ratings (``SessionLog.rating``);
- ``naive_lift_exact``: its expectation given the ``p_i`` drawn,
  ``sum(w_i g_i) / sum(w_i) - g(b)``, ``w_i = report_weight(p_i)`` (the chance session
  ``i`` is rated) and ``g = Feedback.positive_rate`` (the rated success share at a rate);
- ``lift_exact``: ``mean(p_i) - b``, what the lift estimates;
- ``naive_lift_bias``: ``naive_lift_exact - lift_exact``, the bias the exact formula gives.

``lift_diff_se`` and ``naive_lift_diff_se``: the standard error of the mean of the
per-replication differences ``lift - lift_exact`` (``naive_lift - naive_lift_exact``).
Both "exact" figures are expectations given the ``p_i`` a replication drew, so they share
that replication's draw of procedures with the simulated lift: the simulated-vs-exact z
divides by this SE of the paired difference (``reports.summary.agreement_table``), not by
``lift_se``, which also holds the spread of ``mean(p_i)`` over replications (the loop
preset's z-scores had variance 0.26 with ``lift_se``). ``lift_diff_n`` and
``naive_lift_diff_n``: the replications that SE is estimated from, so a reader takes
that z as Student's t with ``n - 1`` degrees of freedom (``reports.calibration``).

``rated_rate``: the share of sessions rated. Replications where an arm has no (rated)
session are left out of the lift metrics; each metric is a mean over replications with
its standard error (the replication is the independent unit).
"""

from __future__ import annotations

import numpy as np

from simulators.feedback import Feedback
from simulators.result import ScenarioResult, mean_and_se
from simulators.scenarios.loop_world import LoopWorld

LIFT_METRICS = ("lift", "naive_lift", "naive_lift_exact", "lift_exact", "naive_lift_bias")


def replication_lifts(world: LoopWorld, feedback: Feedback, base_rate: float) -> dict | None:
    """The lift metrics of one replication (the module doc), or None when the followed or
    the withheld arm has no rated session."""
    c = world.columns()
    followed = c.followed & ~c.withheld  # a withheld session is never a followed one
    rated_f, rated_w = c.rating[followed & c.rated], c.rating[c.withheld & c.rated]
    if not rated_f.size or not rated_w.size:
        return None
    p = c.p_true[followed]
    w = feedback.report_weight(p, base_rate)
    g = feedback.positive_rate(p, base_rate)
    g_base = float(feedback.positive_rate(base_rate, base_rate))
    exact = float(np.sum(w * g) / np.sum(w)) - g_base
    truth = float(np.mean(p)) - base_rate
    # a mean of outcomes (bools) is its count over its length: the float ``np.mean`` gives
    return {
        "lift": _share(c.ok[followed]) - _share(c.ok[c.withheld]),
        "naive_lift": _share(rated_f) - _share(rated_w),
        "naive_lift_exact": exact,
        "lift_exact": truth,
        "naive_lift_bias": exact - truth,
    }


def _share(flags: np.ndarray) -> float:
    """``np.mean`` of a non-empty array of bools: its count of 1s is exact in float64, so
    the mean is the one division ``count / n``."""
    return int(flags.sum()) / flags.size


def add_lift_metrics(
    result: ScenarioResult, worlds: list[LoopWorld], feedback: Feedback, base_rate: float
) -> None:
    """``rated_rate`` and the lift metrics (the module doc) over the replications."""
    rated = [int(w.columns().rated.sum()) for w in worlds]
    result.add_ratio("rated_rate", rated, [len(w.rows) for w in worlds])
    per = [replication_lifts(w, feedback, base_rate) for w in worlds]
    kept = [d for d in per if d is not None]
    for name in LIFT_METRICS:
        result.add_mean(name, np.array([d[name] for d in kept], dtype=float))
    for name in ("lift", "naive_lift"):
        diff = np.array([d[name] - d[f"{name}_exact"] for d in kept], dtype=float)
        result.metrics[f"{name}_diff_se"] = mean_and_se(diff)[1]
        result.metrics[f"{name}_diff_n"] = float(diff.size)
