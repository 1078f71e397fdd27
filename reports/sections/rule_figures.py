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
    table: pd.DataFrame,
    x: str,
    series: dict[str, str],
    title: str,
    ylabel: str,
    references: dict[str, float] | None = None,
) -> Figure:
    """Lines of ``table[column]`` against ``x``, one per ``{column: legend label}``.

    A ``<column>_se`` column, when present, is drawn as a 95 % band; ``references``
    (``{legend label: value}``, e.g. the no-procedure and the oracle's rate) as
    horizontal lines.
    """
    fig, (ax,) = new_figure(8.5, 4.0)
    for (label, value), style in zip((references or {}).items(), (":", "--", "-."), strict=False):
        ax.axhline(value, color="black", linestyle=style, linewidth=1, label=label)
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


def frontier_figure(
    frontier: pd.DataFrame,
    picks: pd.DataFrame,
    simulated: pd.DataFrame,
    keep: float,
    exclude: float,
    title: str,
) -> Figure:
    """Helpful kept against harmful excluded: each family's exact frontier (lines), the
    designed and seed rules (exact, open squares), simulated runs of the design's world
    (dots with 95 % MC bars both ways) and the targets (dotted); the right panel zooms on
    the targets' corner.

    ``frontier``: ``family, kept, excluded``; ``picks``: ``label, kept, excluded``;
    ``simulated``: ``label, helpful_retained(_se), harmful_excluded(_se)``.
    """
    fig, axes = new_figure(11.5, 5.0, ncols=2)
    families = sorted(frontier["family"].unique())
    colours = {f: f"C{i}" for i, f in enumerate(families)}
    lo_x, lo_y = max(0.0, keep - 0.12), max(0.0, exclude - 0.12)
    for ax, zoom in zip(axes, (False, True), strict=True):
        for family, g in frontier.groupby("family", sort=True):
            g = g.sort_values("kept")
            ax.plot(g["kept"], g["excluded"], color=colours[family],
                    label=f"{family} frontier (exact)")  # fmt: skip
        for i, (_, r) in enumerate(picks.iterrows()):
            ax.plot(r["kept"], r["excluded"], "s", mfc="none", ms=9, color="black")
            if zoom == (r["kept"] >= lo_x and r["excluded"] >= lo_y):
                ax.annotate(r["label"], (r["kept"], r["excluded"]), fontsize=7,
                            xytext=(6, -12 - 9 * (i % 3)), textcoords="offset points")  # fmt: skip
        for _, r in simulated.iterrows():
            ax.errorbar(
                r["helpful_retained"], r["harmful_excluded"],
                xerr=1.96 * r["helpful_retained_se"], yerr=1.96 * r["harmful_excluded_se"],
                fmt="o", ms=3, color=TARGET_COLOUR, capsize=2,
            )  # fmt: skip
        ax.axvline(keep, color=TARGET_COLOUR, linestyle=":", linewidth=1)
        ax.axhline(exclude, color=TARGET_COLOUR, linestyle=":", linewidth=1)
        ax.set_xlim((lo_x, 1.005) if zoom else (-0.02, 1.02))
        ax.set_ylim((lo_y, 1.005) if zoom else (-0.02, 1.02))
        ax.set_xlabel("share of helpful procedures still shown at the horizon")
        ax.grid(alpha=0.3)
        ax.set_title("near the targets" if zoom else title, fontsize=10)
    axes[0].set_ylabel("share of harmful procedures excluded by the horizon")
    axes[1].plot([], [], "s", mfc="none", color="black", label="designed and seed rules (exact)")
    axes[1].plot([], [], "o", color=TARGET_COLOUR, label="simulated runs (95 % MC bars)")
    axes[1].plot([], [], color=TARGET_COLOUR, linestyle=":", label="targets")
    legend_outside(axes[1])
    return fig


def limit_figure(rows: pd.DataFrame, title: str) -> Figure:
    """Session success rate against the prompt's limit, one line per rule (95 % MC bars),
    with the no-procedure rate and the oracle's (only helpful procedures, as many as pay).

    ``rows``: ``limit, family_label, session_success_rate(_se)``, optionally
    ``success_rate_no_procedures`` and ``success_rate_oracle``.
    """
    fig, (ax,) = new_figure(8.8, 4.4)
    limits = sorted(rows["limit"].unique())
    pos = {v: float(v) for v in limits}  # numeric: lines between limits are interpolation
    for label, g in rows.groupby("family_label", sort=True):
        g = g.sort_values("limit")
        x = g["limit"].map(pos)
        ax.errorbar(x, g["session_success_rate"], yerr=1.96 * g["session_success_rate_se"],
                    marker="o", ms=4, capsize=3, label=label)  # fmt: skip
    if "success_rate_no_procedures" in rows:
        ax.axhline(rows["success_rate_no_procedures"].mean(), color=TARGET_COLOUR,
                   linestyle=":", label="no procedure")  # fmt: skip
    if "success_rate_oracle" in rows:
        oracle = rows.groupby("limit")["success_rate_oracle"].mean()
        ax.plot([pos[v] for v in oracle.index], oracle.values, color="black", linestyle="--",
                linewidth=1, label="oracle (helpful only, best number)")  # fmt: skip
    ax.set_xticks([pos[v] for v in limits], [str(int(v)) for v in limits])
    ax.set_xlabel("limit: most procedures in the prompt")
    ax.set_ylabel("session success rate (probability)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    legend_outside(ax, "rule")
    return fig
