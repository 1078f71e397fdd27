"""What the sweep's gate ranking may say (``reports.recommend.recommend_gate``): the
sessions a decision costs, in total, per arm and in days; a row against both error
targets in three states; the rows the noise cannot order against the pick. The rules
themselves are ``reports.claims``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reports.claims import (
    WITHIN_NOISE,
    Option,
    beyond_noise,
    calendar,
    joint_state,
    state_words,
    target_state,
)
from reports.evidence import se_of

ARM_METRICS = ("mean_revision_runs", "mean_prior_runs")


def null_sessions(t: pd.DataFrame) -> pd.Series:
    """Sessions a revision takes when nothing changed, both arms counted where the rows
    have them (concurrent control: ``mean_revision_runs_null + mean_prior_runs_null``),
    else ``mean_runs_null`` (the fixed design: every session is the revision's)."""
    runs = t["mean_runs_null"].astype(float)
    cols = [f"{m}_null" for m in ARM_METRICS]
    if not all(c in t.columns for c in cols):
        return runs
    both = t[cols[0]].astype(float) + t[cols[1]].astype(float)
    return both.where(both.notna(), runs)


def null_sessions_se(t: pd.DataFrame) -> pd.Series:
    """The SE of ``null_sessions``: ``mean_runs_null_se``, or with both arms
    ``se_revision + se_prior`` (NaN where the rows carry no SE). The two means come from
    the same replications, and the arms move together (each fills until the pairs the
    gate reads), so the SE of their sum is at most the sum of their SEs (Cauchy-Schwarz)
    and close to it; ``sqrt(se_revision^2 + se_prior^2)`` assumed them independent and
    gave 0.71 of the sum's own SE at share 0.5, calling rows apart that the noise cannot
    order."""
    nan = pd.Series(np.nan, index=t.index)
    runs = t["mean_runs_null_se"].astype(float) if "mean_runs_null_se" in t else nan
    cols = [f"{m}_null_se" for m in ARM_METRICS]
    if not all(c in t.columns for c in cols):
        return runs
    both = t[cols[0]].astype(float) + t[cols[1]].astype(float)
    return both.where(both.notna(), runs)


def shortfall_se(t: pd.DataFrame, limits: dict[str, float]) -> pd.Series:
    """The SE of ``shortfall = sum_m max(0, x_m - t_m) / t_m`` over ``limits`` (metric:
    target), by the delta method: ``sqrt(sum over the metrics above target of (se_m /
    t_m)^2)`` (a metric within its target adds nothing; a missing SE counts 0)."""
    var = pd.Series(0.0, index=t.index)
    for m, limit in limits.items():
        se = t[f"{m}_se"].astype(float).fillna(0.0) if f"{m}_se" in t else 0.0
        var += ((t[m].astype(float) > limit) * (se / limit) ** 2).fillna(0.0)
    return np.sqrt(var)


def noise_ties(ranked: pd.DataFrame, label_col: str, tied: tuple[str, ...]) -> tuple:
    """``tied`` plus the rows as feasible as the first (same shortfall) whose sessions when
    nothing changed (``objective``) and runs at the drop (``mean_runs_alt``), the ranking's
    two keys, are both within the noise of its own (``reports.claims.beyond_noise``): the
    sweep cannot order them. When nothing is feasible the first is only "the nearest": an
    infeasible row whose ``shortfall`` is within the noise of the first's (``shortfall_se``)
    is tied with it too."""
    first = ranked.iloc[0]
    out = list(tied)
    for _, r in ranked.iloc[1:].iterrows():
        name = str(r[label_col])
        if name in out or bool(r["feasible"]) != bool(first["feasible"]):
            continue
        if not bool(first["feasible"]) and not beyond_noise(
            _option(first, "shortfall", "shortfall_se"), _option(r, "shortfall", "shortfall_se")
        ):
            out.append(name)
            continue
        apart = any(
            beyond_noise(_option(first, key, se), _option(r, key, se))
            for key, se in (("objective", "objective_se"), ("mean_runs_alt", "mean_runs_alt_se"))
        )
        if r["shortfall"] == first["shortfall"] and not apart:
            out.append(name)
    return tuple(out)


def _option(row: pd.Series, key: str, se: str) -> Option:
    return Option(key, float(row[key]), float(row.get(se, np.nan)))


DESIGN_KEYS = ("params.scenario.design", "params.gate.design")
"""Params that say whether a configuration's runs are all the revision's (fixed design)."""


def _design(pick: pd.Series) -> str | None:
    """The row's design (``fixed`` or ``concurrent``) as its run logged it, else None."""
    for key in (*DESIGN_KEYS, "design"):
        value = pick.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def sessions_note(pick: pd.Series, per_day: float | None) -> str:
    """What a decision costs in sessions, in total and per arm, when nothing changed and
    at the drop: concurrent control counts the prior's sessions
    (``mean_prior_runs_*``); the fixed design serves every session to the revision (its
    runs, with the prior's 0, also when the row has no per-arm columns). With
    ``per_day``, the calendar time of each (``reports.claims.calendar``); a worst case over
    several conditions names the one its sessions came from
    (``sessions_<label>_condition``, ``reports.sections.gate_worst.worst_sessions``)."""
    null = [pick.get(f"{m}_null") for m in ARM_METRICS]
    alt = [pick.get(f"{m}_alt") for m in ARM_METRICS]
    missing = any(x is None for x in (*null, *alt))  # a row without the per-arm columns
    if missing and _design(pick) != "fixed":
        return (  # its runs are already stated: say only what they leave out
            "; those runs count the revision's sessions only (no per-arm figures: a "
            "concurrent design's prior sessions are left out)"
        )
    if missing or any(x != x for x in (*null, *alt)):  # every session is the revision's
        null = [float(pick["mean_runs_null"]), 0.0]
        alt = [float(pick["mean_runs_alt"]), 0.0]
        arms = "all on the revision, none on the prior: no concurrent control"
    else:
        arms = "per arm: revision + prior"

    def cost(r: list, when: str, label: str) -> str:
        total = float(r[0]) + float(r[1])
        days = f", {calendar(total, per_day)}" if per_day else ""
        where = pick.get(f"sessions_{label}_condition")  # a worst case over conditions
        several = pick.get("conditions", 1)
        at = f"{where}: " if isinstance(where, str) and pd.notna(several) and several > 1 else ""
        return f"{total:.1f} sessions {when} ({at}{float(r[0]):.1f} + {float(r[1]):.1f}{days})"

    return (
        f"; a decision costs {cost(null, 'when nothing changed', 'null')} and "
        f"{cost(alt, 'at the drop', 'alt')}, {arms}"
    )


def gate_state(row: pd.Series, false_revert: float, missed_regression: float) -> str:
    """Both error rates of a row against their targets (``reports.claims.joint_state``)."""
    return joint_state(
        [
            target_state(row[m], se_of(row, m), limit, higher_is_better=False)
            for m, limit in (
                ("false_revert_rate", false_revert),
                ("missed_regression_rate", missed_regression),
            )
        ]
    )


def noise_note(state: str, what: str) -> str:
    """Said of a pick within noise of its target(s)."""
    if state != WITHIN_NOISE:
        return ""
    return (
        f"; {what} {state_words(state)} of the target: this sweep cannot tell whether it meets it"
    )
