"""The loop's bar figures are emitted only with data, and draw only the values there are."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd

from reports.sections.loop_figures import bars, sources_bars

METRICS = {"right": "right verdicts", "wrong": "wrong verdicts"}


def _heights(fig) -> list[float]:
    return [p.get_height() for p in fig.axes[0].patches]


def test_bars_returns_none_without_a_finite_non_zero_value() -> None:
    rows = pd.DataFrame({"config": ["a", "b"], "right": [math.nan] * 2, "wrong": [math.nan] * 2})
    assert bars(rows, METRICS, "share", "t") is None
    zeros = rows.assign(right=[0.0, 0.0], right_se=[0.0, 0.0])  # no revision decided
    assert bars(zeros, METRICS, "share", "t") is None
    assert bars(rows[["config"]], METRICS, "share", "t") is None  # metrics not logged at all


def test_bars_draws_a_missing_value_as_no_bar_not_zero() -> None:
    rows = pd.DataFrame(
        {"config": ["a", "b"], "right": [0.25, math.nan], "right_se": [0.01, math.nan]}
    )
    fig = bars(rows, METRICS, "share", "t")
    assert fig is not None
    heights = _heights(fig)
    assert heights[0] == 0.25 and math.isnan(heights[1])  # NaN is drawn as nothing
    plt.close(fig)


def test_sources_bars_returns_none_when_nothing_to_stack() -> None:
    zero = pd.DataFrame({"source": ["withheld"] * 2, "period": ["early", "late"], "regret": 0.0})
    assert sources_bars({"cfg": zero}) is None
    some = zero.assign(regret=[0.1, 0.0])
    fig = sources_bars({"cfg": some})
    assert fig is not None and _heights(fig) == [0.1]
    plt.close(fig)
