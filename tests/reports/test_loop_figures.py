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


def test_labels_keep_every_setting_and_drop_only_the_condition_the_caption_names() -> None:
    """The loop preset's rows end with a two-part condition ('quarantine seed(); perfect
    feedback'); the labels once kept only the text before the first '; ' and the caption
    named only the last part, so the quarantine policy drawn was named nowhere."""
    from reports.sections.loop_figures import short_label

    cond = "quarantine seed(); perfect feedback"
    rows = pd.DataFrame(
        {
            "config": [f"strike limit {k}; {cond}" for k in (0, 3)],
            "condition": [cond] * 2,
            "right": [0.9, 0.8],
        }
    )
    fig = bars(rows, METRICS, "share", "t", cond)
    assert fig is not None
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == [
        "strike limit 0",
        "strike limit 3",
    ]
    plt.close(fig)
    assert short_label("strike limit 3; quarantine decay()", cond) == (
        "strike limit 3; quarantine decay()"  # another condition's row keeps its label whole
    )
    assert short_label("strike limit 3", "") == "strike limit 3"
