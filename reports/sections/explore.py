"""Explore rate: how much to withhold, what it costs, and the withheld-vs-shown A/B tables."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure as MplFigure

from reports.canvas import (
    TARGET_COLOUR,
    legend_outside,
    new_figure,
    palette,
    png_bytes,
    simulated_points,
)
from reports.configs import Labelled, label_runs, show
from reports.document import Figure, Section, Table
from reports.evidence import fmt, fmt_metric
from reports.options import ReportOptions
from reports.recommend import recommend_explore
from reports.sections import report_section
from reports.source import Sweep, find_param

SEED_EXPLORE_RATE = 0.0
"""Loom's procedure_explore_rate default: nothing withheld, so no control arm at all."""
NOMINAL_COVERAGE = 0.95
Z95 = 1.959963984540054


def _effective(sweep: Sweep, rows: pd.DataFrame) -> dict[str, pd.Series]:
    """Explore settings as the job used them: ``explore.<k>`` when the explore group was
    selected (it overrides the scenario's own), else ``scenario.<k>``."""
    out = {}
    for name in sweep.param_names:
        parts = name.split(".")
        if len(parts) != 3 or parts[1] != "explore":
            continue
        own = rows[name]
        fallback = rows.get(f"params.scenario.{parts[2]}")
        value = own if fallback is None else own.where(own.notna(), fallback)
        out[parts[2]] = value
    return out


def _explore_runs(sweep: Sweep) -> Labelled | None:
    lab = label_runs(sweep, ("explore",), "explore", ("power", "exploration_cost"), "explore")
    sessions = find_param(sweep.param_names, "sessions", "scenario")
    if lab is None or sessions is None:
        return None
    settings = _effective(sweep, lab.rows)
    rate = settings.get("explore_rate")
    if rate is None:
        col = find_param(sweep.param_names, "explore_rate", "explore")
        rate = lab.rows[col] if col else None
    if rate is None or rate.isna().any():
        return None
    rows = lab.rows.assign(explore_rate=rate.astype(float), sessions=lab.rows[sessions].astype(int))
    # one recommendation per true lift and estimator settings
    varying = {k: v for k, v in settings.items() if k != "explore_rate" and v.nunique() > 1}
    world = [
        c for c in lab.condition_cols
        if c != sessions and c.split(".")[-1] not in settings and ".explore." not in c
    ]  # fmt: skip
    parts = [
        [f"{k}={show(v.iloc[i])}" for k, v in varying.items()]
        + [f"{c.split('.')[-1]}={show(rows.at[i, c])}" for c in world]
        for i in range(len(rows))
    ]
    lift = rows.get("true_lift")
    rows["lift_condition"] = [
        (f"true lift {lift.iloc[i]:.3g}" if lift is not None else "as configured")
        + (f" ({', '.join(p)})" if p else "")
        for i, p in enumerate(parts)
    ]
    return Labelled(rows, lab.config_cols, world, lab.reference_condition)


def _power_figure(t: pd.DataFrame, target: float, colours: dict) -> MplFigure:
    fig, (ax, ax_w) = new_figure(11.0, 4.2, ncols=2)
    cost_ax = ax.twinx()
    for n, g in t.groupby("sessions", sort=True):
        g = g.sort_values("explore_rate")
        c = colours[str(n)]
        rate = g["explore_rate"]
        simulated_points(
            ax, rate, g["power"], g["power_se"], c, f"power, {n} sessions", joined=True
        )
        if "power_formula" in g:
            ax.plot(
                rate,
                g["power_formula"],
                linestyle=":",
                marker="+",
                color=c,
                label=f"power, normal approx., {n} sessions",
            )
        cost_ax.plot(
            rate,
            g["exploration_cost"],
            linestyle="--",
            marker="x",
            color=c,
            label=f"cost, {n} sessions",
        )
        if "ci_width" in g:
            simulated_points(
                ax_w, rate, g["ci_width"], g["ci_width_se"], c, f"{n} sessions", joined=True
            )
    ax.axhline(target, color=TARGET_COLOUR, linestyle=":", label=f"target power {target:g}")
    ax.set_xlabel("explore rate (share of sessions withheld)")
    ax.set_ylabel("power: CI excludes 0 (probability)")
    ax.set_ylim(-0.02, 1.02)
    cost_ax.set_ylabel("exploration cost (successes forgone, dashed)")
    cost_ax.set_ylim(bottom=0)
    ax.set_title("Power: simulated (solid), normal approx. (dotted); cost (dashed)", fontsize=10)
    ax.grid(alpha=0.3)
    handles = ax.get_legend_handles_labels()[0] + cost_ax.get_legend_handles_labels()[0]
    ax.legend(handles=handles, fontsize=7, loc="best", framealpha=0.8)
    ax_w.set_xlabel("explore rate (share of sessions withheld)")
    ax_w.set_ylabel("95 % CI width of the lift (probability)")
    ax_w.set_ylim(bottom=0)
    ax_w.set_title("Width of the lift's confidence interval")
    ax_w.grid(alpha=0.3)
    legend_outside(ax_w, "sessions")
    return fig


def _coverage_figure(t: pd.DataFrame, estimators: list[str]) -> MplFigure:
    fig, (ax,) = new_figure(8.5, 4.0)
    colours = palette(estimators)
    for e in estimators:
        g = t.sort_values("explore_rate")
        simulated_points(
            ax,
            g["explore_rate"],
            g[f"{e}_coverage"],
            g[f"{e}_coverage_se"],
            colours[e],
            e,
            joined=True,
        )
    ax.axhline(NOMINAL_COVERAGE, color=TARGET_COLOUR, linestyle=":", label="nominal 0.95")
    ax.set_xlabel("explore rate (share of sessions withheld)")
    ax.set_ylabel("CI coverage of the true lift (probability)")
    ax.set_title("Coverage of each estimator's 95 % interval")
    ax.grid(alpha=0.3)
    legend_outside(ax, "estimator")
    return fig


def _confidence_figure(t: pd.DataFrame, colours: dict) -> MplFigure:
    fig, (ax,) = new_figure(8.5, 4.0)
    for n, g in t.groupby("sessions", sort=True):
        g = g.sort_values("explore_rate")
        simulated_points(
            ax,
            g["explore_rate"],
            g["confidence_wrong_side_rate"],
            g["confidence_wrong_side_rate_se"],
            colours[str(n)],
            f"{n} sessions",
            joined=True,
        )
    ax.set_xlabel("explore rate (share of sessions withheld)")
    ax.set_ylabel("confidence on the wrong side (probability)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("How often the confidence score contradicts the true effect's sign")
    ax.grid(alpha=0.3)
    legend_outside(ax, "sessions")
    return fig


def explore_section(sweep: Sweep, target_power: float) -> Section | None:
    """Smallest explore rate reaching the target power, per true lift, with the evidence."""
    lab = _explore_runs(sweep)
    if lab is None:
        return None
    rows = lab.rows
    reps = find_param(sweep.param_names, "replications", "scenario")
    if reps:
        rows = rows.assign(replications=rows[reps])
    recs = {}
    for cond, g in rows.groupby("lift_condition", sort=True):
        recs[cond] = recommend_explore(g.reset_index(drop=True), target_power)
    lifts = rows.groupby("lift_condition")["true_lift"].first() if "true_lift" in rows else None
    positive = [c for c in recs if lifts is None or lifts[c] > 0]
    head = (
        min(positive, key=lambda c: lifts[c])
        if positive and lifts is not None
        else next(iter(recs))
    )
    answer = recs[head].sentence
    if len(recs) > 1:
        answer = f"For the hardest swept case ({head}): " + answer[0].lower() + answer[1:]
    table = pd.DataFrame(
        [
            {
                "condition": cond,
                "reaches target": r.feasible,
                "explore rate": r.pick["explore_rate"],
                "sessions": int(r.pick["sessions"]),
                "power": fmt(r.pick["power"], r.pick.get("power_se")),
                "power, normal approx.": r.pick.get("power_formula", float("nan")),
                "sessions for target power, normal approx.": r.pick.get(
                    "sessions_for_target_power", float("nan")
                ),
                "cost (successes forgone)": fmt(
                    r.pick["exploration_cost"], r.pick.get("exploration_cost_se")
                ),
                "replications": r.pick.get("replications", ""),
            }
            for cond, r in recs.items()
        ]
    )
    blocks: list = [
        Table(f"Smallest explore rate reaching power {target_power:g} per true lift", table),
        f"The seeds' default explore rate is {SEED_EXPLORE_RATE:g}: no session is withheld, so "
        "there is no control arm and the lift cannot be estimated at all (power 0).",
    ]
    if reps:
        blocks.append(
            f"Each point rests on {show(rows[reps].iloc[0])} replications; bars and "
            "± are Monte Carlo standard errors (figures: 95 % intervals)."
        )
    t = rows[rows["lift_condition"] == head]
    colours = palette(t["sessions"].astype(str))
    blocks.append(
        Figure(
            "explore_power_cost",
            png_bytes(_power_figure(t, target_power, colours)),
            f"Power, cost and CI width against the explore rate ({head}).",
        )
    )
    estimators = sorted(
        m[: -len("_coverage")]
        for m in sweep.metric_names
        if m.endswith("_coverage") and m != "coverage" and f"{m}_se" in sweep.metric_names
    )
    if estimators:
        biggest = t[t["sessions"] == t["sessions"].max()]
        blocks.append(
            Figure(
                "explore_coverage",
                png_bytes(_coverage_figure(biggest, estimators)),
                f"Coverage of each estimator at {int(t['sessions'].max())} sessions "
                f"({head}); the dotted line is the nominal level.",
            )
        )
    if "confidence_wrong_side_rate" in t:
        blocks.append(
            Figure(
                "explore_confidence_gap",
                png_bytes(_confidence_figure(t, colours)),
                "The flat confidence score is updated only when the procedure is "
                "shown, with no control: how often it sits on the wrong side of "
                "the threshold for the procedure's true effect.",
            )
        )
    if "confidence_lift_correlation" in t:
        r = t.sort_values(["sessions", "explore_rate"]).iloc[-1]
        blocks.append(
            f"Across replications, the final confidence score correlates with the true lift "
            f"at r = {fmt_metric(r, 'confidence_lift_correlation')} ({int(r['sessions'])} "
            f"sessions, explore rate {r['explore_rate']:g}): the score is not an estimate "
            "of the effect; the withheld-vs-shown comparison is."
        )
    return Section("explore", "Explore rate: how much to withhold", answer, blocks)


@report_section("explore", order=40)
def _explore_report(sweep: Sweep, options: ReportOptions) -> Section | None:
    return explore_section(sweep, options.target_power)
