"""The flat rule's exact fates the report shows, computed once by the sweep (issue 24 item 3).

``flat_fate`` answers are asked in two places of the report: the fate section draws, per
configuration of its ``fate`` runs (rule, threshold, horizon: ``scenario.sessions``, 20
when not logged), the exact exclusion probability on a grid of ``GRID`` success rates;
the confidence section's break-even paragraph gives the seed's rule's exclusion
probability for a procedure that lifts a low-baseline task and one that lowers a
high-baseline task (from a world with several ``users.base_rates``, else bases 0.5 and
0.9 with lifts 0.1, over the world's ``scenario.sessions``, else 60). ``fate_answer``
returns every such fate of the sweep's runs as plain JSON, one entry per question
(``targets``: the rule's name and fields, threshold, sessions, p), which
``reports.answers.exact_fate`` looks up.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from procmem_core.flat import DEFAULT_FILTER, DEFAULT_RULE, FlatRule, flat_fate
from procmem_core.logged import row_value, rule_from_params, rule_key

GRID = np.linspace(0.0, 1.0, 51)
"""The success rates of the fate section's exact curves."""
DEFAULT_SESSIONS = 20
"""The fate curves' horizon when the sweep logged none."""
BREAK_EVEN_SESSIONS = 60
BREAK_EVEN_WORLD = ([0.5, 0.9], 0.1, 0.1)
"""The break-even paragraph's bases and lifts when no world has several base rates."""


def _baseline(rule: FlatRule) -> float | None:
    """What the fate scenario tells a baseline-reading rule: its prior (nothing withheld)."""
    return float(rule.baseline_estimate(0.0, 0.0)) if rule.needs_baseline else None


def _finished(runs: pd.DataFrame, scenario: str) -> pd.DataFrame:
    if "scenario" not in runs:
        return runs.iloc[0:0]
    return runs[(runs["scenario"] == scenario) & (runs["status"] == "FINISHED")]


def _questions(runs: pd.DataFrame) -> list[tuple[FlatRule, float, int, float]]:
    """Every ``(rule, threshold, sessions, p)`` the report asks of these runs."""
    out = []
    fates = _finished(runs, "fate")
    if "p_excluded" in fates and "params.scenario.p" in fates:
        for _, r in fates.dropna(subset=["p_excluded"]).iterrows():
            rule, threshold, _ = rule_from_params(lambda f, r=r: row_value(r, f"params.rule.{f}"))
            n = row_value(r, "params.scenario.sessions")
            if "params.scenario.sessions" in r and n is None:
                continue  # the report cannot draw a horizon it does not know
            sessions = DEFAULT_SESSIONS if n is None else int(n)
            out += [(rule, threshold, sessions, float(p)) for p in GRID]
    for _, r in _finished(runs, "confidence").iterrows():
        text = r.get("params.users.base_rates")
        bases, up, down = BREAK_EVEN_WORLD
        if isinstance(text, str) and text.strip("[] "):
            bases = [float(x) for x in text.strip("[]").split(",")]
            up, down = (r.get(f"params.users.{k}") for k in ("helpful_effect", "harmful_effect"))
        n = r.get("params.scenario.sessions")
        n = int(n) if n is not None and not (isinstance(n, float) and math.isnan(n)) else None
        for sessions in {n or BREAK_EVEN_SESSIONS, BREAK_EVEN_SESSIONS}:
            for world in (BREAK_EVEN_WORLD, (bases, up, down)):
                lo, hi = min(world[0]), max(world[0])
                for p in (min(1.0, lo + world[1]), max(0.0, hi - world[2])):
                    out.append((DEFAULT_RULE, DEFAULT_FILTER.threshold, sessions, p))
    return out


def fate_answer(runs: pd.DataFrame) -> dict | None:
    """Every exact fate the report shows of these runs (module docstring)."""
    entries, seen = [], set()
    for rule, threshold, sessions, p in _questions(runs):
        targets = {"rule": rule_key(rule), "threshold": threshold, "sessions": sessions, "p": p}
        key = repr(targets)
        if key in seen:
            continue
        seen.add(key)
        fate = flat_fate(p, sessions, rule, threshold, _baseline(rule))
        entries.append({"targets": targets, "p_excluded": fate.p_excluded})
    return {"entries": entries} if entries else None
