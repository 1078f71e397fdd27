"""The flat rule's fate section: one procedure, simulated and exact.

The headline states what the numbers show: how often a procedure that succeeds more
often than the break-even rate is excluded anyway within the horizon, and why (how many
failures in a row from the start take it below the threshold).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from procmem_core.flat import FlatRule, passes_threshold
from reports.answers import exact_fates
from reports.canvas import palette, png_bytes
from reports.configs import label_runs
from reports.document import Figure, Section, Table
from reports.evidence import fmt_exact, fmt_metric
from reports.options import ReportOptions
from reports.sections import report_section
from reports.sections.confidence_runs import arithmetic_note, is_seed, rule_of
from reports.sections.rule_figures import fate_figure
from reports.source import Sweep, find_param
from reports.world import world_blocks


def _baseline(rule: FlatRule) -> float | None:
    """What the fate scenario tells a baseline-reading rule: its prior (nothing withheld)."""
    return float(rule.baseline_estimate(0.0, 0.0)) if rule.needs_baseline else None


def failures_to_exclusion(rule: FlatRule, threshold: float, limit: int = 100) -> list[float]:
    """The confidences after 0, 1, ... failures in a row from the start, until one is
    below the threshold (at most ``limit`` failures)."""
    b = _baseline(rule)
    path = [float(rule.start(b))]
    for k in range(limit):
        if not passes_threshold(path[-1], threshold):
            break
        path.append(float(rule.update(path[-1], False, successes=0, failures=k + 1, baseline=b)))
    return path


def headline(rows: pd.DataFrame, rule: FlatRule, threshold: float, horizon: str) -> str:
    """What the fate numbers show, with the reason."""
    be = float(rule.break_even_rate(_baseline(rule)))
    above = rows[rows["p"] > be + 1e-9].sort_values("p")
    r = above.iloc[0] if len(above) else rows.sort_values("p").iloc[-1]
    p = float(r["p"])
    exact_value = float(r.get("p_excluded_exact", np.nan))  # NaN: a run that logged none
    has_exact = not np.isnan(exact_value)
    exact = f"{fmt_exact(exact_value)} exact, " if has_exact else ""
    shown = fmt_exact(exact_value if has_exact else float(r["p_excluded"]), 2)
    text = (
        f"A procedure that succeeds {p:.0%} of the time is excluded within {horizon} sessions "
        f"with probability {shown} ({exact}simulated {fmt_metric(r, 'p_excluded')})"
    )
    if p > be:
        path = failures_to_exclusion(rule, threshold)
        k = len(path) - 1
        if not passes_threshold(path[-1], threshold) and (1 - p) ** k > 0:
            fails = "one failure in the first session" if k == 1 else f"{k} failures in a row"
            text += (
                f", although {p:g} is above the rule's break-even rate {be:.3f}: {fails} "
                f"(probability {fmt_exact((1 - p) ** k, 2)}) takes {path[0]:.2f} to "
                f"{path[-1]:.2f}, below the threshold {threshold:g}"
            )
        elif not passes_threshold(path[-1], threshold):
            text += ": it never fails, so it never falls below the threshold"
    at = rows[np.isclose(rows["p"], round(be, 3), atol=5e-4)]
    if len(at) and float(at.iloc[0]["p"]) != p:
        text += (
            f"; at the break-even rate itself ({float(at.iloc[0]['p']):g}) it is excluded with "
            f"probability {fmt_metric(at.iloc[0], 'p_excluded')}"
        )
    return text + "."


TABLE_EXTRAS = (
    "p_excluded_exact",
    "expected_sessions_applied",
    "expected_sessions_applied_se",
    "expected_sessions_applied_exact",
)
"""Columns of the per-run table shown when the runs logged them."""


def _exact_curves(sweep: Sweep, cfgs: pd.DataFrame, s_col: str | None) -> pd.DataFrame:
    """``flat_fate``'s exact exclusion probability on a grid of 51 success rates, per config
    (its rule, threshold and horizon; 20 sessions when the sweep did not log one), as the
    sweep computed it when it ended (``experiments.answers.fate``)."""
    exact = []
    grid = np.linspace(0.0, 1.0, 51)
    for _, r in cfgs.iterrows():
        rule, threshold, _ = rule_of(sweep, r)
        sessions = int(r[s_col]) if s_col else 20
        fates = exact_fates(sweep, rule, threshold, sessions, [float(p) for p in grid])
        exact += [
            {"config": r["config"], "p": p, "p_excluded": x}
            for p, x in zip(grid, fates, strict=True)
        ]
    return pd.DataFrame(exact)


HEADLINE_READS = ("scenario.p", "scenario.sessions")
"""What the exact fate (``flat_fate``) reads of the world: the success rate and horizon."""


def fate_section(sweep: Sweep) -> Section | None:
    """One procedure's chance of exclusion against its success rate, simulated vs exact."""
    lab = label_runs(sweep, ("fate",), "rule", ("p_excluded",), "seed rule")
    p_col = find_param(sweep.param_names, "p", "scenario")
    s_col = find_param(sweep.param_names, "sessions", "scenario")
    if lab is None or p_col is None:
        return None
    rows = lab.rows.rename(columns={p_col: "p"})
    if s_col and rows[s_col].nunique() > 1:  # one curve (and headline) per horizon
        rows["config"] = [
            f"{c}, {int(n)} sessions" for c, n in zip(rows["config"], rows[s_col], strict=True)
        ]
    cfgs = rows.drop_duplicates("config")
    colours = palette(rows["config"])
    exact_t = _exact_curves(sweep, cfgs, s_col)
    horizon = "/".join(str(int(x)) for x in sorted(set(rows[s_col]))) if s_col else "the"
    fig = fate_figure(rows, exact_t, colours, horizon)
    built = {
        c: rule_of(sweep, r) for c, r in zip(cfgs["config"], cfgs.to_dict("records"), strict=True)
    }
    # the seed's rule leads the headline
    lead = next((c for c, b in built.items() if is_seed(*b)), cfgs["config"].iloc[0])
    first = rows[rows["config"] == lead]
    rule, threshold, _ = built[lead]
    own = str(int(first[s_col].iloc[0])) if s_col else horizon  # the headline's horizon
    answer = headline(first, rule, threshold, own) + " " + arithmetic_note(rule)
    extras = [c for c in TABLE_EXTRAS if c in rows]
    table = rows[["config", "p", "p_excluded", "p_excluded_se", *extras]]
    return Section(
        "fate",
        "One procedure's fate under the flat rule",
        answer,
        [
            *world_blocks(lab.rows, HEADLINE_READS, "The headline (exact, flat_fate)"),
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
