"""The learnings section's figure: precision against sessions to promotion, every policy
(colour) in every condition (marker)."""

from __future__ import annotations

import math

import pandas as pd
from matplotlib.figure import Figure as MplFigure

from reports.canvas import TARGET_COLOUR, legend_outside, new_figure, palette
from reports.evidence import se_of

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def se_or_zero(row: pd.Series, metric: str) -> float:
    """A row's ``<metric>_se``, 0 where it has none (NaN)."""
    se = se_of(row, metric)
    return 0.0 if math.isnan(se) else se


def precision_figure(rows: pd.DataFrame, target: float) -> MplFigure:
    """Precision against sessions to promotion, every policy in every condition."""
    fig, axes = new_figure(11.0, 4.6, ncols=2)
    colours = palette(rows["policy"])
    low = float((rows["precision"] - 1.96 * rows["precision_se"].fillna(0)).min())
    markers = {
        c: MARKERS[i % len(MARKERS)] for i, c in enumerate(sorted(rows["condition"].unique()))
    }
    for ax, x, name in (
        (axes[0], "sessions_to_promotion", "sessions until promotion (promoted helpful rules)"),
        (axes[1], "helpful_wait", "sessions until promotion (every helpful rule; never = horizon)"),
    ):
        for _, r in rows.iterrows():
            ax.errorbar(
                r[x],
                r["precision"],
                xerr=1.96 * se_or_zero(r, x),
                yerr=1.96 * se_or_zero(r, "precision"),
                fmt=markers[r["condition"]],
                color=colours[r["policy"]],
                ms=5,
                capsize=2,
            )
        ax.axhline(target, color=TARGET_COLOUR, linestyle="--", linewidth=1)
        ax.set(
            xlabel=name,
            ylabel="precision (share of promoted rules that are helpful)",
            ylim=(max(0.0, low - 0.05), 1.02),
        )
        ax.grid(alpha=0.3)
    for p, c in colours.items():
        axes[1].plot([], [], "o", color=c, label=p)
    for cond, mk in markers.items():
        axes[1].plot([], [], mk, color="black", label=cond)
    legend_outside(axes[1], "policy / condition")
    fig.suptitle("Precision against sessions to promotion (bars: 95 % Monte Carlo intervals)")
    return fig
