"""The learnings review queue: which review policy promotes the right bot rules?

A *policy* is what the reviewer reads the queue with (``scenario.min_writers``,
``scenario.min_users``, ``scenario.combine``); every other swept param is a *condition*
(the multi-user writer's share, the reviewer's accuracy, ...). A policy is judged by its
worst swept condition (``reports.evidence.worst_case``), as the gate section judges
gates: feasible when its worst precision reaches ``TARGET_PRECISION``; among feasible
policies the shortest worst-case wait of a helpful rule (``helpful_wait``: sessions until
promotion, a rule never promoted counted at the horizon) wins, ties broken by the harmful
rules' serving. Policies the sweep cannot tell apart from the pick (wait within
``NOISE_Z`` SE of the difference, worst precision within ``NOISE_Z`` SE of the target)
are named, so the sentence never claims more than the numbers hold.

A precision of 1 or 0 (every promoted rule of one kind: plug-in SE 0, however few) carries
the binomial SE at the target over the ``n = promoted * replications`` rules promoted
(``boundary_precision``; the score test's, as ``ScenarioResult.boundary_se``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from procmem_core.learnings import ReviewPolicy
from procmem_core.learnings.sensitivity import TARGET_PRECISION
from reports.canvas import png_bytes
from reports.claims import MEETS, MISSES, WITHIN_NOISE, state_words, target_state
from reports.configs import label
from reports.document import Detail, Figure, Section, Table
from reports.evidence import NOISE_Z, fmt_metric, replications_of, worst_case
from reports.options import ReportOptions
from reports.recommend import Recommendation, _pick_best, _rank
from reports.sections import report_section
from reports.sections.learnings_figures import precision_figure, se_or_zero
from reports.sections.learnings_holds import holds_blocks
from reports.source import Sweep
from reports.summary import short_name
from reports.world import world_blocks

POLICY_KEYS = ("min_writers", "min_users", "combine")
WORLD_READS = tuple(f"scenario.{k}" for k in ("users", "helpful_rate", "neutral_rate",
                    "harmful_rate", "reviewer_accuracy", "sessions"))  # fmt: skip
"""What a policy's worst case is judged on: the user count, the endorsement rates, the
reviewer's accuracy and the horizon (a helpful rule never promoted waits until it)."""
WORST = {
    "precision": False,
    "recall": False,
    "helpful_wait": True,
    "sessions_to_promotion": True,
    "harmful_served_sessions": True,
    "helpful_unpromoted": True,
    "helpful_wait_median": True,
}
"""Metric -> higher is worse (for ``worst_case``)."""
ASSUMPTIONS = Detail(
    "What the scenario assumes: each rule's worth is fixed and known to the simulation; a "
    "helpful rule is endorsed more often than a neutral or a harmful one (per-session "
    "rates by kind, the same for every user: if users endorsed harmful rules as often, "
    "support would carry no signal and only the reviewer would protect); honest users write "
    "through tokens pinned to them (one writer per user), a multi-user writer is one "
    "unpinned token filing its pushed rules (chosen without regard to their worth) under "
    "ids from its own pool; an erased user keeps using the service; the reviewer sees a "
    "candidate once it meets the bar, after the review delay, and is right with the "
    "stated accuracy whatever the rule; rejected rules never come back."
)


@dataclass
class PolicyRuns:
    """Finished learnings runs with ``policy`` and ``condition`` labels."""

    rows: pd.DataFrame
    policy_cols: list[str]
    condition_cols: list[str]


def _param(row: pd.Series, key: str, default):
    value = row.get(f"params.scenario.{key}", default)
    return default if value is None or (isinstance(value, float) and math.isnan(value)) else value


def policy_text(row: pd.Series) -> str:
    """The policy a run's reviewer followed, as ``ReviewPolicy.describe`` says it."""
    policy = ReviewPolicy(
        int(_param(row, "min_writers", 3)),
        int(_param(row, "min_users", 0)),
        str(_param(row, "combine", "and")),
    )
    return policy.describe()


def policy_runs(sweep: Sweep) -> PolicyRuns | None:
    runs = sweep.scenario_runs("learnings")
    runs = runs[runs["status"] == "FINISHED"].reset_index(drop=True)
    if runs.empty or any(m not in runs.columns for m in ("precision", "helpful_wait")):
        return None
    swept = [
        p
        for p in sweep.param_names
        if p.startswith("params.scenario.") and runs[p].map(repr).nunique(dropna=False) > 1
    ]
    policy_cols = [p for p in swept if p.split(".")[-1] in POLICY_KEYS]
    condition_cols = [p for p in swept if p not in policy_cols and p.split(".")[-1] != "seed"]
    runs["policy"] = [policy_text(r) for _, r in runs.iterrows()]
    runs["condition"] = [label(r, condition_cols, "as configured") for _, r in runs.iterrows()]
    return PolicyRuns(runs, policy_cols, condition_cols)


def boundary_precision(rows: pd.DataFrame, target: float) -> tuple[pd.DataFrame, int]:
    """Runs' precision SE at 0 or 1 (module docstring), and how many runs it changed."""
    if "promoted" not in rows or "precision_se" not in rows:
        return rows, 0
    out, changed = rows.copy(), 0
    for i, r in rows.iterrows():
        n = float(r["promoted"]) * float(replications_of(r) or math.nan)
        if r["precision"] in (0.0, 1.0) and se_or_zero(r, "precision") == 0 and n >= 0.5:
            out.at[i, "precision_se"] = math.sqrt(target * (1 - target) / round(n))
            changed += 1
    return out, changed


def recommend_policy(worst: pd.DataFrame, target: float = TARGET_PRECISION) -> Recommendation:
    """The feasible policy with the shortest worst-case ``helpful_wait`` (module docstring);
    ``tied_with``: policies the sweep's noise cannot separate from it."""
    t = worst.copy()
    t["feasible"] = t["precision"] >= target
    t["state"] = [target_state(r["precision"], se_or_zero(r, "precision"), target, True)
                  for _, r in t.iterrows()]  # fmt: skip
    t["shortfall"] = (target - t["precision"]).clip(lower=0)
    t["objective"] = t["helpful_wait"].astype(float)
    t["_label"] = t["policy"].astype(str)
    ranked = _rank(t, ["harmful_served_sessions", "_label"])
    pick, _ = _pick_best(ranked, "policy")
    tied = []
    for _, r in ranked.iloc[1:].iterrows():
        if not pick["feasible"]:  # "the nearest": ordered by precision, so tied on it
            key, ok = "precision", not r["feasible"]
        else:
            key, ok = "helpful_wait", r["state"] != MISSES
        gap = abs(float(r[key]) - float(pick[key]))
        if ok and gap <= NOISE_Z * math.hypot(se_or_zero(r, key), se_or_zero(pick, key)):
            tied.append(str(r["policy"]))
    return Recommendation(
        "learnings",
        pick,
        bool(pick["feasible"]),
        ranked,
        "policy",
        tied_with=tuple(tied),
        sentence=_sentence(pick, tied, target, worst),
    )


def _waits(pick: pd.Series, most: str) -> str:
    """The wait as censored data: the Kaplan-Meier median with its interval and the share
    not promoted by the horizon (``helpful_wait_median``, ``helpful_unpromoted``), beside
    the restricted mean; the restricted mean alone for runs without them."""
    mean = fmt_metric(pick, "helpful_wait")
    if "helpful_wait_median" not in pick.index or pd.isna(pick["helpful_wait_median"]):
        return (
            f"A helpful rule waits {most}{mean} sessions (never promoted counted at the horizon)."
        )
    horizon = int(float(_param(pick, "sessions", float(pick["helpful_wait_median"]) - 1)))
    beyond = horizon + 1

    def session(v: float) -> str:
        return f"beyond the {horizon}-session horizon" if v >= beyond else f"{v:.0f}"

    median = float(pick["helpful_wait_median"])
    low, high = (float(pick.get(f"helpful_wait_median_{e}", median)) for e in ("low", "high"))
    half = (
        f"Half the helpful rules are promoted within {median:.0f} sessions"
        + (" in its worst condition" if most else "")
        if median < beyond
        else f"Fewer than half the helpful rules are promoted within the {horizon}-session horizon"
    )
    interval = (
        f"95 % interval {session(low)} to {session(high)}"
        if low < beyond
        else f"its 95 % interval lies wholly beyond the {horizon}-session horizon"
    )
    return (
        f"{half} (Kaplan-Meier median, {interval}). "
        f"A share of {most}{fmt_metric(pick, 'helpful_unpromoted')} of them is not promoted by "
        f"session {horizon}, the horizon; the restricted mean wait, which counts them, is "
        f"{mean} sessions."
    )


def _median_interval(rows: pd.DataFrame, worst: pd.DataFrame) -> pd.DataFrame:
    """The worst median's interval from the run that gave it (``worst_case`` keeps the
    first run's other columns); among runs tied at the worst median (e.g. every one beyond
    the horizon), the one whose interval lies latest (largest low end, then high end)."""
    if "helpful_wait_median" not in rows or rows["helpful_wait_median"].isna().all():
        return worst
    worst = worst.copy()
    for i, policy in worst["policy"].items():
        group = rows[rows["policy"] == policy]
        if group["helpful_wait_median"].isna().all():
            continue
        ends = [f"helpful_wait_median{e}" for e in ("", "_low", "_high")]
        top = group.sort_values(ends, ascending=False, na_position="last", kind="stable").iloc[0]
        for end in ("low", "high"):
            worst.at[i, f"helpful_wait_median_{end}"] = top[f"helpful_wait_median_{end}"]
    return worst


def _sentence(pick: pd.Series, tied: list[str], target: float, worst: pd.DataFrame) -> str:
    n = int(pick.get("conditions", 1))
    if n > 1:
        where = f"judged by its worst of {n} swept conditions (each figure at its own worst)"
        least, most = "at least ", "at most "
    else:
        where, least, most = "in the one condition run", "", ""
    what = (
        f"{pick['policy']}, {where}: precision {least}{fmt_metric(pick, 'precision')} (target "
        f"{target:g})"
    )
    more = (
        f" {_waits(pick, most)} Recall is {least}{fmt_metric(pick, 'recall')}; harmful rules "
        f"are served in {most}{fmt_metric(pick, 'harmful_served_sessions')} conversations per "
        "replication (summed over the harmful rules)."
    )
    if len(worst) == 1:
        state = {
            MEETS: "it meets the target",
            WITHIN_NOISE: f"its precision is within {NOISE_Z:g} SE of the target",
        }.get(pick["state"], "it misses the target")
        return (
            f"One review policy ran: {what}; {state}.{more} Sweep learnings_review to compare "
            "policies."
        )
    if not pick["feasible"]:
        near = (
            f" (within {NOISE_Z:g} SE of the target: this sweep cannot tell whether it reaches it)"
            if pick["state"] == WITHIN_NOISE
            else ""
        )
        if tied:
            near += (
                f"; tied with {', '.join(tied)} (precision within {NOISE_Z:g} SE of the "
                "difference: the noise cannot order them)"
            )
        return (
            f"No swept policy reaches precision {target:g} in every condition; the nearest "
            f"is {what}{near}.{more}"
        )
    head = f"Review with {what}"
    if pick["state"] == WITHIN_NOISE:
        head += f"; its worst precision is within {NOISE_Z:g} SE of the target"
    if tied:
        head += f"; this sweep cannot tell it apart from {', '.join(tied)}"
    return head + "." + more


def _ranked_table(ranked: pd.DataFrame) -> pd.DataFrame:
    states = [state_words(x) for x in ranked["state"]]
    out = pd.DataFrame({"policy": ranked["policy"], "meets target": states})
    for m in (
        "precision",
        "helpful_wait",
        "sessions_to_promotion",
        "recall",
        "harmful_served_sessions",
    ):
        out[f"worst {m.replace('_', ' ')}"] = [fmt_metric(r, m) for _, r in ranked.iterrows()]
    out["conditions"] = ranked["conditions"].astype(int)
    return out.reset_index(drop=True)


def _per_condition(rows: pd.DataFrame, target: float) -> pd.DataFrame:
    out = []
    for cond, g in rows.groupby("condition", sort=True):
        rec = recommend_policy(g.assign(conditions=1).reset_index(drop=True), target)
        out.append(
            {
                "condition": cond,
                "meets target": state_words(rec.state),
                "pick": rec.label,
                "precision": fmt_metric(rec.pick, "precision"),
                "helpful wait": fmt_metric(rec.pick, "helpful_wait"),
                "not separable from": ", ".join(rec.tied_with),
            }
        )
    return pd.DataFrame(out)


def _writer_table(rows: pd.DataFrame) -> pd.DataFrame | None:
    """Per policy, the condition in which its reviewer promoted the most of the writer's
    pushed non-helpful rules (the inflation itself does not depend on the policy)."""
    if "pushed_promoted_rate" not in rows:
        return None
    t = rows.dropna(subset=["pushed_promoted_rate"])
    if t.empty:
        return None
    t = t.loc[t.groupby("policy")["pushed_promoted_rate"].idxmax()].sort_values(
        "pushed_promoted_rate", ascending=False
    )
    return pd.DataFrame(
        {
            "policy": t["policy"],
            "condition": t["condition"],
            "pushed non-helpful rules promoted": [
                fmt_metric(r, "pushed_promoted_rate") for _, r in t.iterrows()
            ],
            "supporter_count / supporter_writers (pushed rules)": [
                fmt_metric(r, "pushed_count_per_writer") for _, r in t.iterrows()
            ],
            "ids one writer sent per rule": [
                fmt_metric(r, "fabricated_ids_per_writer") for _, r in t.iterrows()
            ],
            "exact": t["fabricated_ids_per_writer_exact"],
        }
    ).reset_index(drop=True)


def learnings_section(sweep: Sweep, target: float = TARGET_PRECISION) -> Section | None:
    runs = policy_runs(sweep)
    if runs is None:
        return None
    rows, few = boundary_precision(runs.rows, target)
    worst = _median_interval(
        rows, worst_case(rows, "policy", {m: w for m, w in WORST.items() if m in rows})
    )
    rec = recommend_policy(worst, target)
    conds = ", ".join(short_name(c) for c in runs.condition_cols) or "none"
    blocks: list = world_blocks(
        rows, WORLD_READS, "The recommended policy", False, [f"scenario.{k}" for k in POLICY_KEYS]
    )
    blocks += [
        Table(
            f"Review policies ranked by their worst case over the swept conditions ({conds});"
            f" target precision >= {target:g} (value ± Monte Carlo SE)",
            _ranked_table(rec.ranked),
        ),
        f"Precision: helpful rules among the rules promoted. Helpful wait: sessions until a "
        f"helpful rule is promoted, a rule never promoted counted at the horizon (so a policy "
        f"cannot look fast by promoting few). Two figures are called apart only when they "
        f"differ by more than {NOISE_Z:g} standard errors of the difference."
        + (
            f" A precision of 0 or 1 ({few} of the {len(rows)} runs: every rule promoted of one"
            f" kind) carries the binomial SE at the target over the n rules promoted, sqrt("
            f"{target:g} (1 - {target:g}) / n), so a few promoted rules never read as a pass."
            if few
            else ""
        ),
    ]
    if rows["condition"].nunique() > 1:
        blocks.append(
            Table("Best policy in each swept condition on its own", _per_condition(rows, target))
        )
    if rows["precision"].notna().any():  # a policy that promotes nothing has no point
        blocks.append(
            Figure(
                "learnings_precision_vs_promotion",
                png_bytes(precision_figure(runs.rows, target)),
                "Precision against sessions to promotion for every policy (colour) in "
                "every condition (marker); dashed: the target precision. Left: mean over "
                "promoted helpful rules; right: over every helpful rule, never promoted "
                "counted at the horizon.",
            )
        )
    writers = _writer_table(rows)
    if writers is not None:
        blocks.append(
            Table(
                "One multi-user writer: how far it inflates supporter_count against "
                "supporter_writers, the distinct ids it sent per pushed rule (exact: "
                "occupancy), and the share of its non-helpful rules promoted",
                writers,
            )
        )
    blocks += holds_blocks(sweep, str(rec.pick["policy"]), target, len(worst) == 1)
    blocks.append(ASSUMPTIONS)
    return Section("learnings", "Learnings review queue: which review policy", rec.sentence, blocks)


@report_section("learnings", order=60)
def _learnings_report(sweep: Sweep, options: ReportOptions) -> Section | None:
    return learnings_section(sweep)


__all__ = ["learnings_section", "policy_runs", "recommend_policy"]
