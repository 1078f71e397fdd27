"""The flat rule's fate section: one procedure, simulated and exact."""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd

from procmem_core.flat import DEFAULT_RULE, ConfidenceRule, build_system_prompt, flat_fate
from reports.canvas import palette, png_bytes
from reports.configs import label_runs
from reports.document import Figure, Section, Table
from reports.evidence import fmt_metric
from reports.options import ReportOptions
from reports.sections import report_section
from reports.sections.confidence import _rule_values
from reports.sections.rule_figures import fate_figure
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


def fate_section(sweep: Sweep) -> Section | None:
    """One procedure's chance of exclusion against its success rate, simulated vs exact."""
    lab = label_runs(sweep, ("fate",), "rule", ("p_excluded",), "seed rule")
    p_col = find_param(sweep.param_names, "p", "scenario")
    s_col = find_param(sweep.param_names, "sessions", "scenario")
    if lab is None or p_col is None:
        return None
    rows = lab.rows.rename(columns={p_col: "p"})
    cfgs = rows.drop_duplicates("config")
    colours = palette(rows["config"])
    exact = []
    for _, r in cfgs.iterrows():
        v = _rule_values(sweep, r)
        rule = ConfidenceRule(
            float(v["initial"]),
            float(v["reward"]),
            float(v["penalty"]),
            float(v["floor"]),
            float(v["ceiling"]),
        )
        sessions = int(r[s_col]) if s_col else 20
        for p in np.linspace(0.0, 1.0, 51):
            fate = flat_fate(float(p), sessions, rule, float(v["threshold"]))
            exact.append({"config": r["config"], "p": p, "p_excluded": fate.p_excluded})
    exact_t = pd.DataFrame(exact)
    horizon = "/".join(str(int(x)) for x in sorted(set(rows[s_col]))) if s_col else "the"
    fig = fate_figure(rows, exact_t, colours, horizon)
    be = float(rows["break_even"].iloc[0]) if "break_even" in rows else DEFAULT_RULE.break_even
    lo, hi = rows.loc[rows["p"].idxmin()], rows.loc[rows["p"].idxmax()]
    answer = (
        f"A procedure is kept only if it succeeds more often than the break-even rate "
        f"{be:.3f}: at p = {lo['p']:g} it is excluded within {horizon} sessions with probability "
        f"{fmt_metric(lo, 'p_excluded')}, at p = {hi['p']:g} with {fmt_metric(hi, 'p_excluded')}."
    )
    table = rows[
        ["config", "p", "p_excluded", "p_excluded_se"]
        + [
            c
            for c in (
                "p_excluded_exact",
                "expected_sessions_applied",
                "expected_sessions_applied_se",
                "expected_sessions_applied_exact",
            )
            if c in rows
        ]
    ]
    return Section(
        "fate",
        "One procedure's fate under the flat rule",
        answer,
        [
            Figure(
                "fate_exclusion",
                png_bytes(fig),
                "Probability of exclusion against the success "
                "probability: dots simulated (95 % MC intervals), lines exact (flat_fate).",
            ),
            Table("Simulated vs exact fate per run", table.sort_values(["config", "p"])),
        ],
    )


@report_section("fate", order=30)
def _fate_report(sweep: Sweep, options: ReportOptions) -> Section | None:
    return fate_section(sweep)
