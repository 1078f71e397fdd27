"""The withheld-vs-shown A/B section: per procedure, shown against withheld sessions."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from reports.document import Section, Table
from reports.options import ReportOptions
from reports.sections import report_section
from reports.source import Sweep

Z95 = 1.959963984540054


def _arm_rows(t: pd.DataFrame) -> list[tuple[object, pd.Series, pd.Series]]:
    """``(procedure, shown, withheld)`` with counts summed over replications."""
    key = next((k for k in ("procedure", "key") if k in t.columns), None)
    out = []
    for proc, g in t.groupby(key, sort=True) if key else [(None, t)]:
        arms = {}
        for arm, a in g.groupby("arm"):
            if len(a) == 1:
                arms[arm] = a.iloc[0]
            else:  # pooled over replications: counts add up, per-row SEs do not
                arms[arm] = pd.Series(
                    {"sessions": a["sessions"].sum(), "successes": a["successes"].sum()}
                )
        if {"shown", "withheld"} <= set(arms):
            out.append((proc, arms["shown"], arms["withheld"]))
    return out


def ab_section(sweep: Sweep) -> Section | None:
    """Withheld vs shown per run (and per procedure where logged): rates and difference."""
    runs = sweep.runs[sweep.runs["status"] == "FINISHED"]
    rows = []
    for _, r in runs.iterrows():
        t = sweep.tables.get(r["run_id"], {}).get("ab_arms")
        if t is None or not {"arm", "sessions", "successes"} <= set(t.columns):
            continue
        rows += [_ab_row(r, proc, shown, held) for proc, shown, held in _arm_rows(t)]
    if not rows:
        return None
    table = pd.DataFrame(rows)
    sig = int((table["CI excludes 0"]).sum())
    answer = (
        f"In {sig} of {len(table)} withheld-vs-shown comparisons (each pooled over its run's "
        "sessions and replications) the 95 % interval of the difference excludes 0, so the "
        "procedure's effect is established there; elsewhere the data cannot tell it from "
        "no effect."
    )
    return Section(
        "ab",
        "Withheld vs shown: the A/B table",
        answer,
        [
            Table(
                "Per run (and procedure): sessions, successes and rates per arm; difference "
                "shown - withheld with a 95 % interval (the scenario's SEs where logged, "
                "else Wald)",
                table.head(60),
            ),
        ],
    )


def _ab_row(run: pd.Series, proc, shown: pd.Series, withheld: pd.Series) -> dict:
    n1, k1 = float(shown["sessions"]), float(shown["successes"])
    n0, k0 = float(withheld["sessions"]), float(withheld["successes"])
    r1 = k1 / n1 if n1 else math.nan
    r0 = k0 / n0 if n0 else math.nan
    if "rate_se" in shown.index and "rate_se" in withheld.index:
        # the scenario's own SEs respect its clusters (users, replications)
        se = math.hypot(float(shown["rate_se"]), float(withheld["rate_se"]))
    else:
        se = math.sqrt(r1 * (1 - r1) / n1 + r0 * (1 - r0) / n0) if n1 and n0 else math.nan
    diff = r1 - r0
    out = {
        "run": run.get("run_name") or run["run_id"],
        "scenario": run["scenario"],
        "procedure": "" if proc is None else proc,
    }
    out |= {
        "shown sessions": int(n1),
        "shown successes": int(k1),
        "shown rate": r1,
        "withheld sessions": int(n0),
        "withheld successes": int(k0),
        "withheld rate": r0,
        "difference": diff,
        "CI low": diff - Z95 * se,
        "CI high": diff + Z95 * se,
        "CI excludes 0": bool(np.isfinite(se) and abs(diff) > Z95 * se),
    }
    return out


@report_section("ab", order=60)
def _ab_report(sweep: Sweep, options: ReportOptions) -> Section | None:
    return ab_section(sweep)
