"""The flat confidence rule: which reward/penalty/threshold to use, and one procedure's fate."""

from __future__ import annotations

import inspect

import pandas as pd

from procmem_core.flat import DEFAULT_RULE, build_system_prompt
from reports.canvas import png_bytes
from reports.configs import Labelled, at_reference, label_runs, same
from reports.document import Figure, Section, Table
from reports.evidence import NOISE_Z, fmt_metric, worst_case
from reports.options import ReportOptions
from reports.recommend import recommend_confidence
from reports.sections import report_section
from reports.sections.rule_figures import heatmap_figure, trajectory_figure
from reports.source import Sweep, find_param

_PROMPT = inspect.signature(build_system_prompt).parameters
SEED_RULE: dict[str, object] = {
    "initial": DEFAULT_RULE.initial,
    "reward": DEFAULT_RULE.reward,
    "penalty": DEFAULT_RULE.penalty,
    "floor": DEFAULT_RULE.floor,
    "ceiling": DEFAULT_RULE.ceiling,
    "threshold": _PROMPT["threshold"].default,
    "limit": _PROMPT["limit"].default,
}
"""The notebook seed's rule: +0.08 / -0.15 from 0.6, threshold 0.55, at most 6 shown."""

CONFIDENCE_METRICS = ("helpful_retained", "harmful_excluded")
SHOWN_METRICS = (*CONFIDENCE_METRICS, "sessions_to_exclude_harmful", "session_success_rate")


def _rule_values(sweep: Sweep, row: pd.Series) -> dict[str, object]:
    out = {}
    for key, default in SEED_RULE.items():
        col = find_param(sweep.param_names, key, "rule")
        out[key] = row[col] if col else default
    return out


def _default_label(sweep: Sweep, lab: Labelled) -> str | None:
    for _, r in lab.rows.iterrows():
        values = _rule_values(sweep, r)
        if all(same(values[k], v) for k, v in SEED_RULE.items()):
            return str(r["config"])
    return None


def _sessions_filter(sweep: Sweep, lab: Labelled, target: int | None) -> tuple[Labelled, str]:
    col = find_param(sweep.param_names, "sessions", "scenario")
    if col is None:
        return lab, "the scenario's sessions"
    if target is None or col not in lab.condition_cols:
        values = sorted({int(v) for v in lab.rows[col] if v is not None})
        return lab, f"{'/'.join(map(str, values))} sessions"
    rows = lab.rows[lab.rows[col] == target]
    if rows.empty:
        return lab, f"{target} sessions (not swept; all horizons used)"
    conds = [c for c in lab.condition_cols if c != col]
    return Labelled(
        rows.reset_index(drop=True), lab.config_cols, conds, lab.reference_condition
    ), f"{target} sessions"


def confidence_section(
    sweep: Sweep, target_excluded: float, target_sessions: int | None
) -> Section | None:
    """Recommended rule beside the seed's, fate heatmaps, break-even, success over time."""
    lab = label_runs(sweep, ("confidence",), "rule", CONFIDENCE_METRICS, "seed rule")
    if lab is None:
        return None
    lab, horizon = _sessions_filter(sweep, lab, target_sessions)
    reps = find_param(sweep.param_names, "replications", "scenario")
    rows_in = lab.rows.assign(replications=lab.rows[reps]) if reps else lab.rows
    worst = worst_case(rows_in, "config", {m: False for m in CONFIDENCE_METRICS})
    rec = recommend_confidence(worst, target_excluded, "config", _default_label(sweep, lab))
    rows = []
    same = rec.default is not None and rec.default["config"] == rec.pick["config"]
    pairs = [("recommended = seed default" if same else "recommended", rec.pick)]
    if rec.default is not None and not same:
        pairs.append(("seed default", rec.default))
    for role, r in pairs:
        rows.append(
            {
                "role": role,
                "rule": r["config"],
                "break-even success rate": r.get("break_even"),
                **{m.replace("_", " "): fmt_metric(r, m) for m in SHOWN_METRICS if m in r},
                "conditions": int(r.get("conditions", 1)),
                "replications per run": r.get("replications", ""),
            }
        )
    blocks: list = [
        Table(
            f"Recommended rule beside the seed's (within {horizon}; value ± SE; worst case "
            "over swept conditions)",
            pd.DataFrame(rows),
        ),
        f"Feasible: at least {target_excluded:g} of harmful procedures excluded. Differences"
        f" beyond {NOISE_Z:g} standard errors of the difference count as real.",
        *(c.describe() for c in (() if same else rec.comparisons)),
    ]
    if rec.default is None:
        blocks.append("The seed's rule (reward 0.08, penalty 0.15, threshold 0.55) was not swept.")
    ref = at_reference(lab)
    keys = {k: find_param(sweep.param_names, k, "rule") for k in ("reward", "penalty", "threshold")}
    if keys["reward"] in lab.config_cols and keys["penalty"] in lab.config_cols:
        t = ref.rename(columns={keys[k]: k for k in keys if keys[k]})
        t = t.assign(helpful_lost=1.0 - t["helpful_retained"])
        facet = "threshold" if keys["threshold"] in lab.config_cols else None
        for value, title, name in (
            ("harmful_excluded", "Share of harmful procedures excluded", "rule_harmful"),
            ("helpful_lost", "Share of truly helpful procedures lost", "rule_helpful_lost"),
        ):
            fig = heatmap_figure(t, "reward", "penalty", value, facet, title, "share (0-1)")
            blocks.append(
                Figure(
                    name,
                    png_bytes(fig),
                    f"{title} within {horizon}, over the reward x penalty grid"
                    + (f" at condition '{lab.reference_condition}'" if lab.condition_cols else "")
                    + "; b-e is the break-even success rate penalty/(reward+penalty).",
                )
            )
    shown = {rec.label} | ({str(rec.default["config"])} if rec.default is not None else set())
    picked = ref[ref["config"].isin(shown)]
    traj = sweep.table("trajectory", list(picked["run_id"]))
    if not traj.empty and {"session", "success_rate"} <= set(traj.columns):
        traj = traj.assign(
            config=traj["run_id"].map(dict(zip(picked["run_id"], picked["config"], strict=True)))
        )
        wide = traj.pivot_table(index="session", columns="config", values="success_rate")
        if "success_rate_se" in traj:
            se = traj.pivot_table(index="session", columns="config", values="success_rate_se")
            wide = wide.join(se.add_suffix("_se"))
        fig = trajectory_figure(
            wide.reset_index(),
            "session",
            {str(c): str(c) for c in shown},
            "Session success rate over time",
            "session success rate (probability)",
        )
        blocks.append(
            Figure(
                "rule_success_over_time",
                png_bytes(fig),
                "Session success rate by session (bands: 95 % MC intervals), "
                "recommended vs seed rule.",
            )
        )
    return Section(
        "confidence", "Confidence rule: which reward, penalty and threshold", rec.sentence, blocks
    )


@report_section("confidence", order=20)
def _confidence_report(sweep: Sweep, options: ReportOptions) -> Section | None:
    return confidence_section(sweep, options.target_excluded, options.target_sessions)
