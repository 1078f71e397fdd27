"""The confidence scenario's runs as rules and worlds, labelled in words.

A run's *rule* (its configuration) is rebuilt from the logged ``rule.*`` params through
the engine's registry (``FLAT_RULES``), so a label reads as the rule does
(``confidence +0.08/-0.15 from 0.6, threshold 0.55, top 6``) and a report can compare a
run's rule with the exact design tool's. Its *world* (the condition) is every other
swept param; worlds get a letter (A, B, ...) in sweep order and a description in words.
"""

from __future__ import annotations

import dataclasses
import string
from dataclasses import dataclass

import pandas as pd

from procmem_core.flat import DEFAULT_FILTER, DEFAULT_RULE, FlatRule
from procmem_core.logged import row_value, rule_from_params
from reports.configs import label_runs, same
from reports.source import Sweep, find_param

METRICS = ("helpful_retained", "harmful_excluded")


def rule_of(sweep: Sweep, row: pd.Series) -> tuple[FlatRule, float, int]:
    """``(rule, threshold, limit)`` of a run, from its ``rule.*`` params."""
    return rule_from_params(lambda f: row_value(row, find_param(sweep.param_names, f, "rule")))


def arithmetic_note(rule: FlatRule) -> str:
    """Which arithmetic a rule's figures use, in one sentence (docs/flat.md, "Float or
    grid")."""
    if rule.arithmetic == "float":
        return (
            "Confidences are computed as the seed's code does, in raw binary floats "
            "(rule.arithmetic=float; arithmetic=grid is the decimal reading)."
        )
    return (
        "Confidences are snapped to the decimal grid (rule.arithmetic=grid), not the seed's "
        "float arithmetic."
    )


def same_rule(a: FlatRule, b: FlatRule) -> bool:
    """The same class and every parameter equal (floats by ``numpy.isclose``)."""
    if type(a) is not type(b):
        return False
    return all(
        same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a) if f.init
    )


def is_seed(rule: FlatRule, threshold: float, limit: int) -> bool:
    return (
        same_rule(rule, DEFAULT_RULE)
        and same(threshold, DEFAULT_FILTER.threshold)
        and limit == DEFAULT_FILTER.limit
    )


def rule_label(rule: FlatRule, threshold: float, limit: int) -> str:
    text = f"{rule.describe()}, threshold {threshold:g}, top {limit}"
    return f"seed rule ({text})" if is_seed(rule, threshold, limit) else text


def _feedback_words(row: pd.Series, noisy: list[str]) -> str:
    """``feedback: false negative 0.1, missing 0.3, delay 2``: each noisy channel's
    setting by name (one word such as "noisy judge" would hide late and lost ratings)."""
    words = []
    for col in sorted(noisy):
        value = row_value(row, col)
        shown = f"{value:g}" if isinstance(value, float | int) else str(value)
        words.append(f"{col.rsplit('.', 1)[-1].replace('_', ' ')} {shown}")
    return "feedback: " + ", ".join(words)


def _world_words(sweep: Sweep, row: pd.Series) -> str:
    def get(key: str, group: str) -> object:
        return row_value(row, find_param(sweep.param_names, key, group))

    procs = get("procedures", "scenario")
    parts = [f"{procs} procedure{'s' if procs != 1 else ''}" if procs is not None else ""]
    rates = get("base_rates", "users")
    if isinstance(rates, str) and rates.strip("[] "):
        parts.append("bases " + "/".join(x.strip() for x in rates.strip("[]").split(",")))
    elif get("base_rate", "users") is not None:
        rho = get("heterogeneity", "users") or 0
        parts.append(f"base {get('base_rate', 'users'):g}" + (f" (ICC {rho:g})" if rho else ""))
    up, down = get("helpful_effect", "users"), get("harmful_effect", "users")
    if up is not None and down is not None:
        parts.append(f"lifts +{up:g}/-{down:g}")
    if get("interference", "users"):
        parts.append(f"interference {get('interference', 'users'):g}")
    noisy = [c for c in sweep.param_names if c.startswith("params.feedback.") and row_value(row, c)]
    parts.append(_feedback_words(row, noisy) if noisy else "perfect feedback")
    if get("withhold_rate", "scenario"):
        whole = get("withhold", "scenario") == "all"
        parts.append(f"{get('withhold_rate', 'scenario'):g} withheld{' whole' if whole else ''}")
    if get("reshow_rate", "scenario"):
        parts.append(f"re-shown {get('reshow_rate', 'scenario'):g}")
    if get("sessions", "scenario") is not None:
        parts.append(f"{get('sessions', 'scenario')} sessions")
    return ", ".join(p for p in parts if p)


@dataclass
class ConfidenceRuns:
    """Finished confidence runs: ``rows`` with ``rule``, ``threshold``, ``limit``,
    ``label`` (the configuration), ``world`` (a letter) and the metrics; ``worlds``
    maps each letter to its description."""

    rows: pd.DataFrame
    worlds: dict[str, str]


def confidence_runs(sweep: Sweep) -> ConfidenceRuns | None:
    """The confidence scenario's finished runs (None when the sweep has none)."""
    lab = label_runs(sweep, ("confidence",), "rule", METRICS, "seed rule")
    if lab is None:
        return None
    rows = lab.rows.copy()
    built = [rule_of(sweep, r) for _, r in rows.iterrows()]
    rows["rule"] = [b[0] for b in built]
    rows["threshold"] = [b[1] for b in built]
    rows["limit"] = [b[2] for b in built]
    rows["label"] = [rule_label(*b) for b in built]
    rows["seed_rule"] = [is_seed(*b) for b in built]
    reps = find_param(sweep.param_names, "replications", "scenario")
    rows["replications"] = rows[reps] if reps else float("nan")
    letters = {}
    for cond in rows["condition"]:
        letters.setdefault(cond, string.ascii_uppercase[len(letters) % 26])
    rows["world"] = rows["condition"].map(letters)
    words = {}
    for _, r in rows.drop_duplicates("world").iterrows():
        words[r["world"]] = _world_words(sweep, r)
    return ConfidenceRuns(rows.reset_index(drop=True), dict(sorted(words.items())))


def worlds_table(runs: ConfidenceRuns) -> pd.DataFrame:
    """One row per world: its letter, description and how many rules ran in it."""
    counts = runs.rows.groupby("world")["label"].nunique()
    return pd.DataFrame(
        {
            "world": list(runs.worlds),
            "what": list(runs.worlds.values()),
            "rules run": [int(counts.get(w, 0)) for w in runs.worlds],
        }
    )
