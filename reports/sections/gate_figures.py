"""Figures of the gate section: operating characteristics, cost in runs, error trade-off.

Inputs are tidy tables (one row per configuration and true drop) so the figures can be
drawn from hand-made data as well as from a sweep:

- ``points``: ``config, drop, p_revert, p_revert_se, mean_runs, mean_runs_se`` (simulated);
- ``exact``: ``config, drop, p_revert, expected_runs`` (``sprt_operating_point``);
- ``bounds``: ``config, drop, bound`` (Wald-Wolfowitz lower bound on expected runs).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from reports.canvas import (
    TARGET_COLOUR,
    exact_legend,
    legend_outside,
    new_figure,
    simulated_and_exact,
    simulated_points,
)
from reports.configs import show

Colours = dict[str, tuple]


def oc_figure(points: pd.DataFrame, exact: pd.DataFrame, colours: Colours) -> Figure:
    """Probability of revert against the true drop: simulated ± 1.96 SE, exact curve over it."""
    fig, (ax,) = new_figure(8.5, 4.4)
    for label, g in points.groupby("config", sort=True):
        simulated_and_exact(ax, g, exact, "drop", "p_revert", label, colours[str(label)])
    exact_legend(ax, exact, "exact (sprt_operating_point)")
    ax.set_xlabel("true drop in success rate, p0 - p (probability)")
    ax.set_ylabel("probability of revert")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("Operating characteristic: how often each gate reverts")
    ax.grid(alpha=0.3)
    legend_outside(ax, "gate configuration")
    return fig


def runs_figure(
    points: pd.DataFrame, exact: pd.DataFrame, bounds: pd.DataFrame, colours: Colours
) -> Figure:
    """Expected runs to a decision against the true drop, with the lower bound of any test."""
    fig, (ax,) = new_figure(8.5, 4.4)
    for label, g in points.groupby("config", sort=True):
        c = colours[str(label)]
        simulated_and_exact(ax, g, exact, "drop", "mean_runs", label, c, "expected_runs")
        if not bounds.empty:
            b = bounds[bounds["config"] == label]
            ax.plot(b["drop"], b["bound"], marker="v", color=c, ms=7, linestyle="none")
    exact_legend(ax, exact, "exact expected runs")
    if not bounds.empty:
        ax.plot([], [], color="black", marker="v", linestyle="none", label="lower bound, any test")
    ax.set_xlabel("true drop in success rate, p0 - p (probability)")
    ax.set_ylabel("runs until the decision (runs)")
    ax.set_ylim(bottom=0)
    ax.set_title("Cost of each gate: expected runs to a decision")
    ax.grid(alpha=0.3)
    legend_outside(ax, "gate configuration")
    return fig


def tradeoff_figure(
    table: pd.DataFrame,
    colours: Colours,
    targets: tuple[float, float],
    highlight: tuple[str, ...] = (),
) -> Figure:
    """False revert rate against missed regression rate, efficient frontier joined.

    ``table``: ``config, false_revert_rate(_se), missed_regression_rate(_se), frontier``.
    The shaded box is the target region; labelled points are those in ``highlight``.
    """
    fig, (ax,) = new_figure(8.5, 4.6)
    fr_t, mr_t = targets
    ax.fill_between([0, fr_t], 0, mr_t, color=TARGET_COLOUR, alpha=0.15, label="within targets")
    for _, r in table.sort_values("config").iterrows():
        label = str(r["config"])
        shown = label in highlight
        ax.errorbar(
            r["false_revert_rate"],
            r["missed_regression_rate"],
            xerr=1.96 * np.nan_to_num(r.get("false_revert_rate_se", 0.0)),
            yerr=1.96 * np.nan_to_num(r.get("missed_regression_rate_se", 0.0)),
            fmt="o",
            color=colours[label],
            ms=6 if shown else 3,
            capsize=2,
            alpha=1.0 if shown else 0.5,
            label=label if shown else None,
        )
    front = table[table["frontier"]].sort_values("false_revert_rate")
    if len(front) > 0:
        ax.step(
            front["false_revert_rate"],
            front["missed_regression_rate"],
            where="post",
            color="black",
            linewidth=1,
            label="efficient frontier",
        )
    ax.set_xlabel("false revert rate (probability, true drop 0)")
    ax.set_ylabel("missed regression rate (probability)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.set_title("Error trade-off of every gate configuration (bars: 95 % MC intervals)")
    ax.grid(alpha=0.3)
    legend_outside(ax, "gate configuration")
    return fig


def factor_figure(
    table: pd.DataFrame, factor: str, colours: Colours, label: str, none_label: str = "none"
) -> Figure:
    """Error rates against one factor (cap rule, ledger size, heterogeneity), per configuration.

    ``table``: ``config``, the factor column and both error rates with their SEs; a
    missing factor value (``None``, e.g. a ledger of unknown size = p0 known) shows as
    ``none_label``.
    """
    fig, axes = new_figure(10.0, 4.0, ncols=2)
    levels = sorted(table[factor].map(lambda v: _level(v, none_label)).unique(), key=_sort_key)
    pos = {lv: i for i, lv in enumerate(levels)}
    for ax, metric, name in zip(
        axes,
        ("false_revert_rate", "missed_regression_rate"),
        ("false revert rate (probability)", "missed regression rate (probability)"),
        strict=True,
    ):
        for cfg, g in table.groupby("config", sort=True):
            g = g.assign(_x=g[factor].map(lambda v: _level(v, none_label)).map(pos)).sort_values(
                "_x"
            )
            simulated_points(
                ax, g["_x"], g[metric], g[f"{metric}_se"], colours[str(cfg)], str(cfg), joined=True
            )
        ax.set_xticks(range(len(levels)), levels)
        ax.set_xlabel(label)
        ax.set_ylabel(name)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0].set_title(f"False reverts by {label}")
    axes[1].set_title(f"Missed regressions by {label}")
    legend_outside(axes[1], "gate configuration")
    return fig


def _level(value: object, none_label: str) -> str:
    return none_label if value is None or value != value else show(value)


def _sort_key(text: str) -> tuple[int, float | str]:
    try:
        return (1, float(text))
    except ValueError:
        return (0, text)
