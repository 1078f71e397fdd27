"""Each confidence rule at its worst over the worlds it ran in, every cell naming its world.

Every metric shown is worst-cased on its own (a low share kept or excluded, a high number
of sessions to exclusion, a low success rate), and each cell says in which world (a
letter, described in the worlds table) that worst value came from, with its Monte Carlo
SE. Only configurations run in every world of the sweep are ranked against each other;
one run in fewer worlds is flagged, since its worst case covers less.
"""

from __future__ import annotations

import pandas as pd

from reports.claims import NOISE_Z, WITHIN_NOISE
from reports.evidence import fmt, fmt_share
from reports.recommend import Recommendation, recommend_confidence
from reports.sections.confidence_runs import ConfidenceRuns

WORST = {
    "helpful_retained": False,
    "harmful_excluded": False,
    "sessions_to_exclude_harmful": True,
    "session_success_rate": False,
}
"""Metric -> whether a higher value is worse."""


def worst_by_rule(runs: ConfidenceRuns) -> pd.DataFrame:
    """One row per configuration: for each metric its worst value, ``_se`` and ``_world``;
    ``worlds`` (how many it ran in) and ``in_every_world``."""
    n_worlds = len(runs.worlds)
    out = []
    for label, group in runs.rows.groupby("label", sort=False):
        row = {"label": label, "seed_rule": bool(group["seed_rule"].iloc[0])}
        row["worlds"] = group["world"].nunique()
        row["in_every_world"] = row["worlds"] == n_worlds
        row["replications"] = _replications(group)
        for metric, high_is_worse in WORST.items():
            if metric not in group or group[metric].isna().all():
                continue
            values = group[metric].astype(float)
            i = values.idxmax() if high_is_worse else values.idxmin()
            row[metric] = float(group.at[i, metric])
            se = group.at[i, f"{metric}_se"] if f"{metric}_se" in group else float("nan")
            row[f"{metric}_se"] = float(se)
            row[f"{metric}_world"] = group.at[i, "world"]
            row[f"{metric}_n"] = group.at[i, "replications"]
        out.append(row)
    return pd.DataFrame(out)


def _replications(group: pd.DataFrame) -> str:
    values = sorted({int(v) for v in group["replications"].dropna()})
    return "/".join(f"{v:,}" for v in values)


def share_text(r: pd.Series, metric: str, n_key: str | None = None) -> str:
    """``value ± SE``; a share of exactly 0 or 1 (plug-in SE 0: every replication agreed)
    shows instead its exact one-sided 95 % bound (``evidence.fmt_share``), with ``n`` the
    replications behind the value (column ``n_key``, default ``<metric>_n``)."""
    value, se = float(r[metric]), float(r.get(f"{metric}_se", float("nan")))
    n = r.get(n_key or f"{metric}_n")
    if se == 0 and value in (0.0, 1.0) and n:
        return fmt_share(value, int(n))
    return fmt(value, se)


def worst_table(worst: pd.DataFrame, rec: Recommendation | None) -> pd.DataFrame:
    """The shown table: one cell per metric, ``value ± SE (world)``."""
    rows = []
    ranked = {} if rec is None else {str(r["label"]): i for i, r in rec.ranked.iterrows()}
    for _, r in worst.iterrows():
        cell = {"rule": r["label"]}
        if r["in_every_world"] and r["label"] in ranked:
            cell["rank"] = str(ranked[r["label"]] + 1)
        elif r["in_every_world"]:
            cell["rank"] = "not ranked: the only rule run in every world"
        else:
            cell["rank"] = f"not ranked: ran in {worlds_said(int(r['worlds']))} only"
        for metric in WORST:
            if metric in r and pd.notna(r.get(metric)):
                v = share_text(r, metric)
                cell[f"worst {metric.replace('_', ' ')}"] = f"{v} ({r[f'{metric}_world']})"
        cell["replications per run"] = r["replications"]
        rows.append(cell)
    return pd.DataFrame(rows)


def rank_worst(worst: pd.DataFrame, target_excluded: float) -> Recommendation | None:
    """``recommend_confidence`` over the configurations run in every world (None when
    fewer than two were)."""
    full = worst[worst["in_every_world"]]
    if len(full) < 2:
        return None
    seed = full.loc[full["seed_rule"], "label"]
    return recommend_confidence(
        full.reset_index(drop=True), target_excluded, "label", seed.iloc[0] if len(seed) else None
    )


def _kept(b: pd.Series) -> str:
    share = fmt(b["helpful_retained"], b.get("helpful_retained_se"))
    return f"{share} of helpful procedures (world {b.get('helpful_retained_world', '')})"


def _excl(b: pd.Series) -> str:
    share = fmt(b["harmful_excluded"], b.get("harmful_excluded_se"))
    return f"{share} of harmful ones (world {b.get('harmful_excluded_world', '')})"


def worst_sentence(
    worst: pd.DataFrame, rec: Recommendation | None, n_worlds: int, target_excluded: float
) -> str:
    """What the worst-case ranking says, or why there is none."""
    partial = worst[~worst["in_every_world"]]
    flag = (
        f" {len(partial)} configuration(s) ran in fewer worlds: flagged, not ranked."
        if len(partial)
        else ""
    )
    if rec is None:
        full = worst[worst["in_every_world"]]
        if len(full) == 1:
            b = full.iloc[0]
            return (
                f"Only one rule was run in every world ({b['label']}), so this sweep ranks "
                f"none: at its worst it keeps {_kept(b)} and excludes {_excl(b)}; the "
                "confidence_sweep preset compares rules "
                "(python -m experiments.run -m experiment=confidence_sweep)." + flag
            )
        return "No rule ran in every world, so none is ranked by its worst case." + flag
    b = rec.pick
    kept, excl = f"{_kept(b)} kept", f"{_excl(b)} excluded"
    figure = "share kept" if rec.feasible else "share excluded"
    tied = (
        f"; tied with {', '.join(rec.tied_with)} ({figure} within {NOISE_Z:g} SE of the "
        "difference: the noise cannot order them)"
        if rec.tied_with
        else ""
    )
    if rec.state == WITHIN_NOISE:
        excl += f" (within {NOISE_Z:g} SE of the target: this sweep cannot tell which side)"
    worlds = f"run in all {n_worlds} worlds" if n_worlds > 1 else "in the one world run"
    if rec.feasible:
        where = f"its worst world (all {n_worlds})" if n_worlds > 1 else "its one world"
        return (
            f"Ranked by {where}, {b['label']} keeps the most helpful "
            f"procedures while excluding at least {target_excluded:g} of harmful ones "
            f"{'everywhere' if n_worlds > 1 else 'there'}: {kept}, {excl}{tied}." + flag
        )
    return (
        f"No rule {worlds} excludes at least {target_excluded:g} of harmful procedures"
        f"{' in each' if n_worlds > 1 else ''}; the nearest, {b['label']}: {excl}, {kept}{tied}."
        + flag
    )


def worlds_said(n: int) -> str:
    """``"1 world"``, ``"2 worlds"``."""
    return f"{n} world{'s' * (n != 1)}"
