"""The live section: did the memory help the agent, by how much, with an interval.

From each live run's ``tables/sessions.parquet`` (the session log, docs/logs.md) and
``tables/confidence.parquet`` (every record's confidence after every session):

- the opening sentence: the shown-minus-withheld success among sessions whose top
  procedure was drawn for withholding, pooled over the runs, with its 95 % interval
  (difference in means, ``se = sqrt(p1 q1 / n1 + p0 q0 / n0)``), and the success rate
  over sessions with its SE across seeds when several runs share a configuration;
- per run: sessions, success (binomial SE), shown and withheld arms, procedures,
  tokens and calls from the cache;
- per procedure (``top_key``): the two arms, the lift and its interval, beside its
  learned confidence path (first, lowest, highest, last);
- success over sessions in windows of a tenth of the run.

The lift is the plain difference in means of the withheld design, computed here; the
logs issue's ``experiments.analyze`` adds intervals valid at any stopping time,
multiplicity adjustment and sample-ratio checks on the same ``sessions.csv``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from reports.document import Section, Table
from reports.options import ReportOptions
from reports.sections import report_section
from reports.source import Sweep

LIVE_TASK = "live"
Z95 = 1.959963984540054


def lift_row(sessions: pd.DataFrame) -> dict[str, float]:
    """Shown and withheld arms of ``sessions`` (all with a top key), the difference in
    means and its 95 % interval (NaN when an arm is empty)."""
    held = sessions["withheld"].astype(bool)
    y = sessions["outcome"].astype(float)
    n1, n0 = int((~held).sum()), int(held.sum())
    p1 = float(y[~held].mean()) if n1 else math.nan
    p0 = float(y[held].mean()) if n0 else math.nan
    se = math.sqrt(p1 * (1 - p1) / n1 + p0 * (1 - p0) / n0) if n1 and n0 else math.nan
    lift = p1 - p0
    return {
        "n_shown": n1, "success_shown": p1, "n_withheld": n0, "success_withheld": p0,
        "lift": lift, "se": se, "ci_low": lift - Z95 * se, "ci_high": lift + Z95 * se,
    }  # fmt: skip


def _sessions(sweep: Sweep, runs: pd.DataFrame) -> pd.DataFrame:
    return sweep.table("sessions", list(runs["run_id"]))


def _per_run(runs: pd.DataFrame, sessions: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for _, run in runs.iterrows():
        s = sessions[sessions["run_id"] == run["run_id"]]
        p = float(s["outcome"].mean()) if len(s) else math.nan
        rows.append({
            "run": str(run.get("run_name") or run["run_id"][:8]),
            "status": run["status"],
            "sessions": len(s),
            "success": p,
            "success SE": math.sqrt(p * (1 - p) / len(s)) if len(s) else math.nan,
            "withheld": int(s["withheld"].astype(bool).sum()) if len(s) else 0,
            "procedures": run.get("n_procedures"),
            "tokens": int(s["tokens"].sum()) if "tokens" in s else math.nan,
            "cached calls": run.get("n_cached_calls"),
        })  # fmt: skip
    return pd.DataFrame(rows)


def _per_procedure(sweep: Sweep, runs: pd.DataFrame, sessions: pd.DataFrame) -> pd.DataFrame:
    paths = sweep.table("confidence", list(runs["run_id"]))
    rows = []
    for key, group in sessions[sessions["top_key"].astype(str) != ""].groupby("top_key"):
        row = {"procedure": key, **lift_row(group)}
        path = paths[paths["key"] == key]["confidence"] if not paths.empty else pd.Series()
        if len(path):
            row.update(
                first=path.iloc[0], lowest=path.min(), highest=path.max(), last=path.iloc[-1]
            )
        rows.append(row)
    return pd.DataFrame(rows)


def _over_sessions(sessions: pd.DataFrame) -> pd.DataFrame:
    n = int(sessions["time"].max()) + 1 if len(sessions) else 0
    width = max(1, math.ceil(n / 10))
    window = sessions["time"].astype(int) // width
    out = sessions.assign(window=window).groupby("window")["outcome"].agg(["mean", "count"])
    out["SE"] = np.sqrt(out["mean"] * (1 - out["mean"]) / out["count"])
    out.index = [f"{w * width}-{min(n, (w + 1) * width) - 1}" for w in out.index]
    return out.rename(columns={"mean": "success", "count": "sessions"}).rename_axis("sessions")


def _answer(runs: pd.DataFrame, sessions: pd.DataFrame, per_run: pd.DataFrame) -> str:
    drawn = sessions[sessions["top_key"].astype(str) != ""]
    overall = lift_row(drawn) if len(drawn) else None
    rates = per_run["success"].dropna()
    if len(rates) > 1:
        spread = rates.std(ddof=1) / math.sqrt(len(rates))
        level = f"success {rates.mean():.2f} ± {spread:.2f} (SE across {len(rates)} runs)"
    else:
        p, n = float(sessions["outcome"].mean()), len(sessions)
        level = f"success {p:.2f} ± {math.sqrt(p * (1 - p) / n):.2f} over {n} sessions"
    if overall is None or math.isnan(overall["se"]):
        return (
            f"The live runs reached {level}; no session both showed and withheld a top "
            "procedure, so whether the memory helped cannot be estimated yet."
        )
    verdict = (
        "helped" if overall["ci_low"] > 0 else "hurt" if overall["ci_high"] < 0
        else "made no difference that these sessions can detect"
    )  # fmt: skip
    return (
        f"The memory {verdict}: sessions that showed their top procedure succeeded "
        f"{overall['success_shown']:.2f} of the time against {overall['success_withheld']:.2f} "
        f"when it was withheld, a lift of {overall['lift']:+.2f} (95 % interval "
        f"{overall['ci_low']:+.2f} to {overall['ci_high']:+.2f}, {overall['n_shown']} shown "
        f"and {overall['n_withheld']} withheld sessions); {level}."
    )


def live_section(sweep: Sweep) -> Section | None:
    """The live runs' section (module doc); None when the sweep has none."""
    runs = sweep.scenario_runs(LIVE_TASK)
    if runs.empty:
        return None
    sessions = _sessions(sweep, runs)
    if sessions.empty:
        return Section("live", "Live loop", "The live runs logged no session.", [])
    per_run = _per_run(runs, sessions)
    blocks: list = [
        Table("Per run: sessions, success (binomial SE), withheld sessions, cost", per_run),
        Table(
            "Per top procedure: shown vs withheld success, the lift and its 95 % interval "
            "(difference in means), and its confidence path",
            _per_procedure(sweep, runs, sessions),
        ),
        Table("Success over sessions (windows of a tenth of the run)", _over_sessions(sessions)),
        "The lift is the difference in means of the randomized withheld design; "
        "`python -m experiments.analyze` on the run's sessions.csv adds anytime-valid "
        "intervals, multiplicity adjustment and sample-ratio checks.",
    ]
    return Section(
        "live", "Live loop: did the memory help?", _answer(runs, sessions, per_run), blocks
    )


@report_section("live", order=85)
def _live_report(sweep: Sweep, options: ReportOptions) -> Section | None:
    return live_section(sweep)
