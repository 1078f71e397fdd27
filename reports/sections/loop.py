"""The closed loop: does the whole engine end up with the right procedures and revisions?"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from reports.canvas import legend_outside, new_figure, palette, png_bytes
from reports.configs import label_runs
from reports.document import Figure, Section, Table
from reports.evidence import fmt_metric
from reports.options import ReportOptions
from reports.sections import report_section
from reports.source import Sweep

LOOP_METRICS = (
    "success_rate",
    "success_rate_early",
    "success_rate_late",
    "oracle_success_rate",
    "regret",
    "correct_verdict_rate",
    "wrong_revert_rate",
    "missed_harmful_rate",
    "quarantines",
    "templates_promoted",
)
VERDICT_METRICS = {
    "correct_verdict_rate": "right verdicts",
    "wrong_revert_rate": "harmless revisions reverted",
    "missed_harmful_rate": "harmful revisions accepted",
}
MAX_LINES = 8


def _over_time(traj: pd.DataFrame, names: dict[str, str], colours: dict) -> MplFigure:
    fig, (ax,) = new_figure(8.5, 4.2)
    t = traj.assign(config=traj["run_id"].map(names))
    for cfg, g in t.groupby("config", sort=True):
        m = g.groupby("session_start").agg(
            success=("success_rate", "mean"),
            sd=("success_rate", "std"),
            n=("success_rate", "size"),
            oracle=("oracle_success_rate", "mean"),
        )
        se = (m["sd"] / np.sqrt(m["n"])).fillna(0)
        c = colours[cfg]
        ax.plot(m.index, m["success"], color=c, marker="o", ms=3, label=cfg)
        ax.fill_between(
            m.index, m["success"] - 1.96 * se, m["success"] + 1.96 * se, color=c, alpha=0.15
        )
        ax.plot(m.index, m["oracle"], color=c, linestyle=":", linewidth=1)
    ax.plot([], [], color="black", linestyle=":", label="oracle (best procedure)")
    ax.set_xlabel("session (start of window)")
    ax.set_ylabel("success rate in the window (probability)")
    ax.set_ylim(0, 1)
    ax.set_title("Success rate over time (bands: 95 % intervals over replications)")
    ax.grid(alpha=0.3)
    legend_outside(ax, "configuration")
    return fig


def _bars(rows: pd.DataFrame, metrics: dict[str, str], ylabel: str, title: str) -> MplFigure:
    fig, (ax,) = new_figure(8.5, 4.2)
    configs = list(rows["config"])
    width = 0.8 / len(metrics)
    colours = palette(metrics.values())
    for i, (m, name) in enumerate(metrics.items()):
        if m not in rows:
            continue
        x = np.arange(len(configs)) + (i - (len(metrics) - 1) / 2) * width
        se = rows[f"{m}_se"].fillna(0) if f"{m}_se" in rows else 0
        ax.bar(
            x, rows[m].fillna(0), width, yerr=1.96 * se, capsize=3, color=colours[name], label=name
        )
    ax.set_xticks(range(len(configs)), configs, rotation=20, ha="right", fontsize=7)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3, axis="y")
    legend_outside(ax)
    return fig


def loop_section(sweep: Sweep) -> Section | None:
    """Success over time, gate verdicts right and wrong, quarantines and templates."""
    lab = label_runs(sweep, ("loop",), "gate", ("success_rate",), "loop")
    if lab is None:
        return None
    if lab.condition_cols:
        rows = lab.rows.assign(
            config=[
                f"{a}; {b}" if lab.config_cols else b
                for a, b in zip(lab.rows["config"], lab.rows["condition"], strict=True)
            ]
        )
    else:
        rows = lab.rows
    rows = rows.sort_values("config").reset_index(drop=True)
    best = rows.loc[rows["success_rate"].idxmax()]
    which = (
        f"best configuration {best['config']}" if len(rows) > 1 else "at the configured settings"
    )
    answer = (
        f"Closed loop, {which}: success rate "
        f"{fmt_metric(best, 'success_rate_early')} in the first quarter of sessions and "
        f"{fmt_metric(best, 'success_rate_late')} in the last, against "
        f"{fmt_metric(best, 'oracle_success_rate')} for an oracle that always picks the best "
        "procedure"
    )
    if "correct_verdict_rate" in best and not np.isnan(best["correct_verdict_rate"]):
        answer += f"; the gates' verdicts were right in {fmt_metric(best, 'correct_verdict_rate')}"
    answer += " of decided revisions." if "correct_verdict_rate" in best else "."
    table = pd.DataFrame({"configuration": rows["config"]})
    for m in LOOP_METRICS:
        if m in rows:
            table[m.replace("_", " ")] = [fmt_metric(r, m) for _, r in rows.iterrows()]
    blocks: list = [
        Table("Closed-loop metrics per configuration (value ± SE over replications)", table)
    ]
    shown = rows.head(MAX_LINES)
    colours = palette(shown["config"])
    traj = sweep.table("trajectory", list(shown["run_id"]))
    if not traj.empty and {"session_start", "success_rate"} <= set(traj.columns):
        names = dict(zip(shown["run_id"], shown["config"], strict=True))
        blocks.append(
            Figure(
                "loop_success_over_time",
                png_bytes(_over_time(traj, names, colours)),
                "Success rate per window of sessions; dotted: the oracle.",
            )
        )
    if any(m in rows for m in VERDICT_METRICS):
        blocks.append(
            Figure(
                "loop_gate_verdicts",
                png_bytes(
                    _bars(
                        shown,
                        VERDICT_METRICS,
                        "share of decided revisions (probability)",
                        "Gate verdicts against the known truth",
                    )
                ),
                "Right and wrong gate verdicts on revisions of known true effect "
                "(bars: 95 % intervals).",
            )
        )
    events = {"quarantines": "quarantines", "templates_promoted": "templates promoted"}
    if any(m in rows for m in events):
        blocks.append(
            Figure(
                "loop_quarantines_templates",
                png_bytes(
                    _bars(
                        shown,
                        events,
                        "events per replication (count)",
                        "Quarantines and template promotions",
                    )
                ),
                "Procedures quarantined and promoted to template per "
                "replication (bars: 95 % intervals).",
            )
        )
    return Section(
        "loop", "Closed loop: does the engine learn the right procedures", answer, blocks
    )


@report_section("loop", order=50)
def _loop_report(sweep: Sweep, options: ReportOptions) -> Section | None:
    return loop_section(sweep)
