"""The loop's regret change split into its structural cost and what the engine learned
(issue 30, "the loop's regret, decomposed").

Every session falls in one source (``simulators.scenarios.loop_records.REGRET_SOURCES``).
The structural ones are the price of the mechanisms, paid whatever the engine learns:
sessions withheld by the explore rate, sessions that follow a revision on trial or serve
the prior (concurrent control), and sessions of a task whose every procedure is
quarantined. The rest is what the engine chose: the best procedure (no regret), a worse
one, another task's procedure ranked first, or nothing matched.

Per replication ``r`` and part ``P``, the regret per session in a period is
``R_P = sum over P's sources of the regret / the period's sessions``; the parts add up to
the replication's regret per session, so the structural and learning changes
``R_P(late) - R_P(early)`` add up to its regret change. Each is a mean over replications
with the SE of the per-replication values (paired: early and late come from the same
replication).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from reports.evidence import fmt

STRUCTURAL = (
    "withheld",
    "followed a revision on trial",
    "followed the prior (concurrent control)",
    "all the task's procedures quarantined",
)
"""The sources whose regret is the mechanisms' price, not the engine's choice."""

PARTS = ("structural", "learning", "total")


def regret_split(table: pd.DataFrame) -> pd.DataFrame:
    """From a run's ``regret_sources`` table (one row per replication, period, source):
    per part, the regret per session early and late and its change, each mean and SE
    over replications (columns ``part``, ``early``, ``late``, ``change`` and their
    ``*_se``, ``n``)."""
    t = table[table["period"].isin(("early", "late"))].copy()
    t["part"] = np.where(t["source"].isin(STRUCTURAL), "structural", "learning")
    t["per_session"] = t["regret"] / t["period_sessions"]
    wide = t.pivot_table(
        index="replication", columns=["part", "period"], values="per_session", aggfunc="sum"
    )
    rows = []
    for part in PARTS:
        if part == "total":
            early = wide.xs("early", axis=1, level=1).sum(axis=1)
            late = wide.xs("late", axis=1, level=1).sum(axis=1)
        else:
            early, late = wide[(part, "early")], wide[(part, "late")]
        values = {"early": early, "late": late, "change": late - early}
        row: dict[str, object] = {"part": part, "n": len(early)}
        for name, v in values.items():
            row[name] = float(v.mean())
            row[f"{name}_se"] = float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def split_table(split: pd.DataFrame) -> pd.DataFrame:
    """The split as the report shows it (value ± SE)."""
    words = {
        "structural": "structural (withheld, on trial, prior served, all quarantined)",
        "learning": "learning (worse procedure, another task's, nothing matched)",
        "total": "total",
    }
    return pd.DataFrame(
        {
            "part": [words[p] for p in split["part"]],
            "regret per session, first quarter": [
                fmt(a, b) for a, b in zip(split["early"], split["early_se"], strict=True)
            ],
            "last quarter": [
                fmt(a, b) for a, b in zip(split["late"], split["late_se"], strict=True)
            ],
            "change": [fmt(a, b) for a, b in zip(split["change"], split["change_se"], strict=True)],
        }
    )


def _direction(change: float, se: float, n: int) -> str:
    """A detectable fall or rise when the 95 % interval over ``n`` replications (Student t
    with ``n - 1`` degrees of freedom, as the section's verdicts) excludes 0."""
    if n < 2 or not np.isfinite(se) or abs(change) <= stats.t.ppf(0.975, n - 1) * se:
        return "no detectable change"
    return "a detectable fall" if change < 0 else "a detectable rise"


def fixed_sentence(row: pd.Series, n: int) -> str:
    """The regret change against the fixed oracle (the best each task offered at the start,
    which the engine's revisions cannot raise), when the run logged it; else that it is
    not logged. ``n``: the replications the change is a mean over."""
    change, se = row.get("regret_fixed_change"), row.get("regret_fixed_change_se")
    if change is None or se is None or not np.isfinite(float(change)):
        return (
            "The regret's oracle rises with accepted revisions; no fixed-oracle regret is logged."
        )
    return (
        f"The regret's oracle rises with accepted revisions; against a fixed one (each task's best "
        f"procedure at the start), the regret changes by {fmt(change, se)}: "
        f"{_direction(change, se, n)} (95 % t interval over {n} replications)."
    )


def split_sentence(split: pd.DataFrame, where: str, row: pd.Series | None = None) -> str:
    """The regret change, its structural part and its learning part; then the change
    against the fixed oracle (``fixed_sentence``) when ``row`` (the run's metrics) is given."""
    part = split.set_index("part")
    s, lrn, tot = part.loc["structural"], part.loc["learning"], part.loc["total"]
    return (
        f"The regret change{where}, {fmt(tot['change'], tot['change_se'])}, splits into the "
        f"structural cost (sessions withheld, on a revision on trial, on the prior, or of a "
        f"task with every procedure quarantined), {fmt(s['change'], s['change_se'])}, and "
        f"what the engine chose, {fmt(lrn['change'], lrn['change_se'])}: "
        f"{_direction(lrn['change'], lrn['change_se'], int(tot['n']))} in the learning part (95 % "
        f"t interval "
        f"over {int(tot['n'])} replications). "
        + ("" if row is None else fixed_sentence(row, int(tot["n"])))
    ).strip()
