"""The learnings section's exact "holds if / breaks when" tables, computed once by the
sweep (issue 30).

The section prescribes a review policy from the sweep's simulated runs (its worst swept
condition); the exact figures beside it (``procmem_core.learnings.sensitivity``: the
review world without erasures or a multi-user writer) are asked here for every policy
the sweep ran, so the report only reads the one it prescribes. A policy's assumed world
is, among the worlds its finished runs ran in (``LearningsScenario``'s params, its
defaults where a run did not log one), the one with the lowest exact precision (the
section judges a policy by its worst condition); the largest erasure share and
multi-user writer share it ran are named as rows without an exact answer.
``learnings_answer`` returns plain JSON: ``entries`` (one per policy: targets
``{"policy": ReviewPolicy.describe(), "target_precision": ...}``, the world, the rows).
"""

from __future__ import annotations

import dataclasses
import math

import pandas as pd

from procmem_core.learnings import ReviewPolicy
from procmem_core.learnings.sensitivity import (
    TARGET_PRECISION,
    ReviewWorld,
    review_figures,
    review_sensitivity,
)
from simulators.scenarios.learnings import LearningsScenario

LEARNINGS_SCENARIO = "learnings"
POLICY_KEYS = ("min_writers", "min_users", "combine")
UNMODELLED = ("erasure_share", "multi_user_share")
"""Conditions of the sweep with no exact answer (the exact figures assume them 0)."""


def _param(row: pd.Series, key: str):
    value = row.get(f"params.scenario.{key}")
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return LearningsScenario.__dataclass_fields__[key].default
    return value


def policy_of(row: pd.Series) -> ReviewPolicy:
    """The review policy a run's reviewer followed (its logged params, else the defaults)."""
    w, u, c = (_param(row, k) for k in POLICY_KEYS)
    return ReviewPolicy(int(w), int(u), str(c))


def world_of(row: pd.Series) -> ReviewWorld:
    """The exact review world of a run (``ReviewWorld``'s fields from its params)."""
    kinds = {"int": int, "float": float}  # the fields' annotations (postponed: strings)
    fields = dataclasses.fields(ReviewWorld)
    return ReviewWorld(**{f.name: kinds[str(f.type)](_param(row, f.name)) for f in fields})


def learnings_answer(runs: pd.DataFrame, target: float = TARGET_PRECISION) -> dict | None:
    """Every swept policy's exact sensitivity (module docstring); None without a finished
    learnings run."""
    if "scenario" not in runs or "status" not in runs:
        return None
    rows = runs[(runs["scenario"] == LEARNINGS_SCENARIO) & (runs["status"] == "FINISHED")]
    if rows.empty:
        return None
    by_policy: dict[ReviewPolicy, list[pd.Series]] = {}
    for _, r in rows.iterrows():
        by_policy.setdefault(policy_of(r), []).append(r)
    entries = []
    for policy, mine in by_policy.items():
        worlds = list(dict.fromkeys(world_of(r) for r in mine))
        precision = [review_figures(policy, w).precision for w in worlds]
        worst = worlds[min(range(len(worlds)), key=lambda i: _low_first(precision[i]))]
        unmodelled = [(k, max(float(_param(r, k)) for r in mine)) for k in UNMODELLED]
        entries.append(
            {
                "targets": {"policy": policy.describe(), "target_precision": target},
                "world": dataclasses.asdict(worst),
                "sensitivity": [
                    r.to_json() for r in review_sensitivity(policy, worst, target, unmodelled)
                ],
            }
        )
    return {"entries": entries}


def _low_first(p: float) -> float:
    return -math.inf if math.isnan(p) else p
