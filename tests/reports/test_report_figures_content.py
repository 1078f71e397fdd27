"""Report figures by the data they plot: each figure is drawn from tidy tables and read
back from its own artists (marker positions, error-bar ends, curve vertices, labels), so a
figure that plots the wrong column, drops a configuration or mis-scales its error bars
fails here even though it still renders. The exact curve is the SPRT's operating point
from a reference recursion written out in this test (not the engine's)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import LineCollection

from procmem_core.gates import SPRTGate
from reports.canvas import palette
from reports.sections.gate_figures import oc_figure, runs_figure

P0 = 0.8
DROPS = np.array([0.0, 0.05, 0.1, 0.15, 0.2])


def reference_point(p: float, max_runs: int = 10) -> tuple[float, float]:
    """Seed SPRT (alpha 0.05, beta 0.2, min_drop 0.15, min_runs 3, LLR cap rule) at p0 0.8:
    ``(P(revert), E[runs])`` by forward recursion over (runs, successes)."""
    ln_a, ln_b = math.log(0.8 / 0.05), math.log(0.2 / 0.95)
    up, down = math.log(0.65 / 0.8), math.log(0.35 / 0.2)
    alive, revert, runs = {0: 1.0}, 0.0, 0.0
    for n in range(1, max_runs + 1):
        nxt: dict[int, float] = {}
        for s, m in alive.items():
            nxt[s + 1] = nxt.get(s + 1, 0.0) + m * p
            nxt[s] = nxt.get(s, 0.0) + m * (1 - p)
        alive = {}
        for s, m in nxt.items():
            llr = s * up + (n - s) * down
            hit_a, hit_b = n >= 3 and llr >= ln_a, n >= 3 and llr <= ln_b
            if hit_a or hit_b or n == max_runs:
                revert += m * (hit_a or (not hit_b and llr > 0))
                runs += n * m
            else:
                alive[s] = m
    return revert, runs


@pytest.fixture(scope="module")
def tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    ref = [reference_point(P0 - d) for d in DROPS]
    exact = pd.DataFrame(
        {"config": "seed", "drop": DROPS, "p_revert": [r for r, _ in ref],
         "expected_runs": [e for _, e in ref]}
    )  # fmt: skip
    rng = np.random.default_rng(np.random.SeedSequence(19))
    points = pd.DataFrame(
        {
            "config": ["seed"] * 3 + ["loose"] * 2,
            "drop": [0.0, 0.1, 0.2, 0.0, 0.2],
            "p_revert": rng.uniform(0, 1, 5),
            "p_revert_se": [0.01, 0.02, 0.03, 0.015, np.nan],
            "mean_runs": rng.uniform(3, 10, 5),
            "mean_runs_se": [0.1, 0.2, 0.3, 0.4, 0.5],
        }
    )
    bounds = pd.DataFrame({"config": ["seed", "seed"], "drop": [0.0, 0.15], "bound": [4.2, 5.1]})
    return points, exact, bounds


def artists(fig):
    """``(axes, labelled lines, simulated series)``: each simulated series is an error-bar
    container (its marker line and its bar collection) under its legend label."""
    (ax,) = fig.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    series = {c.get_label(): c for c in ax.containers}
    return ax, lines, series


def bar_ends(series) -> list[tuple[float, float, float]]:
    """``(x, low, high)`` of each vertical error bar of one simulated series."""
    (bars,) = [c for c in series.lines[2] if isinstance(c, LineCollection)]
    return [(seg[0][0], seg[0][1], seg[1][1]) for seg in bars.get_segments()]


def test_the_reference_curve_is_the_engines_exact_operating_point():
    op = SPRTGate(max_runs=10).operating_point(P0 - DROPS, P0)
    ref = np.array([reference_point(P0 - d) for d in DROPS])
    np.testing.assert_allclose(op.p_revert, ref[:, 0], atol=1e-12)
    np.testing.assert_allclose(op.expected_runs, ref[:, 1], rtol=1e-12)


def check_series(series, points: pd.DataFrame, y: str) -> None:
    """Markers at the table's points; each bar from y - 1.96 se to y + 1.96 se (a
    missing SE: a bar of length 0)."""
    assert set(series) == {f"{c} (simulated)" for c in points["config"].unique()}
    for config, g in points.groupby("config"):
        s = series[f"{config} (simulated)"]
        np.testing.assert_allclose(np.asarray(s.lines[0].get_xdata(), float), g["drop"])
        np.testing.assert_allclose(np.asarray(s.lines[0].get_ydata(), float), g[y])
        se = g[f"{y}_se"].fillna(0)
        expected = list(zip(g["drop"], g[y] - 1.96 * se, g[y] + 1.96 * se, strict=True))
        np.testing.assert_allclose(bar_ends(s), expected)


def test_oc_figure_plots_the_points_their_bars_and_the_exact_curve(tables):
    points, exact, _ = tables
    ax, lines, series = artists(oc_figure(points, exact, palette(["loose", "seed"])))
    check_series(series, points, "p_revert")
    curves = [x for x in ax.get_lines() if len(x.get_xdata()) == len(DROPS)]
    (curve,) = [x for x in curves if x.get_linestyle() == "-"]
    np.testing.assert_allclose(curve.get_xdata(), DROPS)
    np.testing.assert_allclose(curve.get_ydata(), exact["p_revert"])
    assert "seed (exact, its own recursion)" in lines  # each curve named by its own gate
    assert ax.get_ylabel() == "probability of revert"


def test_runs_figure_plots_mean_runs_the_exact_expected_runs_and_the_bounds(tables):
    points, exact, bounds = tables
    ax, lines, series = artists(runs_figure(points, exact, bounds, palette(["loose", "seed"])))
    check_series(series, points, "mean_runs")
    curves = [x for x in ax.get_lines() if len(x.get_xdata()) == len(DROPS)]
    (curve,) = [x for x in curves if x.get_linestyle() == "-"]
    np.testing.assert_allclose(curve.get_ydata(), exact["expected_runs"])
    (marks,) = [x for x in ax.get_lines() if x.get_marker() == "v" and len(x.get_xdata())]
    np.testing.assert_allclose(marks.get_xdata(), bounds["drop"])
    np.testing.assert_allclose(marks.get_ydata(), bounds["bound"])
    assert "Wald-Wolfowitz bound at the gate's achieved error rates" in lines


def test_success_over_time_draws_the_logged_reference_rates():
    """The confidence runs log the no-procedure and the oracle's success rate: the
    trajectory figure draws them as labelled horizontal lines at those values."""
    from reports.sections.rule_figures import trajectory_figure

    t = pd.DataFrame({"session": [1, 2, 3], "seed": [0.75, 0.78, 0.79], "seed_se": [0.01] * 3})
    refs = {"no procedure shown": 0.6, "oracle (helpful procedures only)": 0.83}
    fig = trajectory_figure(t, "session", {"seed": "seed rule"}, "t", "rate", refs)
    (ax,) = fig.axes
    flat = {ln.get_label(): set(ln.get_ydata()) for ln in ax.get_lines()}
    assert flat["no procedure shown"] == {0.6}
    assert flat["oracle (helpful procedures only)"] == {0.83}
    assert list(ax.get_lines()[-1].get_ydata()) == [0.75, 0.78, 0.79]
    legend = [x.get_text() for x in ax.get_legend().get_texts()]
    assert legend == ["no procedure shown", "oracle (helpful procedures only)", "seed rule"]
