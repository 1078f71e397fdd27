"""The gate section: which revision gate to use, and the evidence (OC, runs, errors, factors)."""

from __future__ import annotations

import pandas as pd

from reports.canvas import palette, png_bytes
from reports.configs import at_reference, label
from reports.document import Figure, Section, Table
from reports.evidence import NOISE_Z, fmt, fmt_metric, worst_case
from reports.options import ReportOptions
from reports.recommend import GATE_METRICS, GateTargets, Recommendation, recommend_gate
from reports.sections import report_section
from reports.sections.gate_figures import factor_figure, oc_figure, runs_figure, tradeoff_figure
from reports.sections.gate_tables import (
    GateRuns,
    efficient_frontier,
    exact_curves,
    gate_runs,
    operating_points,
)
from reports.source import Sweep
from reports.summary import short_name

MAX_HIGHLIGHT = 8
FACTOR_NAMES = {
    "at_cap": "cap rule at max_runs",
    "ledger_size": "prior's ledger size (runs)",
    "heterogeneity": "user heterogeneity",
}


def _highlight(rec: Recommendation, frontier: list[str]) -> tuple[str, ...]:
    """Every configuration when few; else recommended, default, ties and frontier."""
    if len(rec.ranked) <= MAX_HIGHLIGHT:
        return tuple(str(x) for x in rec.ranked["config"])
    chosen = [rec.label]
    if rec.default is not None:
        chosen.append(str(rec.default["config"]))
    chosen += list(rec.tied_with) + frontier
    out: list[str] = []
    for c in chosen:
        if c not in out:
            out.append(c)
    return tuple(out[:MAX_HIGHLIGHT])


def _evidence_table(rec: Recommendation, gates: GateRuns) -> pd.DataFrame:
    rows = []
    same = rec.default is not None and rec.default["config"] == rec.pick["config"]
    pairs = [("recommended = seeds' default" if same else "recommended", rec.pick)]
    if rec.default is not None and not same:
        pairs.append(("seeds' default", rec.default))
    for role, r in pairs:
        row = {"role": role, "configuration": r["config"]}
        for m in GATE_METRICS:
            row[m.replace("_", " ")] = fmt_metric(r, m)
        row["conditions"] = int(r.get("conditions", 1))
        reps = r.get("replications")
        row["replications per run"] = "" if reps is None or reps != reps else int(reps)
        rows.append(row)
    return pd.DataFrame(rows)


def _per_condition_table(
    rows: pd.DataFrame, targets: GateTargets, default: str | None
) -> pd.DataFrame:
    """``recommend_gate`` run on each condition's rows alone."""
    out = []
    for cond, g in rows.groupby("condition", sort=True):
        here = default if default in set(g["config"]) else None
        rec = recommend_gate(g.reset_index(drop=True), targets, "config", here)
        row = {"condition": cond, "meets targets": rec.feasible, "pick": rec.label}
        for m in GATE_METRICS:
            row[m.replace("_", " ")] = fmt_metric(rec.pick, m)
        row["differs from default beyond noise"] = (
            "" if here is None or here == rec.label else rec.differs_beyond_noise
        )
        row["tied with"] = ", ".join(rec.tied_with)
        out.append(row)
    return pd.DataFrame(out)


def _ranked_table(rec: Recommendation, limit: int = 12) -> pd.DataFrame:
    t = rec.ranked.head(limit)
    out = pd.DataFrame({"configuration": t["config"], "meets targets": t["feasible"]})
    for m in GATE_METRICS:
        out[m.replace("_", " ")] = [fmt_metric(r, m) for _, r in t.iterrows()]
    out["runs p0+p1"] = t["objective"].round(2)
    out["conditions"] = t["conditions"].astype(int)
    return out.reset_index(drop=True)


def _points_table(points: pd.DataFrame, where: str) -> Table:
    """Simulated operating points beside the exact values and Wald's approximations."""
    out = pd.DataFrame(
        {
            "configuration": points["config"],
            "true drop": points["drop"],
            "P(revert) simulated": [
                fmt(r["p_revert"], r.get("p_revert_se")) for _, r in points.iterrows()
            ],
        }
    )
    for col, name in (("p_revert_exact", "P(revert) exact"), ("p_revert_wald", "Wald OC")):
        if col in points:
            out[name] = points[col]
    out["runs simulated"] = [
        fmt(r["mean_runs"], r.get("mean_runs_se")) for _, r in points.iterrows()
    ]
    for col, name in (("mean_runs_exact", "runs exact"), ("mean_runs_wald", "Wald ASN")):
        if col in points:
            out[name] = points[col]
    return Table(
        f"Operating points{where}: simulated ± SE, exact (truncation included) and Wald's "
        "untruncated approximations (blank where they do not apply: p0 estimated, "
        "heterogeneity or noise)",
        out.sort_values(["configuration", "true drop"]).reset_index(drop=True),
    )


def gate_section(sweep: Sweep, targets: GateTargets) -> Section | None:
    """Recommended gate beside the seeds' default, then the figures behind it."""
    gates = gate_runs(sweep)
    if gates is None:
        return None
    rows = gates.rows
    reps_col = next((p for p in sweep.param_names if p.endswith(".replications")), None)
    rows = rows.assign(replications=rows[reps_col] if reps_col else None)
    worst = worst_case(
        rows,
        "config",
        {"false_revert_rate": True, "missed_regression_rate": True}
        | {"mean_runs_null": True, "mean_runs_alt": True},
    )
    rec = recommend_gate(worst, targets, "config", gates.default_label)
    worst["frontier"] = efficient_frontier(worst, "false_revert_rate", "missed_regression_rate")
    frontier = list(worst.loc[worst["frontier"], "config"])
    colours = palette(rows["config"])
    highlight = _highlight(rec, frontier)
    conditions = rows["condition"].nunique()
    scope = (
        f" Judged by its worst case over the {conditions} swept conditions"
        f" ({', '.join(short_name(c) for c in gates.condition_cols)})."
        if conditions > 1
        else ""
    )
    noise = (
        f" Differences are called beyond the noise when larger than {NOISE_Z:g} standard "
        "errors of the difference."
    )
    blocks: list = [
        Table(
            "Recommended gate beside the seeds' default (value ± Monte Carlo SE)",
            _evidence_table(rec, gates),
        ),
        scope.strip() + noise if scope else noise.strip(),
    ]
    if rec.default is None:
        blocks.append("The seeds' default gate (SPRTGate()) was not part of this sweep.")
    if rec.default is not None and rec.default["config"] != rec.pick["config"]:
        blocks += [c.describe() for c in rec.comparisons]
    blocks.append(
        Table(
            f"Gate configurations ranked (targets: false revert <= "
            f"{targets.false_revert:g}, missed regression <= "
            f"{targets.missed_regression:g})",
            _ranked_table(rec),
        )
    )
    if conditions > 1:
        blocks.append(
            Table(
                "Best gate in each swept condition on its own (same targets and rule)",
                _per_condition_table(rows, targets, gates.default_label),
            )
        )
    points = operating_points(sweep, gates)
    if not points.empty:
        ref = points[points["condition"] == gates.reference_condition]
        ref = ref[ref["config"].isin(highlight)]
        exact, bounds = exact_curves(sweep, gates, float(points["drop"].max()) * 1.25 + 0.02)
        if not exact.empty:
            exact = exact[exact["config"].isin(highlight)]
            bounds = bounds[bounds["config"].isin(highlight)] if not bounds.empty else bounds
        where = f" at condition '{gates.reference_condition}'" if conditions > 1 else ""
        shown = f"; showing {len(set(ref['config']))} of {rows['config'].nunique()} configurations"
        blocks.append(
            Figure(
                "gate_oc",
                png_bytes(oc_figure(ref, exact, colours)),
                f"Probability of revert against the true drop{where}: dots are simulated (bars "
                f"95 % Monte Carlo intervals), lines the exact sprt_operating_point with p0 "
                f"known{shown} (recommended, default, frontier).",
            )
        )
        blocks.append(
            Figure(
                "gate_runs",
                png_bytes(runs_figure(ref, exact, bounds, colours)),
                f"Runs until the gate decides{where}; triangles: the Wald-Wolfowitz lower "
                "bound on expected runs of any test with the same error rates, at p0 and at "
                "p0 - min_drop.",
            )
        )
        blocks.append(_points_table(ref, where))
    blocks.append(
        Figure(
            "gate_tradeoff",
            png_bytes(
                tradeoff_figure(
                    worst, colours, (targets.false_revert, targets.missed_regression), highlight
                )
            ),
            "False revert rate against missed regression rate for every configuration (worst "
            "case over conditions); the black staircase joins the efficient frontier, the grey "
            "box is the target region.",
        )
    )
    for col in [*gates.config_cols, *gates.condition_cols]:
        key = col.split(".")[-1]
        if key not in FACTOR_NAMES:
            continue
        blocks.append(_factor_block(rows, gates, col, key, colours, highlight))
    return Section("gates", "Revision gates: which gate to use", rec.sentence, blocks)


def _factor_block(rows, gates: GateRuns, col: str, key: str, colours, highlight) -> Figure:
    """Error rates against one factor, other conditions at their reference value.

    For a condition (ledger size, heterogeneity) the lines are the highlighted gate
    configurations, in their usual colours; for a gate setting (the cap rule) they are
    the configurations without that setting, limited to those of the highlighted ones.
    """
    t = at_reference(gates, keep=col if col in gates.condition_cols else None)
    if col in gates.config_cols:
        rest = [c for c in gates.config_cols if c != col]
        t = t.assign(config=[label(r, rest, "gate") for _, r in t.iterrows()])
        wanted = {
            label(r, rest, "gate") for _, r in rows[rows["config"].isin(highlight)].iterrows()
        }
        t = t[t["config"].isin(wanted)]
        cols = palette(t["config"])
    else:
        t = t[t["config"].isin(highlight)]
        cols = colours
    none_label = "p0 known" if key == "ledger_size" else "none"
    fig = factor_figure(t, col, cols, FACTOR_NAMES[key], none_label)
    return Figure(
        f"gate_factor_{key}",
        png_bytes(fig),
        f"Effect of the {FACTOR_NAMES[key]} on both error rates (bars: 95 % Monte Carlo "
        "intervals; other conditions at their reference value"
        + ("; lines: the other gate settings" if col in gates.config_cols else "")
        + ").",
    )


@report_section("gate", order=10)
def _gate_report(sweep: Sweep, options: ReportOptions) -> Section | None:
    return gate_section(sweep, options.gate)
