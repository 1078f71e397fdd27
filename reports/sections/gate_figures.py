"""Figures of the gate section: operating characteristics, cost in runs, error trade-off.

Inputs are tidy tables (one row per configuration and true drop) so the figures can be
drawn from hand-made data as well as from a sweep:

- ``points``: ``config, drop, p_revert, p_revert_se, mean_runs, mean_runs_se`` (simulated);
- ``exact``: ``config, drop, p_revert, expected_runs`` (each gate's own exact recursion);
- ``bounds``: ``config, drop, bound`` (Wald-Wolfowitz lower bound on expected runs at the
  gate's achieved error rates);
- ``curves``: ``config, ledger, p0, p_revert`` (exact false revert against p0).

Reference lines are drawn where a target or design value is known (``Refs``); a line never
joins categorical x values (a factor with a "p0 known" level is drawn as points).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from reports.canvas import (
    EXACT_STYLE,
    TARGET_COLOUR,
    legend_outside,
    new_figure,
    simulated_points,
)
from reports.claims import COINCIDE_TOL, coinciding, overlay_style
from reports.configs import show

Colours = dict[str, tuple]
REF_STYLE = {"color": TARGET_COLOUR, "linewidth": 1.0}


@dataclass(frozen=True)
class Refs:
    """Targets drawn as reference lines: false revert ``alpha``, power ``1 - beta``, the
    drop the gates are designed to catch."""

    alpha: float
    beta: float
    min_drop: float | None


def curve_groups(table: pd.DataFrame, x: str, y: str) -> list[tuple]:
    """Configurations whose curves ``y`` against ``x`` coincide (``reports.claims.coinciding``
    at ``COINCIDE_TOL`` of the y axis' extent, ``max(1, largest y)``: a probability's axis
    is [0, 1]): the figures draw them distinguishably and the captions say so."""
    if table.empty:
        return []
    wide = table.pivot_table(index=x, columns="config", values=y, aggfunc="first", sort=True)
    extent = max(1.0, float(np.nanmax(np.abs(wide.to_numpy(dtype=float)))))
    curves = {str(c): wide[c].to_numpy() for c in sorted(wide.columns)}
    return coinciding(curves, COINCIDE_TOL * extent)


def drawn_groups(points: pd.DataFrame, exact: pd.DataFrame, y: str) -> list[tuple]:
    """``curve_groups`` of the exact curves drawn beside ``points`` (their configurations)."""
    if exact.empty or points.empty:
        return []
    return curve_groups(exact[exact["config"].isin(set(points["config"]))], "drop", y)


def _simulated_and_exact(ax, g: pd.DataFrame, exact: pd.DataFrame, y: str, exact_y: str,
                         label: str, colour, groups: list[tuple]) -> None:  # fmt: skip
    """Simulated points of one configuration and its own exact curve, each in the legend;
    a curve coinciding with another's drawn with its own dash and marker."""
    style = overlay_style(label, groups)
    simulated_points(ax, g["drop"], g[y], g[f"{y}_se"], colour, f"{label} (simulated)")
    curve = exact[exact["config"] == label].sort_values("drop") if not exact.empty else exact
    if not curve.empty:
        ax.plot(curve["drop"], curve[exact_y], color=colour, **(EXACT_STYLE | style),
                label=f"{label} (exact, its own recursion)")  # fmt: skip


def oc_figure(
    points: pd.DataFrame, exact: pd.DataFrame, colours: Colours, refs: Refs | None = None
) -> Figure:
    """Probability of revert against the true drop: simulated ± 1.96 SE, each gate's exact
    curve over its points, reference lines at alpha, 1 - beta and min_drop."""
    fig, (ax,) = new_figure(8.5, 4.4)
    groups = drawn_groups(points, exact, "p_revert")
    for label, g in points.groupby("config", sort=True):
        _simulated_and_exact(ax, g, exact, "p_revert", "p_revert", str(label),
                             colours[str(label)], groups)  # fmt: skip
    if refs is not None:
        ax.axhline(refs.alpha, linestyle=":", **REF_STYLE, label=f"alpha = {refs.alpha:g}")
        power = 1 - refs.beta
        ax.axhline(power, linestyle="--", **REF_STYLE, label=f"1 - beta = {power:g}")
        if refs.min_drop is not None:
            ax.axvline(refs.min_drop, linestyle="-.", **REF_STYLE,
                       label=f"min_drop = {refs.min_drop:g}")  # fmt: skip
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
    groups = drawn_groups(points, exact, "expected_runs")
    for label, g in points.groupby("config", sort=True):
        c = colours[str(label)]
        _simulated_and_exact(ax, g, exact, "mean_runs", "expected_runs", str(label), c, groups)
        if not bounds.empty:
            b = bounds[bounds["config"] == label]
            ax.plot(b["drop"], b["bound"], marker="v", color=c, ms=7, linestyle="none")
    if not bounds.empty:
        ax.plot([], [], color="black", marker="v", linestyle="none",
                label="Wald-Wolfowitz bound at the gate's achieved error rates")  # fmt: skip
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
    groups = tradeoff_groups(table)
    ax.fill_between([0, fr_t], 0, mr_t, color=TARGET_COLOUR, alpha=0.15, label="within targets")
    for _, r in table.sort_values("config").iterrows():
        label = str(r["config"])
        shown = label in highlight
        ax.errorbar(
            r["false_revert_rate"],
            r["missed_regression_rate"],
            xerr=1.96 * np.nan_to_num(r.get("false_revert_rate_se", 0.0)),
            yerr=1.96 * np.nan_to_num(r.get("missed_regression_rate_se", 0.0)),
            fmt=overlay_style(label, groups).get("marker", "o"),
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
    numeric = all(_sort_key(lv)[0] == 1 for lv in levels)  # categories are never joined
    configs = sorted(table["config"].astype(str).unique())
    dodge = {c: (i - (len(configs) - 1) / 2) * DODGE / max(len(configs), 1)
             for i, c in enumerate(configs)}  # fmt: skip
    for ax, metric, name in zip(
        axes,
        ("false_revert_rate", "missed_regression_rate"),
        ("false revert rate (probability)", "missed regression rate (probability)"),
        strict=True,
    ):
        for cfg, g in table.groupby("config", sort=True):
            level = g[factor].map(lambda v: _level(v, none_label)).map(pos)
            g = g.assign(_x=level + dodge[str(cfg)]).sort_values("_x")
            simulated_points(
                ax, g["_x"], g[metric], g[f"{metric}_se"], colours[str(cfg)], str(cfg),
                joined=numeric,
            )  # fmt: skip
        ax.set_xticks(range(len(levels)), levels)
        ax.set_xlabel(label)
        ax.set_ylabel(name)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0].set_title(f"False reverts by {label}")
    axes[1].set_title(f"Missed regressions by {label}")
    legend_outside(axes[1], "gate configuration")
    return fig


DODGE = 0.3
"""Spread (in level widths) over which the configurations at one level are set side by
side, so equal points never hide one another."""


def tradeoff_groups(table: pd.DataFrame) -> list[tuple]:
    """Configurations whose worst-case (false revert, missed regression) points coincide
    (``reports.claims.coinciding``): drawn with their own markers, and said in the caption."""
    pts = {
        str(r["config"]): [r["false_revert_rate"], r["missed_regression_rate"]]
        for _, r in table.sort_values("config").iterrows()
    }
    return coinciding(pts)


def _level(value: object, none_label: str) -> str:
    return none_label if value is None or value != value else show(value)


def _sort_key(text: str) -> tuple[int, float | str]:
    try:
        return (1, float(text))
    except ValueError:
        return (0, text)


def worst_case_figure(curves: pd.DataFrame, colours: Colours, alpha: float) -> Figure:
    """Exact false-revert rate at no change against the prior's true rate p0, per gate (its
    ledger mixed in exactly); the largest value of each curve is marked: its worst case,
    named in the legend with its conditions (``worst_name``). Coinciding curves
    (``curve_groups``) are drawn with their own dash and marker."""
    fig, (ax,) = new_figure(8.5, 4.4)
    groups = curve_groups(curves, "p0", "p_revert")
    for label, g in curves.groupby("config", sort=True):
        g = g.sort_values("p0")
        c = colours[str(label)]
        style = EXACT_STYLE | overlay_style(str(label), groups)
        ax.plot(g["p0"], g["p_revert"], color=c, **style, label=worst_name(str(label), g))
        top = g.loc[g["p_revert"].idxmax()]
        ax.plot(top["p0"], top["p_revert"], marker="^", color=c, ms=7, linestyle="none")
    ax.axhline(alpha, linestyle=":", **REF_STYLE, label=f"alpha = {alpha:g}")
    ax.plot([], [], marker="^", color="black", linestyle="none", label="worst case (largest)")
    ax.set_xlabel("the prior's true success rate p0 (probability)")
    ax.set_ylabel("false revert rate (probability, no change)")
    ax.set_ylim(bottom=0)
    ax.set_title("Worst case over the nuisance: exact false reverts at every p0")
    ax.grid(alpha=0.3)
    legend_outside(ax, "gate configuration")
    return fig


def worst_name(label: str, g: pd.DataFrame) -> str:
    """A worst-case curve's legend entry with the conditions its number holds at:
    ``"SPRT, min runs 3, max runs 50 (ledger 20): worst 0.265 at p0 0.31"``."""
    ledger = g["ledger"].iloc[0]
    where = "p0 known" if ledger == "p0 known" else f"ledger {ledger}"
    top = g.loc[g["p_revert"].idxmax()]
    return f"{label} ({where}): worst {top['p_revert']:.3f} at p0 {top['p0']:.2f}"


def frontier_figure(points: pd.DataFrame, chosen: int, bound: float | None) -> Figure:
    """The design frontier: per cap (``max_runs``) the worst expected pairs when nothing
    changed and at the drop of its best configuration; the chosen cap marked, and the
    Wald-Wolfowitz bound on pairs when nothing changed at the chosen gate's error rates.

    ``points``: ``max_runs, runs_null, runs_alt`` (``FrontierPoint`` rows)."""
    fig, (ax,) = new_figure(8.5, 4.6)
    ax.plot(points["max_runs"], points["runs_null"], "o-", label="when nothing changed")
    ax.plot(points["max_runs"], points["runs_alt"], "s--", label="at the drop")
    ax.axvline(chosen, **REF_STYLE, linestyle=":", label=f"prescribed cap ({chosen})")
    if bound is not None:
        ax.axhline(bound, color="black", linewidth=1, label="Wald-Wolfowitz bound, nothing changed")
    ax.set_xlabel("max_runs (pairs the gate may read)")
    ax.set_ylabel("expected pairs to a decision (worst p0)")
    ax.set_ylim(bottom=0)
    ax.set_title("Design frontier: the cap against the expected pairs (exact, search grid)")
    ax.grid(alpha=0.3)
    legend_outside(ax, "expected pairs")
    return fig
