"""Recommended defaults, as pure functions on pandas tables (one row per configuration).

- Gates: the fewest expected sessions when nothing changed (``mean_runs_null``; with
  concurrent control both arms, ``mean_revision_runs_null + mean_prior_runs_null``), then
  the fewest at the drop (``mean_runs_alt``), among configurations whose
  ``false_revert_rate`` and ``missed_regression_rate`` are within targets (0.05 and 0.20 by
  default): most revisions change nothing, so that is the cost users pay most often.
- Explore: the smallest explore rate whose ``power`` reaches the target within the swept
  numbers of sessions, with its ``exploration_cost``.
- Confidence rule: the reward/penalty/threshold that keeps the most helpful procedures
  (``helpful_retained``) while excluding harmful ones (``harmful_excluded`` >= target).

Each result names the default row beside the pick and compares them metric by metric
(``reports.evidence``). Ties on the objective are broken by the lower total error, then
by label, and reported. Against its targets a row *meets*, is *within noise* of, or
*misses* them (``reports.claims.target_state``, column ``state``): a pick within noise is
said to be one, never a plain pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from procmem_core.errors import ParameterError, check_number, check_probability
from reports.claims import (
    MEETS,
    MISSES,
    NOISE_Z,
    Option,
    beyond_noise,
    spoken_list,
    target_state,
)
from reports.evidence import MetricComparison, compare, fmt, fmt_metric, require_columns, se_of
from reports.gate_claims import (
    gate_state,
    noise_note,
    noise_ties,
    null_sessions,
    null_sessions_se,
    sessions_note,
    shortfall_se,
)

TIE_RTOL = 1e-9

GATE_METRICS = ("false_revert_rate", "missed_regression_rate", "mean_runs_null", "mean_runs_alt")


def check_target(field: str, value: object) -> float:
    """A target rate kept as given: a number (not a string or a bool) in (0, 1]. A
    string passed ``check_probability`` (which converts it) and stayed a string on the
    frozen options, to fail later as a numpy type error in a comparison."""
    return check_number(field, value, minimum=0.0, maximum=1.0, open_low=True)


@dataclass(frozen=True)
class GateTargets:
    """Highest acceptable false revert rate and missed regression rate."""

    false_revert: float = 0.05
    missed_regression: float = 0.20

    def __post_init__(self) -> None:
        check_target("false_revert", self.false_revert)
        check_target("missed_regression", self.missed_regression)


@dataclass(frozen=True)
class Recommendation:
    """A pick among swept configurations, the evidence, and the default beside it.

    ``feasible`` is False when nothing met the targets; ``pick`` is then the nearest row.
    ``tied_with``: other labels with the same objective. ``ranked``: every row with its
    ``objective``, ``feasible`` and ``shortfall`` (how far outside the targets), best first.
    """

    family: str
    pick: pd.Series
    feasible: bool
    ranked: pd.DataFrame
    label_col: str
    default: pd.Series | None = None
    tied_with: tuple[str, ...] = ()
    comparisons: tuple[MetricComparison, ...] = field(default_factory=tuple)
    sentence: str = ""

    @property
    def label(self) -> str:
        return str(self.pick[self.label_col])

    @property
    def state(self) -> str:
        """The pick against the targets: meets, within noise or misses."""
        value = self.pick.get("state")
        return str(value) if isinstance(value, str) else (MEETS if self.feasible else MISSES)

    @property
    def differs_beyond_noise(self) -> bool:
        """Whether any compared metric differs from the default by more than the noise."""
        return any(c.exceeds_noise for c in self.comparisons)


def _rank(t: pd.DataFrame, tie_breaks: list[str]) -> pd.DataFrame:
    """Rows best first: feasible ones first, then the smallest ``shortfall``, ``objective``
    and ``tie_breaks`` in turn (a stable sort); tie-break columns named ``_*`` (made only
    for the sort) are dropped."""
    keys = ["feasible", "shortfall", "objective", *tie_breaks]
    ranked = t.sort_values(keys, ascending=[False] + [True] * (len(keys) - 1), kind="mergesort")
    scratch = [c for c in tie_breaks if c.startswith("_")]
    return ranked.drop(columns=scratch).reset_index(drop=True)


def _pick_best(
    ranked: pd.DataFrame, label_col: str, also: str | None = None
) -> tuple[pd.Series, tuple[str, ...]]:
    """The first row and the labels tied with it on the objective (and on ``also``)."""
    best = ranked.iloc[0]
    same = np.isclose(ranked["objective"], best["objective"], rtol=TIE_RTOL, atol=0.0)
    same &= np.isclose(ranked["shortfall"], best["shortfall"], rtol=TIE_RTOL, atol=0.0)
    if also is not None:
        col = ranked[also].astype(float)
        same &= np.isclose(col, float(best[also]), rtol=TIE_RTOL, atol=0.0)
    tied = tuple(str(x) for x in ranked.loc[same, label_col].iloc[1:])
    return best, tied


def _default_row(table: pd.DataFrame, label_col: str, default: str | None) -> pd.Series | None:
    if default is None:
        return None
    hit = table[table[label_col].astype(str) == str(default)]
    if hit.empty:
        raise ParameterError(
            "default", default, f"expected one of the labels {sorted(table[label_col].astype(str))}"
        )
    return hit.iloc[0]


COUNTED = {
    "mean_runs_null": "runs when nothing changed",
    "null_sessions": "sessions when nothing changed",
    "mean_runs_alt": "runs at the drop",
}
"""Compared figures that count runs ("fewer"/"more"); any other is a rate ("a lower"/"a
higher" and its name in words)."""


NAMED = {
    "helpful_retained": "share of helpful procedures kept",
    "harmful_excluded": "share of harmful procedures excluded",
}
"""Rates whose column name does not read as words."""


def _moved(metric: str, lower: bool) -> str:
    if metric in COUNTED:
        return f"{'fewer' if lower else 'more'} {COUNTED[metric]}"
    name = NAMED.get(metric, metric.replace("_", " "))
    return f"a {'lower' if lower else 'higher'} {name}"


def _tradeoff(comparisons: tuple[MetricComparison, ...], lower_is_better: dict[str, bool]) -> str:
    """How the pick differs from the default beyond the noise, gains first: "fewer sessions
    when nothing changed than the default, at the price of a higher missed regression
    rate, beyond the noise"."""
    better, worse = [], []
    for c in comparisons:
        if not c.exceeds_noise:
            continue
        lower = c.difference < 0
        good = lower == lower_is_better.get(c.metric, True)
        (better if good else worse).append(_moved(c.metric, lower))
    if not better and not worse:
        return "no difference from the default is larger than the Monte Carlo noise"
    if not better:
        return f"{spoken_list(worse)} than the default, beyond the noise"
    text = f"{spoken_list(better)} than the default"
    if worse:
        text += f", at the price of {spoken_list(worse)}"
    return text + ", beyond the noise"


def _condition(row: pd.Series, metric: str) -> str:
    """`` (<condition>)`` when ``row`` is a worst case over several conditions whose
    ``<metric>_condition`` names where that metric's worst came from, else ``""``."""
    where, several = row.get(f"{metric}_condition"), row.get("conditions", 1)
    if isinstance(where, str) and where and pd.notna(several) and int(several) > 1:
        return f" ({where})"
    return ""


def _worst_note(row: pd.Series, at: dict[str, str]) -> str:
    """Said when the figures of a worst-case row come from different conditions."""
    if len({w for w in at.values() if w}) < 2:
        return ""
    return (
        f", judged at its worst over {int(row['conditions'])} conditions (each figure's "
        "condition in brackets: no single condition has all four)"
    )


def recommend_gate(
    table: pd.DataFrame,
    targets: GateTargets | None = None,
    label_col: str = "config",
    default: str | None = None,
    sessions_per_day: float | None = None,
) -> Recommendation:
    """The gate with the fewest sessions when nothing changed (``null_sessions``), then
    the fewest runs at the drop, within the error targets.

    Infeasible rows are ranked by ``shortfall``, the summed relative excess over the
    targets, ``max(0, frr - t_fr)/t_fr + max(0, mrr - t_mr)/t_mr``; when no row is
    feasible the nearest one is returned with ``feasible=False``.
    """
    targets = targets or GateTargets()
    require_columns(table, (label_col, *GATE_METRICS), "recommend_gate")
    t = table.copy()
    t["objective"] = t["null_sessions"] = null_sessions(t)
    t["objective_se"] = t["null_sessions_se"] = null_sessions_se(t)
    t["_alt"] = t["mean_runs_alt"].astype(float)
    fr_excess = (t["false_revert_rate"] - targets.false_revert).clip(lower=0)
    mr_excess = (t["missed_regression_rate"] - targets.missed_regression).clip(lower=0)
    t["shortfall"] = fr_excess / targets.false_revert + mr_excess / targets.missed_regression
    t["feasible"] = t["shortfall"] <= 0
    t["shortfall_se"] = shortfall_se(
        t,
        {"false_revert_rate": targets.false_revert,
         "missed_regression_rate": targets.missed_regression},
    )  # fmt: skip
    limits = (targets.false_revert, targets.missed_regression)
    t["state"] = [gate_state(r, *limits) for _, r in t.iterrows()]
    t["total_error"] = t["false_revert_rate"] + t["missed_regression_rate"]
    t["_label"] = t[label_col].astype(str)
    ranked = _rank(t, ["_alt", "total_error", "_label"])
    pick, tied = _pick_best(ranked, label_col, "mean_runs_alt")
    tied = noise_ties(ranked, label_col, tied)
    feasible = bool(pick["feasible"])
    default_row = _default_row(ranked, label_col, default)
    # the pick and the default compared on what the ranking minimises: sessions when
    # nothing changed (both arms), not runs (a paired gate's pairs are two sessions each)
    compared = ("false_revert_rate", "missed_regression_rate", "null_sessions", "mean_runs_alt")
    comparisons = compare(pick, default_row, compared) if default_row is not None else ()
    at = {m: _condition(pick, m) for m in GATE_METRICS}
    what = f"{pick[label_col]}{_worst_note(pick, at)}"
    figures = (
        f"It decides in {fmt_metric(pick, 'mean_runs_null')} runs when nothing changed"
        f"{at['mean_runs_null']} and {fmt_metric(pick, 'mean_runs_alt')} runs on a real "
        f"regression{at['mean_runs_alt']}{sessions_note(pick, sessions_per_day)}. Its false "
        f"revert rate is {fmt_metric(pick, 'false_revert_rate')}{at['false_revert_rate']} and "
        f"its missed regression rate {fmt_metric(pick, 'missed_regression_rate')}"
        f"{at['missed_regression_rate']}"
    )
    state = str(pick["state"])
    if feasible:
        head = f"The swept gate to use, at its own max_runs, is {what}" + noise_note(
            state, "its error rates are"
        )
    else:
        head = (
            f"No swept gate meets the targets (false revert <= {targets.false_revert:g}, "
            f"missed regression <= {targets.missed_regression:g}) at its own max_runs; the "
            f"nearest is {what}" + noise_note(state, "it is")
        )
    if tied:
        why = "sessions when nothing changed" if feasible else "shortfall from the targets"
        head += f"; tied with {', '.join(tied)} ({why} within {NOISE_Z:g} SE of the difference)"
    head += f". {figures}"
    if default_row is not None and str(default_row[label_col]) != str(pick[label_col]):
        trade = _tradeoff(comparisons, {m: True for m in GATE_METRICS})
        head += f". No{trade[2:]}" if trade.startswith("no ") else f". It has {trade}"
    elif default_row is not None:
        head += ". It is the seeds' default"
    return Recommendation(
        "gate", pick, feasible, ranked, label_col, default_row, tied, comparisons, head + "."
    )


def recommend_explore(
    table: pd.DataFrame,
    target_power: float = 0.8,
    label_col: str = "explore_rate",
    default_rate: float = 0.0,
) -> Recommendation:
    """The smallest explore rate reaching ``target_power`` at some swept number of sessions.

    ``table`` rows: ``explore_rate``, ``sessions``, ``power`` (+ ``power_se``) and
    ``exploration_cost`` (successes forgone); pass one true lift at a time. Among the
    rows at the chosen rate that reach the target, the fewest sessions wins (least cost).
    When none reaches it, the row with the highest power is the nearest.
    """
    target_power = check_probability("target_power", target_power, open_low=True)
    require_columns(
        table, (label_col, "sessions", "power", "exploration_cost"), "recommend_explore"
    )
    t = table.copy()
    t["feasible"] = t["power"] >= target_power
    t["state"] = [
        target_state(r["power"], se_of(r, "power"), target_power, True) for _, r in t.iterrows()
    ]
    t["shortfall"] = (target_power - t["power"]).clip(lower=0)
    t["objective"] = t[label_col].astype(float)
    ranked = _rank(t, ["sessions", "exploration_cost"])
    pick = ranked.iloc[0]
    feasible = bool(pick["feasible"])
    same_sessions = ranked[ranked["sessions"] == pick["sessions"]]
    default_hit = same_sessions[np.isclose(same_sessions[label_col].astype(float), default_rate)]
    default_row = default_hit.iloc[0] if not default_hit.empty else None
    metrics = ("power", "exploration_cost")
    comparisons = compare(pick, default_row, metrics) if default_row is not None else ()
    what = (
        f"explore rate {float(pick[label_col]):g} over {int(pick['sessions'])} sessions"
        f" (power {fmt(pick['power'], se_of(pick, 'power'))}, cost "
        f"{fmt(pick['exploration_cost'], se_of(pick, 'exploration_cost'))} successes forgone)"
    )
    note = noise_note(str(pick["state"]), "its power is")
    if feasible:
        head = f"The smallest explore rate reaching power {target_power:g} is {what}{note}"
    else:
        head = f"No swept explore rate reaches power {target_power:g}; the nearest is {what}{note}"
    if default_row is not None:
        head += (
            f"; the seeds' default rate {default_rate:g} has power "
            f"{fmt(default_row['power'], se_of(default_row, 'power'))}"
        )
    return Recommendation(
        "explore", pick, feasible, ranked, label_col, default_row, (), comparisons, head + "."
    )


def recommend_confidence(
    table: pd.DataFrame,
    target_excluded: float = 0.9,
    label_col: str = "config",
    default: str | None = None,
) -> Recommendation:
    """The rule keeping the most helpful procedures while excluding harmful ones.

    Feasible: ``harmful_excluded >= target_excluded`` (excluded within the scenario's
    sessions). Objective: the highest ``helpful_retained``; ties go to the higher
    ``harmful_excluded``, then the label. When nothing is feasible, the row with the most
    harmful procedures excluded is the nearest.
    """
    target_excluded = check_probability("target_excluded", target_excluded, open_low=True)
    require_columns(
        table, (label_col, "helpful_retained", "harmful_excluded"), "recommend_confidence"
    )
    t = table.copy()
    t["feasible"] = t["harmful_excluded"] >= target_excluded
    t["state"] = [
        target_state(r["harmful_excluded"], se_of(r, "harmful_excluded"), target_excluded, True)
        for _, r in t.iterrows()
    ]
    t["shortfall"] = (target_excluded - t["harmful_excluded"]).clip(lower=0)
    t["objective"] = -t["helpful_retained"].astype(float)
    t["_neg_excl"] = -t["harmful_excluded"].astype(float)
    t["_label"] = t[label_col].astype(str)
    ranked = _rank(t, ["_neg_excl", "_label"])
    pick, tied = _pick_best(ranked, label_col)
    feasible = bool(pick["feasible"])
    # the pick keeps the most (feasible) or excludes the most (the nearest): a row the
    # noise cannot order against it on that figure is tied with it
    key = "helpful_retained" if feasible else "harmful_excluded"
    first = Option(key, float(pick[key]), se_of(pick, key))
    tied += tuple(
        str(r[label_col])
        for _, r in ranked.iloc[1:].iterrows()
        if bool(r["feasible"]) == feasible
        and str(r[label_col]) not in tied
        and not beyond_noise(first, Option(key, float(r[key]), se_of(r, key)))
    )
    default_row = _default_row(ranked, label_col, default)
    metrics = ("helpful_retained", "harmful_excluded")
    comparisons = compare(pick, default_row, metrics) if default_row is not None else ()
    what = (
        f"{pick[label_col]} (keeps {fmt(pick['helpful_retained'], se_of(pick, 'helpful_retained'))}"
        f" of helpful procedures, excludes "
        f"{fmt(pick['harmful_excluded'], se_of(pick, 'harmful_excluded'))} of harmful ones)"
    )
    note = noise_note(str(pick["state"]), "its share excluded is")
    if feasible:
        head = f"Use {what}{note}"
    else:
        head = (
            f"No swept rule excludes at least {target_excluded:g} of harmful procedures;"
            f" the nearest is {what}{note}"
        )
    lower_better = {"helpful_retained": False, "harmful_excluded": False}
    if default_row is not None and str(default_row[label_col]) != str(pick[label_col]):
        head += "; " + _tradeoff(comparisons, lower_better)
    elif default_row is not None:
        head += "; this is the seeds' default"
    if tied:
        head += f"; tied with {', '.join(tied)}"
    return Recommendation(
        "confidence", pick, feasible, ranked, label_col, default_row, tied, comparisons, head + "."
    )
