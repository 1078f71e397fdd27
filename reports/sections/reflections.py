"""Reflections: is the distill worker's pair a true contrast?

From the ``reflections`` scenario's runs: how often a pair's failed session followed the
harmful procedure (``true_contrast_rate``), how often it was also set against a success
of the helpful one (``opposite_pair_rate``), how often both followed the same procedure,
and what the offline model's reflections then told the agent. Exact values (where the
scenario is in its exact regime) are shown beside the simulated ones.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from reports.canvas import legend_outside, new_figure, palette, png_bytes
from reports.configs import label
from reports.document import Detail, Figure, Section, Table
from reports.evidence import fmt, fmt_metric
from reports.options import ReportOptions
from reports.sections import report_section
from reports.source import Sweep

RATES = {
    "true_contrast_rate": "failed session on the harmful procedure",
    "opposite_pair_rate": "... and the success on the helpful one",
    "same_procedure_rate": "both sessions on the same procedure",
    "same_task_rate": "both sessions on the same task",
    "lesson_helpful_rate": "first lesson: follow the helpful procedure",
    "lesson_harmful_rate": "first lesson: follow the harmful procedure",
    "junk_lesson_rate": "lessons naming no procedure",
}


SHOWN = ("true_contrast_rate", "opposite_pair_rate", "lesson_helpful_rate")
"""The shares the figure draws."""
MATCHED = {"situation": "task's situation", "text": "whole session text"}


def _runs(sweep: Sweep) -> tuple[pd.DataFrame, list[str]] | None:
    runs = sweep.scenario_runs("reflections")
    runs = runs[runs["status"] == "FINISHED"].reset_index(drop=True)
    if runs.empty or "true_contrast_rate" not in runs:
        return None
    swept = [
        p
        for p in sweep.param_names
        if p.startswith("params.scenario.") and runs[p].map(repr).nunique(dropna=False) > 1
    ]
    runs["setting"] = [label(r, swept, "as configured") for _, r in runs.iterrows()]
    return runs.sort_values("setting").reset_index(drop=True), swept


def _range(rows: pd.DataFrame, metric: str) -> str:
    rows = rows[rows[metric].notna()]
    if rows.empty:
        return "n/a"
    lo, hi = rows.loc[rows[metric].idxmin()], rows.loc[rows[metric].idxmax()]
    if len(rows) == 1 or lo[metric] == hi[metric]:
        return fmt_metric(lo, metric)
    return f"{fmt_metric(lo, metric)} to {fmt_metric(hi, metric)}"


def _answer(runs: pd.DataFrame) -> str:
    """One sentence per matching mode: the share of pairs that are a true contrast, how
    often both sides are one procedure, and the reflections that name the helpful one
    ("the same share" when it equals the pairs' share in every run)."""
    column = "params.scenario.match_on"
    by = dict(iter(runs.groupby(column))) if column in runs else {"as configured": runs}
    n = len(runs)
    lead = "In the one setting run" if n == 1 else f"Over {n} swept settings"
    parts = []
    for i, (match_on, whole) in enumerate(sorted(by.items())):
        # a setting whose worker formed no pair (no failure to set against a success) has
        # no shares (NaN): it is said, not read as a value or dropped unsaid
        g = whole[whole["opposite_pair_rate"].notna()]
        matching = (
            f"{lead + ', m' if i == 0 else 'M'}atching on the {MATCHED.get(match_on, match_on)}"
        )
        if g.empty:
            parts.append(f"{matching}, the worker formed no pair, so there is no share to read.")
            continue
        empty = len(whole) - len(g)
        none = f" ({empty} of the {len(whole)} settings formed no pair)" if empty else ""
        pairs = _range(g, "opposite_pair_rate")
        same = (g["lesson_helpful_rate"] == g["opposite_pair_rate"]).all()
        lessons = "the same share" if same else _range(g, "lesson_helpful_rate")
        parts.append(
            f"{matching}{none}, {pairs} of the worker's pairs set a failure "
            "on the harmful procedure against a success on the helpful one (both on the same "
            f"procedure in {_range(g, 'same_procedure_rate')}), and {lessons} of its "
            "reflections told the agent to follow the helpful procedure."
        )
    if all(p.endswith("no share to read.") for p in parts):
        return " ".join(parts)
    spread = "ranges over the settings, " if runs["opposite_pair_rate"].notna().sum() > 1 else ""
    return " ".join(parts)[:-1] + f" ({spread}± Monte Carlo SE)."


def _table(runs: pd.DataFrame) -> pd.DataFrame:
    out = pd.DataFrame({"setting": runs["setting"]})
    for m in RATES:
        out[m.replace("_", " ")] = [
            fmt_metric(r, m)
            + (
                f" (exact {fmt(r[f'{m}_exact'])})"
                if f"{m}_exact" in r and r[f"{m}_exact"] == r[f"{m}_exact"]
                else ""
            )
            for _, r in runs.iterrows()
        ]
    out["pairs per replication"] = [fmt_metric(r, "pairs") for _, r in runs.iterrows()]
    return out


def _figure(runs: pd.DataFrame) -> MplFigure:
    fig, (ax,) = new_figure(9.5, 4.2)
    shown = SHOWN
    colours = palette(RATES[m] for m in shown)
    x = np.arange(len(runs))
    width = 0.8 / len(shown)
    for i, m in enumerate(shown):
        pos = x + (i - (len(shown) - 1) / 2) * width
        ax.bar(
            pos,
            runs[m],
            width,
            yerr=1.96 * runs[f"{m}_se"].fillna(0),
            capsize=2,
            color=colours[RATES[m]],
            label=RATES[m],
        )
        if f"{m}_exact" in runs:
            ax.plot(pos, runs[f"{m}_exact"], "k_", ms=9, mew=2)
    ax.plot([], [], "k_", ms=9, mew=2, label="exact (where it applies)")
    ax.set_xticks(x, runs["setting"], rotation=30, ha="right", fontsize=6)
    ax.set(ylabel="share of the worker's pairs / reflections", ylim=(0, 1))
    ax.set_title(
        "Distill pairs: true contrasts and what the reflections said (bars: 95 % intervals)"
    )
    ax.grid(alpha=0.3, axis="y")
    legend_outside(ax)
    return fig


def reflections_section(sweep: Sweep) -> Section | None:
    found = _runs(sweep)
    if found is None:
        return None
    runs, _ = found
    blocks: list = [
        Table(
            "The distill worker's pairs and reflections per setting (value ± Monte Carlo SE; "
            "exact where the scenario's exact regime holds)",
            _table(runs),
        )
    ]
    if runs[list(SHOWN)].notna().to_numpy().any():  # no pair anywhere: no bar to draw
        blocks.append(
            Figure(
                "reflections_contrast",
                png_bytes(_figure(runs)),
                "Share of pairs whose failed session followed the harmful procedure, of pairs "
                "that also set it against a helpful-procedure success, and of reflections "
                "whose first lesson names the helpful procedure; black ticks: exact values.",
            )
        )
    blocks += [
        Detail(
            "The sessions are a loop-like world's (tasks with one helpful and one harmful "
            "procedure, a judge that is sometimes unsure); the model is the offline model, "
            "whose reflection is the line difference of the two sessions, so the lessons "
            "measure what the pairing hands a model, not what a real model would write."
        ),
    ]
    return Section(
        "reflections",
        "Reflections: is the distill worker's pair a true contrast",
        _answer(runs),
        blocks,
    )


@report_section("reflections", order=61)
def _reflections_report(sweep: Sweep, options: ReportOptions) -> Section | None:
    return reflections_section(sweep)
