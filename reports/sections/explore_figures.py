"""The explore section's figures: one panel per true lift (small multiples), simulated
proportions with Wilson 95 % intervals (inside [0, 1]), numbers written for reading, and
the confidence sequence of one deployment over its sessions beside the fixed-n interval.

Every function takes the explore runs (``explore._explore_runs``: one row per run with
``lift_condition``, ``explore_rate``, ``sessions``, ``replications`` and the metrics) and
returns a matplotlib figure.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from reports.canvas import TARGET_COLOUR, legend_outside, new_figure, palette
from reports.sections.explore_format import THOUSANDS, Z95, readable, wilson_bars

NOMINAL = 0.95
MAX_PANELS = 4


def lifts(t: pd.DataFrame) -> list[str]:
    """The lift conditions, smallest true lift first (at most ``MAX_PANELS``)."""
    order = t.groupby("lift_condition")["true_lift"].first().sort_values()
    return list(order.index[:MAX_PANELS])


def _panels(
    n: int, rows: int = 1, height: float = 3.4, sharey: bool | str = "row"
) -> tuple[MplFigure, np.ndarray]:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        rows,
        n,
        figsize=(3.6 * n + 1.8, height * rows),
        squeeze=False,
        layout="constrained",
        sharey=sharey,
    )
    return fig, axes


def _proportion(ax, x, rate, reps, colour, label, **style) -> None:
    below, above = wilson_bars(rate, reps)
    ax.errorbar(x, rate, yerr=[below, above], color=colour, ms=4, capsize=3, label=label, **style)


def power_cost(t: pd.DataFrame, target: float) -> MplFigure:
    """Top: power of the configured estimator against the explore rate, one line per
    number of sessions, the normal approximation dotted; bottom: successes forgone."""
    conds = lifts(t)
    colours = palette(t["sessions"].astype(str))
    fig, axes = _panels(len(conds), rows=2, sharey=False)
    for j, cond in enumerate(conds):
        ax, cost = axes[0, j], axes[1, j]
        for n, g in t[t["lift_condition"] == cond].groupby("sessions", sort=True):
            g = g.sort_values("explore_rate")
            c = colours[str(n)]
            _proportion(ax, g["explore_rate"], g["power"], g["replications"], c,
                        f"{readable(n)} sessions", marker="o")  # fmt: skip
            if "power_formula" in g:
                ax.plot(g["explore_rate"], g["power_formula"], ":", marker="+", ms=8, color=c)
            err = Z95 * g["exploration_cost_se"].fillna(0)
            cost.errorbar(g["explore_rate"], g["exploration_cost"], yerr=err, color=c,
                          marker="o", ms=4, capsize=3, label=f"{readable(n)} sessions")  # fmt: skip
        lift = t.loc[t["lift_condition"] == cond, "true_lift"].iloc[0]
        ax.set_title(f"true lift {readable(lift)}", fontsize=10)
        ax.axhline(target, color=TARGET_COLOUR, linestyle="--", linewidth=1)
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        cost.yaxis.set_major_formatter(THOUSANDS)
        top = t.loc[t["lift_condition"] == cond, "exploration_cost"].max()
        cost.set_ylim(0, max(top, 0) * 1.15 + 1e-9)
        cost.grid(alpha=0.3)
        cost.set_xlabel("explore rate (share withheld)")
    axes[0, 0].set_ylabel("power (share of deployments\nwhose 95 % CI excludes 0)")
    axes[1, 0].set_ylabel("successes forgone\n(withheld x pool lift)")
    axes[0, -1].plot([], [], ":", marker="+", color="black", label="normal approx.")
    axes[0, -1].plot([], [], "--", color=TARGET_COLOUR, label=f"target {target:g}")
    legend_outside(axes[0, -1], "sessions")
    return fig


def by_estimator(t: pd.DataFrame, metric: str, estimators: list[str], ylabel: str,
                 reference: float | None = None) -> MplFigure:  # fmt: skip
    """``<e>_<metric>`` of each estimator against the explore rate at the most sessions,
    one panel per lift (proportions with Wilson intervals)."""
    conds = lifts(t)
    colours = palette(estimators)
    fig, axes = _panels(len(conds))
    top = int(t["sessions"].max())
    for j, cond in enumerate(conds):
        ax = axes[0, j]
        g = t[(t["lift_condition"] == cond) & (t["sessions"] == top)].sort_values("explore_rate")
        single = g["explore_rate"].nunique() == 1
        for k, e in enumerate(estimators):
            if f"{e}_{metric}" not in g:
                continue
            if single:  # one explore rate: the estimators side by side, one point per run
                x = np.full(len(g), float(k)) + np.linspace(-0.12, 0.12, len(g))
                style = {"fmt": "o"}
            else:
                x = g["explore_rate"] * (1 + 0.02 * (k - len(estimators) / 2))  # dodge
                style = {"marker": "o", "linestyle": "-", "linewidth": 1}
            _proportion(ax, x, g[f"{e}_{metric}"], g["replications"], colours[e], e, **style)
        if reference is not None:
            ax.axhline(reference, color=TARGET_COLOUR, linestyle="--", linewidth=1)
        lift = g["true_lift"].iloc[0] if len(g) else float("nan")
        title = f"true lift {readable(lift)}, {readable(top)} sessions"
        if single:
            title += f", explore rate {readable(g['explore_rate'].iloc[0])}"
            ax.set_xticks(range(len(estimators)), estimators, rotation=30, ha="right")
        else:
            ax.set_xlabel("explore rate (share withheld)")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel(ylabel)
    legend_outside(axes[0, -1], "estimator")
    return fig


def confidence_gap(t: pd.DataFrame) -> MplFigure:
    """How often the flat confidence sits on the wrong side of the threshold, per lift."""
    conds = lifts(t)
    colours = palette(t["sessions"].astype(str))
    fig, axes = _panels(len(conds))
    for j, cond in enumerate(conds):
        ax = axes[0, j]
        for n, g in t[t["lift_condition"] == cond].groupby("sessions", sort=True):
            g = g.sort_values("explore_rate")
            _proportion(ax, g["explore_rate"], g["confidence_wrong_side_rate"], g["replications"],
                        colours[str(n)], f"{readable(n)} sessions", marker="o")  # fmt: skip
        lift = t.loc[t["lift_condition"] == cond, "true_lift"].iloc[0]
        ax.set_title(f"true lift {readable(lift)}", fontsize=10)
        ax.set_ylim(0, 1)
        ax.set_xlabel("explore rate (share withheld)")
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("confidence on the wrong side\nof the threshold (share)")
    legend_outside(axes[0, -1], "sessions")
    return fig


PATH_STYLE = {
    "dim": ("fixed-n Newcombe interval, recomputed each session", "#d62728"),
    "cs_aipw": ("confidence sequence: normal mixture, AIPW", "#1f77b4"),
    "cs_eb_aipw": ("confidence sequence: empirical Bernstein, AIPW", "#2ca02c"),
}


def sequence_path(path: pd.DataFrame, run: pd.Series, methods: list[str]) -> MplFigure:
    """Left: one deployment's intervals after every session (``cs_path``), the pool's true
    lift dashed; right: the share of deployments in which the true lift ever left each
    interval when read after every session, against alpha (Wilson intervals)."""
    fig, (ax, bars) = new_figure(12.0, 4.2, ncols=2)
    for name, g in path.groupby("estimator", sort=False):
        label, colour = PATH_STYLE.get(name, (name, None))
        ax.fill_between(g["session"], g["low"].clip(-1, 1), g["high"].clip(-1, 1),
                        color=colour, alpha=0.18, step="post")  # fmt: skip
        ax.plot(g["session"], g["low"].clip(-1, 1), color=colour, linewidth=1, label=label)
        ax.plot(g["session"], g["high"].clip(-1, 1), color=colour, linewidth=1)
    ax.axhline(float(path["true_lift"].iloc[0]), color="black", linestyle="--", label="true lift")
    ax.axhline(0, color=TARGET_COLOUR, linewidth=0.8)
    ax.set_ylim(-1, 1)
    ax.xaxis.set_major_formatter(THOUSANDS)
    ax.set_xlabel("session")
    ax.set_ylabel("interval for the lift")
    ax.set_title("One deployment, read after every session", fontsize=10)
    ax.legend(fontsize=7, loc="upper right")
    ax.grid(alpha=0.3)
    names = [m for m in methods if f"{m}_monitor_miss_rate" in run]
    rates = pd.Series([float(run[f"{m}_monitor_miss_rate"]) for m in names])
    reps = pd.Series([float(run["replications"])] * len(names))
    below, above = wilson_bars(rates, reps)
    x = np.arange(len(names))
    bars.bar(x, rates, yerr=[below, above], capsize=4, color="#7f7f7f")
    bars.axhline(0.05, color=TARGET_COLOUR, linestyle="--", label="alpha 0.05")
    bars.set_xticks(x, [n.replace("dim", "fixed-n (dim)") for n in names], rotation=30,
                    ha="right", fontsize=8)  # fmt: skip
    bars.set_ylim(0, max(0.1, float((rates + pd.Series(above)).max()) * 1.1))
    bars.set_ylabel("true lift ever outside\n(share of deployments)")
    bars.set_title(f"{readable(run['replications'])} deployments of {readable(run['sessions'])} "
                   "sessions", fontsize=10)  # fmt: skip
    bars.legend(fontsize=7)
    return fig
