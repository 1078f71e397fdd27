"""The analysis's parts after the lifts: the gate replay, the rule replay and (in
``world``) the fitted world, each writing its file and returning its report section."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from procmem_core.flat import DEFAULT_RULE, DEFAULT_THRESHOLD
from procmem_core.flat.design import RuleTargets, design_rule
from procmem_core.gates import Gate, MarginGate, SPRTGate, TwoSampleGate
from procmem_core.logs import Log
from procmem_core.logs.replay import agreement, gate_replay, rule_replay

Section = tuple[str, str, Any]


def default_gates() -> dict[str, Gate]:
    """The seed's SPRT (its cap rule), the seed server's margin gate and the exact
    two-sample test (concurrent design, grid-calibrated: docs/gates.md)."""
    return {"sprt": SPRTGate(), "margin": MarginGate(), "two_sample": TwoSampleGate()}


def gate_section(log: Log, out: Path, metrics: dict) -> Section:
    title = "Gate replay"
    if log.runs is None or log.revisions is None:
        return title, "The log has no runs and revisions files: no gate to replay.", None
    gates = default_gates()
    replay = gate_replay(log, gates)
    frame = pd.DataFrame(replay)
    frame.to_csv(out / "gate_replay.csv", index=False)
    counts = agreement(replay, gates)
    metrics |= {f"gate_{k}": float(v) for k, v in counts.items()}
    labels = "; ".join(f"{name}: {g.describe()}" for name, g in gates.items())
    text = (
        f"{counts.get('revisions', 0)} revisions with a prior replayed on the logged ledger as "
        "ProcedureStore.evolve judges them (each gate with the cost gate's veto; the prior "
        f"served after the proposal counts as concurrent). Gates: {labels}. "
    )
    if counts.get("with_logged_verdict"):
        agree = ", ".join(f"{g} {counts[f'{g}_agree']}" for g in gates)
        text += f"Agreement with the {counts['with_logged_verdict']} logged verdicts: {agree}."
    return title, text, frame


def designed_rule(log: Log) -> tuple[Any, float, str]:
    """The flat rule ``design_rule`` picks for this log's base rate (the withheld arm's
    success rate, else all rated sessions', rounded to 0.05), the seed's other targets."""
    s = log.sessions
    pick = ~np.isnan(s.outcome) & (s.withheld if s.withheld.any() else True)
    base = float(np.clip(np.round(np.nanmean(s.outcome[pick]) / 0.05) * 0.05, 0.15, 0.85))
    design = design_rule(RuleTargets(base=base))
    note = "meets" if design.feasible else "cannot meet (closest shown)"
    return design.pick.rule, design.pick.threshold, f"{design.targets.describe()}: {note}"


def rule_section(log: Log, out: Path, design: bool) -> Section:
    rules = {"seed": (DEFAULT_RULE, DEFAULT_THRESHOLD)}
    text = f"Seed rule: {DEFAULT_RULE.describe()}, threshold {DEFAULT_THRESHOLD:g}. "
    if design:
        rule, threshold, note = designed_rule(log)
        rules["designed"] = (rule, threshold)
        text += f"Designed rule: {rule.describe()}, threshold {threshold:g} ({note}). "
    frame = pd.DataFrame(rule_replay(log.sessions, rules))
    frame.to_csv(out / "rule_replay.csv", index=False)
    for name in rules:
        mine = frame[frame["rule"] == name]
        text += (
            f"{name}: drops {int(mine['dropped_at'].notna().sum())} of {len(mine)} procedures "
            "on their logged shown outcomes. "
        )
    text += "Each confidence walks over the sessions where its procedure was shown and rated."
    return "Rule replay", text, frame
