"""The confidence section's exact rule design, computed once by the sweep (issue 24 item 3).

For every world the sweep ran in the exact regime (a finished ``confidence`` run whose
kept and excluded shares have exact counterparts, with one base rate), the question is
``RuleTargets(helpful_lift, harmful_lift = -harmful_effect, base, keep, exclude,
within)`` from its ``users.*`` and ``scenario.sessions`` params (``within``: the
report's ``--target-sessions`` when asked, else the world's sessions), and
``design_rule`` answers it for each family (``FAMILIES``), exactly, and each family's pick
is re-evaluated with the base rate and the lifts moved (``holds_if``). ``rule_answer``
returns them as plain JSON; ``reports.sections.confidence_design`` reads the one for its
world back (by its targets) and renders it.
"""

from __future__ import annotations

import dataclasses
import math

import pandas as pd

from procmem_core.flat.design import FAMILIES, DesignedRule, RuleDesign, RuleTargets, design_rule
from procmem_core.flat.sensitivity import rule_sensitivity

RULE_SCENARIO = "confidence"
DESIGN_READS = ("users.base_rate", "users.helpful_effect", "users.harmful_effect",
                "scenario.sessions")  # fmt: skip
"""The params the design reads: the base rate, both lifts and the horizon."""
KEEP = RuleTargets.keep
EXCLUDE = RuleTargets.exclude


def _number(row: pd.Series, column: str) -> float | None:
    v = row.get(column)
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def questions(
    runs: pd.DataFrame, keep: float, exclude: float, within: int | None = None
) -> list[RuleTargets]:
    """The distinct design questions of the sweep's exact-regime worlds (module docstring)."""
    if "scenario" not in runs or "helpful_retained_exact" not in runs:
        return []
    rows = runs[(runs["scenario"] == RULE_SCENARIO) & (runs["status"] == "FINISHED")]
    rows = rows[rows["helpful_retained_exact"].notna() & rows["harmful_excluded_exact"].notna()]
    out: list[RuleTargets] = []
    for _, r in rows.iterrows():
        rates = r.get("params.users.base_rates")
        if isinstance(rates, str) and rates.strip("[] "):
            continue  # several base rates: the design assumes one
        lifts = [_number(r, f"params.users.{k}") for k in ("helpful_effect", "harmful_effect")]
        base = _number(r, "params.users.base_rate")
        if None in lifts or base is None:
            continue
        sessions = within or int(_number(r, "params.scenario.sessions") or 0)
        t = RuleTargets(helpful_lift=lifts[0], harmful_lift=-lifts[1], base=base, keep=keep,
                        exclude=exclude, within=sessions)  # fmt: skip
        if t not in out:
            out.append(t)
    return out


def designed_json(d: DesignedRule) -> dict:
    """A designed rule as JSON: its rule's name and init fields, then its exact figures."""
    rule = {f.name: getattr(d.rule, f.name) for f in dataclasses.fields(d.rule) if f.init}
    out = dataclasses.asdict(d)
    return out | {"rule": {"name": d.rule.name, "fields": rule}}


def design_json(design: RuleDesign) -> dict:
    """A family's design as JSON (``designed_json`` for each designed rule)."""
    shortest = design.shortest
    return {
        "family": design.family,
        "targets": dataclasses.asdict(design.targets),
        "feasible": design.feasible,
        "pick": designed_json(design.pick),
        "frontier": [designed_json(d) for d in design.frontier],
        "candidates": design.candidates,
        "skipped": design.skipped,
        "reference": designed_json(design.reference),
        "shortest": None if shortest is None else [shortest[0], designed_json(shortest[1])],
        "holds_if": holds_if(design),
    }


def holds_if(design: RuleDesign) -> list[dict]:
    """``rule_sensitivity`` of the family's pick: its exact kept and excluded shares with
    the base rate or one lift moved (issue 30, "holds if / breaks when")."""
    rows = rule_sensitivity(design.pick.rule, design.pick.threshold, design.targets)
    return [r.to_json() for r in rows]


def rule_answer(
    runs: pd.DataFrame, keep: float = KEEP, exclude: float = EXCLUDE, within: int | None = None
) -> dict | None:
    """Every exact-regime world's design per family (module docstring); None without one."""
    asked = questions(runs, keep, exclude, within)
    if not asked:
        return None
    entries = [
        {
            "targets": dataclasses.asdict(t),
            "designs": {f: design_json(design_rule(t, f)) for f in FAMILIES},
            "reads": list(DESIGN_READS),
        }
        for t in asked
    ]
    return {"entries": entries}
