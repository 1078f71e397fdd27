"""What the swept gate configurations did: the ranking, worst cases naming their
conditions, the best per condition, the operating points beside the exact values.

Only configurations run in every swept condition are ranked (a configuration tried in one
condition has no worst case to compare); the others are listed, flagged, with the
conditions they ran in.
"""

from __future__ import annotations

import pandas as pd

from reports.claims import state_words
from reports.document import Table
from reports.evidence import fmt, fmt_metric
from reports.recommend import GATE_METRICS, GateTargets, Recommendation, recommend_gate
from reports.sections.gate_tables import GateRuns
from reports.sections.gate_worst import worst_table

MAX_HIGHLIGHT = 8


def sweep_recommendation(
    worst: pd.DataFrame,
    targets: GateTargets,
    default: str | None,
    sessions_per_day: float | None = None,
) -> Recommendation | None:
    """``recommend_gate`` over the configurations run in every condition (None: none);
    its sentence gives calendar time at ``sessions_per_day``."""
    complete = worst[worst["complete"]].reset_index(drop=True)
    if complete.empty:
        return None
    here = default if default in set(complete["config"]) else None
    return recommend_gate(complete, targets, "config", here, sessions_per_day)


def highlight(rec: Recommendation | None, worst: pd.DataFrame, frontier: list[str]) -> tuple:
    """Every configuration when few; else the pick, the default, ties and the frontier."""
    if len(worst) <= MAX_HIGHLIGHT or rec is None:
        return tuple(str(x) for x in worst["config"])[:MAX_HIGHLIGHT]
    chosen = [rec.label]
    if rec.default is not None:
        chosen.append(str(rec.default["config"]))
    chosen += list(rec.tied_with) + frontier
    out: list[str] = []
    for c in chosen:
        if c not in out:
            out.append(c)
    return tuple(out[:MAX_HIGHLIGHT])


def ranking_blocks(
    rec: Recommendation | None, worst: pd.DataFrame, targets: GateTargets, conditions: int
) -> list:
    """The sweep's own ranking: sentence, worst-case table (every cell names its
    condition), the configurations left out of the ranking."""
    several = conditions > 1
    blocks: list = []
    if rec is not None:
        blocks.append(rec.sentence)
        ranked = worst.set_index("config").loc[list(rec.ranked["config"])].reset_index()
        table = worst_table(ranked, several)
        table.insert(1, "meets targets", [state_words(x) for x in rec.ranked["state"]])
        table["sessions if unchanged"] = list(rec.ranked["objective"].round(2))
        blocks.append(
            Table(
                f"Swept configurations run in every condition, ranked (targets: false revert "
                f"<= {targets.false_revert:g}, missed regression <= "
                f"{targets.missed_regression:g}); each cell is the worst over the "
                f"{conditions} swept conditions"
                + (", with the condition it came from" if several else ""),
                table.head(12),
            )
        )
    partial = worst[~worst["complete"]]
    if not partial.empty:
        blocks.append(
            Table(
                f"Not ranked: configurations run in only some of the {conditions} conditions "
                "(their worst case is over the conditions they ran in)",
                worst_table(partial, several),
            )
        )
    return blocks


def per_condition_table(
    rows: pd.DataFrame, targets: GateTargets, default: str | None
) -> pd.DataFrame:
    """``recommend_gate`` run on each condition's rows alone."""
    out = []
    for cond, g in rows.groupby("condition", sort=True):
        here = default if default in set(g["config"]) else None
        rec = recommend_gate(g.reset_index(drop=True), targets, "config", here)
        row = {"condition": cond, "meets targets": state_words(rec.state), "pick": rec.label}
        for m in GATE_METRICS:
            row[m.replace("_", " ")] = fmt_metric(rec.pick, m)
        row["differs from default beyond noise"] = (
            "" if here is None or here == rec.label else rec.differs_beyond_noise
        )
        row["tied with"] = ", ".join(rec.tied_with)
        out.append(row)
    return pd.DataFrame(out)


def points_table(points: pd.DataFrame, where: str) -> Table:
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
        f"Operating points{where}: simulated ± SE, exact (truncation included, the ledger "
        "mixed in exactly) and Wald's untruncated approximations (blank where they do not "
        "apply: p0 estimated, heterogeneity or noise)",
        out.sort_values(["configuration", "true drop"]).reset_index(drop=True),
    )


def gate_rows(gates: GateRuns, sweep_params: tuple[str, ...]) -> pd.DataFrame:
    """The gate runs with their replications per run as a column."""
    rows = gates.rows
    reps_col = next((p for p in sweep_params if p.endswith(".replications")), None)
    return rows.assign(replications=rows[reps_col] if reps_col else None)
