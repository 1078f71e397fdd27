"""The explore section's planner answers, computed once by the sweep (issue 24 item 3).

The explore section sets the planner (``procmem_core.ab.planner``) beside the sweep's
simulated power: per true lift and horizon, ``plan`` over the swept explore rates (read
once at the horizon, and sequentially), and ``fixed_power`` at every swept cell. The
questions are read off the sweep's finished ``explore`` runs (with ``power`` and
``exploration_cost``): the base rate (``users.base_rate``, when it is the same in every
run), alpha (``1 - explore.confidence_level``, else 0.05), the explore rates as the jobs
used them (``explore.explore_rate``, else ``scenario.explore_rate``), each run's horizon
(``scenario.sessions``) and true lift (its ``true_lift`` metric). ``explore_answer``
returns them as plain JSON: ``entries`` (one per lift and horizon: the targets, the plan
and the sequential pick; ``plan`` None when the planner refuses the design; ``holds_if``:
the fixed-n pick's power with the true lift and the horizon moved,
``procmem_core.ab.sensitivity``) and
``fixed_power`` (one per cell), which ``reports.sections.explore_choice`` reads back.
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from procmem_core.ab.planner import Design, fixed_power, plan
from procmem_core.ab.sensitivity import explore_sensitivity
from procmem_core.errors import ProcmemError

EXPLORE_SCENARIO = "explore"
NEEDED = ("power", "exploration_cost")
ALPHA = 0.05
"""The planner's level when the runs do not state their confidence level."""
AGREEMENT_POWER = 0.8
"""The power the planner's fixed-n check against the simulation is asked at."""


def _setting(rows: pd.DataFrame, key: str) -> pd.Series | None:
    """An explore setting as the job used it: ``explore.<key>``, else ``scenario.<key>``."""
    own, fallback = rows.get(f"params.explore.{key}"), rows.get(f"params.scenario.{key}")
    if own is None:
        return fallback
    return own if fallback is None else own.where(own.notna(), fallback)


def explore_cells(runs: pd.DataFrame) -> tuple[pd.DataFrame, float, float] | None:
    """The explore runs with ``explore_rate`` and ``sessions``, the base rate and alpha
    (module docstring); None when the planner has nothing to answer."""
    if "scenario" not in runs or any(m not in runs for m in (*NEEDED, "dim_power")):
        return None
    rows = runs[(runs["scenario"] == EXPLORE_SCENARIO) & (runs["status"] == "FINISHED")]
    rows = rows.dropna(subset=list(NEEDED))
    rate, base = _setting(rows, "explore_rate"), rows.get("params.users.base_rate")
    sessions = rows.get("params.scenario.sessions")
    if rows.empty or rate is None or rate.isna().any() or sessions is None or base is None:
        return None
    if base.nunique() != 1 or "true_lift" not in rows:
        return None
    level = rows.get("params.explore.confidence_level")
    alpha = 1 - float(level.iloc[0]) if level is not None and level.notna().all() else ALPHA
    cells = rows.assign(explore_rate=rate.astype(float), sessions=sessions.astype(int))
    return cells, float(base.iloc[0]), alpha


def _plan_entry(lift: float, base: float, alpha: float, target: float, rates, horizon: int):
    asked = {"lift": lift, "base": base, "target_power": target, "alpha": alpha,
             "rates": list(rates), "horizon": horizon}  # fmt: skip
    try:
        design = Design(lift, base, target, alpha)
    except ProcmemError:
        return {"targets": asked, "plan": None, "sequential_pick": None}
    p = plan(design, tuple(rates), horizon)
    seq = plan(design, tuple(rates), horizon, sequential=True).pick
    return {
        "targets": asked,
        "plan": {
            "rates": [dataclasses.asdict(r) for r in p.rates],
            "pick": None if p.pick is None else dataclasses.asdict(p.pick),
        },
        "sequential_pick": None if seq is None else dataclasses.asdict(seq),
        "holds_if": []
        if p.pick is None
        else [r.to_json() for r in explore_sensitivity(design, horizon, p.pick.explore_rate)],
    }


def _power(lift: float, base: float, alpha: float, sessions: int, rate: float) -> dict:
    asked = {"lift": lift, "base": base, "alpha": alpha, "sessions": sessions, "rate": rate}
    try:
        design = Design(lift, base, AGREEMENT_POWER, alpha)
    except ProcmemError:
        return {"targets": asked, "power": None}
    return {"targets": asked, "power": fixed_power(design, sessions, rate)}


def explore_answer(runs: pd.DataFrame, target_power: float = AGREEMENT_POWER) -> dict | None:
    """The planner's answers for the sweep's explore cells (module docstring)."""
    found = explore_cells(runs)
    if found is None:
        return None
    cells, base, alpha = found
    rates = sorted(cells["explore_rate"].unique())
    pairs = dict.fromkeys(zip(cells["true_lift"].astype(float), cells["sessions"], strict=True))
    entries = [_plan_entry(lift, base, alpha, target_power, rates, int(n)) for lift, n in pairs]
    powers = [
        _power(float(r["true_lift"]), base, alpha, int(r["sessions"]), float(r["explore_rate"]))
        for _, r in cells.iterrows()
    ]
    return {"entries": entries, "fixed_power": powers}
