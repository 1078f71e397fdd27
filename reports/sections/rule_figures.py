"""Figures of the flat confidence rule: fate heatmaps over the grid, exclusion against p."""

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
)


def heatmap_figure(
    table: pd.DataFrame, x: str, y: str, value: str, facet: str | None, title: str, unit: str
) -> Figure:
    """``value`` over an ``x`` by ``y`` grid, one panel per ``facet`` level (at most 4).

    Each cell shows its value and the rule's break-even success rate
    ``penalty / (reward + penalty)`` when the table carries ``break_even``.
    """
    levels = sorted(table[facet].unique()) if facet else [None]
    levels = levels[:4]
    fig, axes = new_figure(4.2 * len(levels) + 1.2, 4.0, ncols=len(levels))
    image = None
    for ax, level in zip(axes, levels, strict=True):
        t = table if level is None else table[table[facet] == level]
        grid = t.pivot_table(index=y, columns=x, values=value, aggfunc="mean")
        image = ax.imshow(grid.to_numpy(float), origin="lower", cmap="viridis", vmin=0, vmax=1)
        ax.set_xticks(range(grid.shape[1]), [f"{v:g}" for v in grid.columns])
        ax.set_yticks(range(grid.shape[0]), [f"{v:g}" for v in grid.index])
        ax.set_xlabel(f"{x} (confidence per good session)")
        ax.set_ylabel(f"{y} (confidence per bad session)")
        if level is not None:
            ax.set_title(f"{facet} = {level:g}", fontsize=9)
        be = (
            t.pivot_table(index=y, columns=x, values="break_even", aggfunc="mean")
            if "break_even" in t
            else None
        )
        for i, yv in enumerate(grid.index):
            for j, xv in enumerate(grid.columns):
                v = grid.loc[yv, xv]
                if np.isnan(v):
                    continue
                extra = f"\nb-e {be.loc[yv, xv]:.2f}" if be is not None else ""
                ax.text(
                    j,
                    i,
                    f"{v:.2f}{extra}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if v < 0.6 else "black",
                )
    if image is not None:
        fig.colorbar(image, ax=axes, label=unit, shrink=0.85)
    fig.suptitle(title)
    return fig


def fate_figure(
    points: pd.DataFrame, exact: pd.DataFrame, colours: dict[str, tuple], sessions: str
) -> Figure:
    """Probability of exclusion within the horizon against the success probability p.

    ``points``: ``config, p, p_excluded, p_excluded_se, break_even`` (simulated);
    ``exact``: ``config, p, p_excluded`` (``flat_fate``). Dotted lines: break-even rates.
    """
    fig, (ax,) = new_figure(8.5, 4.2)
    for label, g in points.groupby("config", sort=True):
        c = colours[str(label)]
        g = g.sort_values("p")
        simulated_and_exact(ax, g, exact, "p", "p_excluded", label, c)
        if "break_even" in g:
            ax.axvline(float(g["break_even"].iloc[0]), color=c, linestyle=":", linewidth=1)
    exact_legend(ax, exact, "exact (flat_fate)")
    ax.plot([], [], color=TARGET_COLOUR, linestyle=":", label="break-even success rate")
    ax.set_xlabel("success probability of the procedure when applied, p (probability)")
    ax.set_ylabel(f"probability excluded within {sessions} sessions")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("Fate of one procedure under the flat confidence rule")
    ax.grid(alpha=0.3)
    legend_outside(ax, "rule")
    return fig


def trajectory_figure(
    table: pd.DataFrame, x: str, series: dict[str, str], title: str, ylabel: str
) -> Figure:
    """Lines of ``table[column]`` against ``x``, one per ``{column: legend label}``.

    A ``<column>_se`` column, when present, is drawn as a 95 % band.
    """
    fig, (ax,) = new_figure(8.5, 4.0)
    for col, label in series.items():
        if col not in table:
            continue
        t = table.sort_values(x)
        ax.plot(t[x], t[col], label=label)
        if f"{col}_se" in t:
            se = 1.96 * t[f"{col}_se"].fillna(0)
            ax.fill_between(t[x], t[col] - se, t[col] + se, alpha=0.2)
    ax.set_xlabel(x.replace("_", " "))
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    legend_outside(ax)
    return fig
