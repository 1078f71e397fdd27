"""The live section: did the memory help the agent, by how much, with an interval.

From each live run's tables (the job's, docs/live.md): ``sessions`` (the session log,
docs/logs.md), ``confidence`` (every record's confidence after every session) and
``lifts``, the lifts ``experiments.analyze`` writes as ``lifts.csv`` for the run's
``sessions.csv`` (``procmem_core.logs.estimate_lifts``: per procedure, the difference in
means of the sessions it top-matched, shown against withheld, with its SE, Newcombe's
95 % interval, the always-valid interval, Holm-adjusted p-values and the sample-ratio
check), computed by the job when the run finished. The section reads them, computing no
lift of its own:

- the opening sentence: how many of the procedures tested lifted success (an ``effect``
  of the analysis: Holm-adjusted, no sample-ratio mismatch), the largest lift with its SE
  and interval, its mean and SE across runs when several runs of its configuration tested
  it, and the success rate over sessions with its SE across seeds when several runs share
  a configuration, one rate per configuration (the swept params but the seed) when the
  runs differ in more than their seed;
- per run: sessions, success (binomial SE), shown and withheld arms, procedures,
  tokens and calls from the cache;
- per procedure and run: the analysis's row beside the learned confidence path
  (first, lowest, highest, last);
- success over sessions in windows of a tenth of the run, one table per configuration.
"""

from __future__ import annotations

import math

import pandas as pd

from reports.document import Section, Table
from reports.evidence import fmt_share
from reports.options import ReportOptions
from reports.sections import report_section
from reports.source import Sweep

LIVE_TASK = "live"


def _sessions(sweep: Sweep, runs: pd.DataFrame) -> pd.DataFrame:
    return sweep.table("sessions", list(runs["run_id"]))


def _per_run(runs: pd.DataFrame, sessions: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for _, run in runs.iterrows():
        s = sessions[sessions["run_id"] == run["run_id"]]
        p = float(s["outcome"].mean()) if len(s) else math.nan
        rows.append({
            "run": str(run.get("run_name") or run["run_id"][:8]),
            "run_id": run["run_id"],
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


LIFT_COLUMNS = (
    "key", "n_shown", "n_withheld", "success_shown", "success_withheld", "lift", "se",
    "ci_low", "ci_high", "cs_low", "cs_high", "p_holm", "srm_flag", "effect",
)  # fmt: skip


def _lifts(sweep: Sweep, runs: pd.DataFrame) -> pd.DataFrame:
    """The runs' ``lifts`` tables, the arms' success rates read off their counts."""
    lifts = sweep.table("lifts", list(runs["run_id"]))
    if lifts.empty:
        return lifts
    names = {r["run_id"]: str(r.get("run_name") or r["run_id"][:8]) for _, r in runs.iterrows()}
    return lifts.assign(
        success_shown=lifts["successes_shown"] / lifts["rated_shown"],
        success_withheld=lifts["successes_withheld"] / lifts["rated_withheld"],
        run=[names[r] for r in lifts["run_id"]],
    )


def _per_procedure(sweep: Sweep, runs: pd.DataFrame, lifts: pd.DataFrame) -> pd.DataFrame:
    paths = sweep.table("confidence", list(runs["run_id"]))
    rows = []
    for _, lift in lifts.iterrows():
        row = {"run": lift["run"], **{c: lift[c] for c in LIFT_COLUMNS}}
        if not paths.empty:
            mine = paths[(paths["key"] == lift["key"]) & (paths["run_id"] == lift["run_id"])]
            path = mine["confidence"]
            if len(path):
                row.update(
                    first=path.iloc[0], lowest=path.min(), highest=path.max(), last=path.iloc[-1]
                )
        rows.append(row)
    frame = pd.DataFrame(rows).rename(columns={"key": "procedure"})
    return frame if len(runs) > 1 else frame.drop(columns="run")


def _over_sessions(sessions: pd.DataFrame) -> pd.DataFrame:
    """Success per window of a tenth of the run: the window's sessions (a column: a table's
    index is not rendered), how many ran, the success rate, and the rate as every share
    reads (``fmt_share``: its binomial SE; 0 or 1 with its exact bound, never "± 0")."""
    n = int(sessions["time"].max()) + 1 if len(sessions) else 0
    width = max(1, math.ceil(n / 10))
    window = sessions["time"].astype(int) // width
    out = sessions.assign(window=window).groupby("window")["outcome"].agg(["mean", "count"])
    return pd.DataFrame(
        {
            "window (sessions)": [f"{w * width}-{min(n, (w + 1) * width) - 1}" for w in out.index],
            "sessions": out["count"].astype(int).tolist(),
            "success": out["mean"].astype(float).tolist(),
            "success ± SE": [
                fmt_share(float(m), int(c)) for m, c in zip(out["mean"], out["count"], strict=True)
            ],
        }
    )


def _configs(sweep: Sweep, runs: pd.DataFrame) -> dict[str, str]:
    """Each run's configuration: the swept params but the seed (``Sweep.swept_params``),
    as ``name=value`` text ("" when the runs differ only in their seed)."""
    swept = [p for p in sweep.swept_params if p in runs.columns]
    return {
        r["run_id"]: ", ".join(f"{p.removeprefix('params.')}={r[p]}" for p in swept)
        for _, r in runs.iterrows()
    }


def _level(sessions: pd.DataFrame, per_run: pd.DataFrame, configs: dict[str, str]) -> str:
    """The success rate per configuration: its runs' mean with the SE across them when
    several runs (seeds) share it, else the binomial SE over its sessions; runs of
    different configurations are never averaged together."""
    parts = []
    for label in dict.fromkeys(configs.values()):
        ids = [r for r, c in configs.items() if c == label]
        rates = per_run.loc[per_run["run_id"].isin(ids), "success"].dropna()
        mine = sessions[sessions["run_id"].isin(ids)]
        if len(rates) > 1:
            spread = rates.std(ddof=1) / math.sqrt(len(rates))
            text = f"success {rates.mean():.2f} ± {spread:.2f} (SE across {len(rates)} runs)"
        elif len(mine):
            p, n = float(mine["outcome"].mean()), len(mine)
            text = f"success {p:.2f} ± {math.sqrt(p * (1 - p) / n):.2f} over {n} sessions"
        else:
            continue
        parts.append(f"{text} at {label}" if len(set(configs.values())) > 1 else text)
    return "; ".join(parts)


def _answer(
    sessions: pd.DataFrame, per_run: pd.DataFrame, lifts: pd.DataFrame, configs: dict[str, str]
) -> str:
    level = _level(sessions, per_run, configs)
    if lifts.empty:
        return (
            f"The live runs reached {level}; no procedure was both shown and withheld as "
            "the top match, so whether the memory helped cannot be estimated yet."
        )
    effect = lifts["effect"].astype(bool)
    helped, hurt = (
        int((effect & (lifts["lift"] > 0)).sum()),
        int((effect & (lifts["lift"] < 0)).sum()),
    )
    verdict = (
        "helped with some procedures and hurt with others" if helped and hurt
        else "helped" if helped else "hurt" if hurt
        else "made no difference that these sessions can detect"
    )  # fmt: skip
    tested = f"{len(lifts)} procedures tested" + (
        f" (procedure-runs, over {lifts['run_id'].nunique()} runs)" if len(per_run) > 1 else ""
    )
    best = lifts.sort_values(["lift", "key"], ascending=[False, True], kind="stable").iloc[0]
    where = f" in run {best['run']}" if len(per_run) > 1 else ""
    alike = lifts["run_id"].map(configs) == configs[best["run_id"]]  # not across configs
    same = lifts[(lifts["key"] == best["key"]) & alike]["lift"]
    at = f" at {configs[best['run_id']]}" if len(set(configs.values())) > 1 else ""
    across = (
        f"; over the {len(same)} runs{at} that tested it, {same.mean():+.2f} ± "
        f"{same.std(ddof=1) / math.sqrt(len(same)):.2f} (SE across runs)"
        if len(same) > 1 else ""
    )  # fmt: skip
    return (
        f"The memory {verdict}: {helped} of the {tested} lifted success and {hurt} lowered it "
        f"(the logs analysis: difference in means, Holm-adjusted at 95 %, sample ratio "
        f"checked). The largest lift, {best['key']}{where}, is {best['lift']:+.2f} "
        f"(SE {best['se']:.2f}, 95 % interval {best['ci_low']:+.2f} to {best['ci_high']:+.2f}; "
        f"{best['success_shown']:.2f} over {int(best['n_shown'])} shown against "
        f"{best['success_withheld']:.2f} over {int(best['n_withheld'])} withheld sessions)"
        f"{across}; {level}."
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
    lifts = _lifts(sweep, runs)
    configs = _configs(sweep, runs)
    blocks: list = [
        Table(
            "Per run: sessions, success (binomial SE), withheld sessions, cost",
            per_run.drop(columns="run_id"),
        )
    ]
    if not lifts.empty:
        blocks.append(
            Table(
                "Per top procedure (the logs analysis, lifts.csv): shown vs withheld success, "
                "the lift (difference in means), its SE, Newcombe's and the always-valid 95 % "
                "intervals, the Holm-adjusted p-value, the sample-ratio flag, and its "
                "confidence path",
                _per_procedure(sweep, runs, lifts),
            )
        )
    labels = list(dict.fromkeys(configs.values()))
    for label in labels:  # one table per configuration: runs of different ones not pooled
        mine = sessions[sessions["run_id"].map(configs) == label]
        at = f" at {label}" if len(labels) > 1 else ""
        if len(mine):
            caption = f"Success over sessions (windows of a tenth of the run){at}"
            blocks.append(Table(caption, _over_sessions(mine)))
    blocks += [
        "The lifts are `python -m experiments.analyze`'s on each run's sessions.csv (its "
        "lifts.csv), kept with the run when it finished.",
    ]
    answer = _answer(sessions, per_run, lifts, configs)
    return Section("live", "Live loop: did the memory help?", answer, blocks)


@report_section("live", order=85)
def _live_report(sweep: Sweep, options: ReportOptions) -> Section | None:
    return live_section(sweep)
