"""Figures of the closed-loop section: success and regret over time, revision outcomes,
session outcomes, and the regret by source in the first and last quarter."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from reports.canvas import legend_outside, new_figure, palette, png_bytes
from reports.document import Figure
from reports.source import Sweep

REVISION_METRICS = {
    "correct_verdict_rate": "right verdicts (of decided)",
    "wrong_revert_rate": "harmless revisions reverted",
    "missed_harmful_rate": "harmful revisions accepted",
    "stranded_revision_rate": "stranded: pending on a quarantined procedure (of proposed)",
}
SESSION_METRICS = {
    "off_task_rate": "off task (another task's procedure on top)",
    "withheld_rate": "withheld (explore rate)",
    "prior_served_rate": "prior served (concurrent control)",
}
MAX_LINES = 8
SHORT = {"concurrent_share": "q", "strike_limit": "strike", "utility_weight": "utility",
         "explore_rate": "explore"}  # fmt: skip


def short_label(config: str) -> str:
    """A configuration label for a figure: without its condition (a figure is drawn at one
    condition, named in its caption) and with the loop's long setting names shortened."""
    head = config.split("; ")[0]
    for long, short in SHORT.items():
        head = head.replace(f"{long}=", f"{short}=")
    return head


def over_time(traj: pd.DataFrame, names: dict[str, str], colours: dict) -> MplFigure:
    """Success rate (left) and regret (right) per window, mean over replications with 95 %
    bands; dotted on the left: the oracle."""
    fig, (ax, bx) = new_figure(11.0, 4.2, ncols=2)
    t = traj.assign(config=traj["run_id"].map(names))
    colours = {short_label(k): v for k, v in colours.items()}
    t["config"] = t["config"].map(short_label)
    for cfg, g in t.groupby("config", sort=True):
        m = g.groupby("session_start").agg(
            success=("success_rate", "mean"),
            sd=("success_rate", "std"),
            regret=("regret", "mean"),
            rsd=("regret", "std"),
            n=("success_rate", "size"),
            oracle=("oracle_success_rate", "mean"),
        )
        c = colours[cfg]
        for axis, mean, sd in ((ax, "success", "sd"), (bx, "regret", "rsd")):
            se = (m[sd] / np.sqrt(m["n"])).fillna(0)
            axis.plot(m.index, m[mean], color=c, marker="o", ms=3, label=cfg)
            low, high = m[mean] - 1.96 * se, m[mean] + 1.96 * se
            axis.fill_between(m.index, low, high, color=c, alpha=0.15)
        ax.plot(m.index, m["oracle"], color=c, linestyle=":", linewidth=1)
    ax.plot([], [], color="black", linestyle=":", label="oracle (best procedure)")
    ax.set_ylabel("success rate in the window (probability)")
    ax.set_ylim(0, 1)
    bx.set_ylabel("regret per session (expected successes lost)")
    bx.axhline(0, color="gray", linewidth=0.8)
    for axis in (ax, bx):
        axis.set_xlabel("session (start of window)")
        axis.grid(alpha=0.3)
    ax.set_title("Success rate over time")
    bx.set_title("Regret over time (bands: 95 % intervals)")
    legend_outside(bx, "configuration")
    return fig


def bars(rows: pd.DataFrame, metrics: dict[str, str], ylabel: str, title: str) -> MplFigure | None:
    """Grouped bars per configuration with 95 % error bars from each metric's SE; None
    when no metric has a finite non-zero value (every bar would be missing or of height
    0: a blank figure under a caption describing bars; short runs that decide no revision
    give that). A missing value draws no bar (not a bar at 0)."""
    present = [m for m in metrics if m in rows]
    values = rows[present].to_numpy(dtype=float) if present else np.empty((0, 0))
    if not (np.isfinite(values) & (values != 0)).any():
        return None
    fig, (ax,) = new_figure(9.5, 4.2)
    configs = [short_label(c) for c in rows["config"]]
    width = 0.8 / len(metrics)
    colours = palette(metrics.values())
    for i, (m, name) in enumerate(metrics.items()):
        if m not in present:
            continue
        x = np.arange(len(configs)) + (i - (len(metrics) - 1) / 2) * width
        se = rows[f"{m}_se"].fillna(0) if f"{m}_se" in rows else 0
        ax.bar(x, rows[m], width, yerr=1.96 * se, capsize=3, color=colours[name], label=name)
    ax.set_xticks(range(len(configs)), configs, rotation=25, ha="right", fontsize=7)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3, axis="y")
    legend_outside(ax)
    return fig


def sources_bars(by_config: dict[str, pd.DataFrame]) -> MplFigure | None:
    """Stacked regret per session by source, first vs last quarter, per configuration;
    None when no source has positive regret (nothing to stack)."""
    if not any((t["regret"] > 0).any() for t in by_config.values()):
        return None
    fig, (ax,) = new_figure(10.0, 4.6)
    all_sources = list(dict.fromkeys(s for t in by_config.values() for s in t["source"]))
    colours = palette(all_sources)
    labels, x = [], 0
    for cfg, t in by_config.items():
        for period in ("early", "late"):
            bottom = 0.0
            for source in all_sources:
                v = t[(t["source"] == source) & (t["period"] == period)]["regret"]
                h = float(v.iloc[0]) if len(v) else 0.0
                if h > 0:
                    new = source not in ax.get_legend_handles_labels()[1]
                    label = source if new else None
                    ax.bar(x, h, 0.8, bottom=bottom, color=colours[source], label=label)
                bottom += h
            x += 1
        labels.append(f"{short_label(cfg)}\nfirst | last quarter")
        x += 0.5
    ticks = [2.5 * j + 0.5 for j in range(len(labels))]
    ax.set_xticks(ticks, labels, rotation=25, ha="right", fontsize=7)
    ax.set_ylabel("regret per session (expected successes lost)")
    ax.set_title("Where the regret comes from: first vs last quarter of sessions")
    ax.grid(alpha=0.3, axis="y")
    legend_outside(ax, "source")
    return fig


def section_figures(sweep: Sweep, rows: pd.DataFrame, per_run_sources: dict) -> list:
    """The section's figures for its reference rows (at most ``MAX_LINES`` configurations):
    success and regret over time, verdicts and where sessions went, regret by source."""
    shown = rows[rows["at_reference"]].head(MAX_LINES)
    where = (
        f" Drawn at {shown['config'].iloc[0].split('; ')[-1]}."
        if "; " in shown["config"].iloc[0]
        else ""
    )
    success = _success_figure(sweep, shown, where)
    blocks: list = [success] if success is not None else []
    blocks += _verdict_and_session_figures(shown, where)
    sources = _sources_figure(shown, per_run_sources, where)
    return blocks + ([sources] if sources is not None else [])


def _success_figure(sweep: Sweep, shown: pd.DataFrame, where: str) -> Figure | None:
    """Success rate and regret per window of sessions, one line per shown config."""
    traj = sweep.table("trajectory", list(shown["run_id"]))
    if traj.empty or not {"session_start", "regret"} <= set(traj.columns):
        return None
    names = dict(zip(shown["run_id"], shown["config"], strict=True))
    return Figure(
        "loop_success_over_time",
        png_bytes(over_time(traj, names, palette(shown["config"]))),
        "Success rate (dotted: the oracle) and regret per window of sessions; bands: 95 % "
        "intervals over replications." + where,
    )


def _verdict_and_session_figures(shown: pd.DataFrame, where: str) -> list[Figure]:
    """The gate's verdicts on revisions of known effect, and where sessions went."""
    verdicts = bars(
        shown,
        REVISION_METRICS,
        "share (probability)",
        "Revisions: gate verdicts against the known truth, and stranded",
    )
    verdicts_caption = (
        "Right and wrong verdicts on revisions of known true effect, and revisions left "
        "pending on a quarantined procedure (bars: 95 % intervals over replications; none "
        "where every replication gave the same share: the replications then give no "
        "interval, not certainty)." + where
    )
    outcomes = bars(
        shown,
        SESSION_METRICS,
        "share of sessions (probability)",
        "Sessions off task, withheld, and served the prior",
    )
    outcomes_caption = (
        "Where sessions went instead of the task's own current procedure (95 % intervals)." + where
    )
    figures = [
        Figure("loop_gate_verdicts", png_bytes(verdicts), verdicts_caption)
        if verdicts is not None  # short runs may decide no revision at all
        else None,
        Figure("loop_session_outcomes", png_bytes(outcomes), outcomes_caption, detail=True)
        if outcomes is not None
        else None,
    ]
    return [f for f in figures if f is not None]


def _sources_figure(shown: pd.DataFrame, per_run_sources: dict, where: str) -> Figure | None:
    """Regret per session by source for the shown configs whose sources were logged."""
    by_config = {
        r["config"]: per_run_sources[r["run_id"]]
        for _, r in shown.iterrows()
        if r["run_id"] in per_run_sources
    }
    fig = sources_bars(by_config) if by_config else None
    if fig is None:
        return None
    return Figure(
        "loop_regret_sources",
        png_bytes(fig),
        "Regret per session by source, first and last quarter of sessions (means over "
        "replications)." + where,
    )
