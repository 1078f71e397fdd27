"""Configurations and conditions: how the runs of one scenario are told apart.

A *configuration* is what a researcher sets on the component under study: the swept
params under its config group (``gate`` for gates, ``rule`` for the confidence rule,
...). A *condition* is the world it was tried in: every other swept param except the
seed. Labels read as words: ``SPRT, alpha 0.05, min runs 3`` (a group's ``name`` as the
part's own label, any other key as its last part and the value).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from procmem_core.gates import GATES
from procmem_core.gates.prescribed import PRESCRIBED
from procmem_core.logged import unset_phrase
from reports.source import Sweep


@dataclass
class Labelled:
    """Finished runs of one family with ``config`` and ``condition`` label columns.

    ``reference_condition``: the condition figures are drawn at (missing values such
    as "p0 known" first, then the smallest numbers).
    """

    rows: pd.DataFrame
    config_cols: list[str]
    condition_cols: list[str]
    reference_condition: str


def show(value: object) -> str:
    """A param value as a label shows it."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "none"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


ACRONYMS = {"sprt": "SPRT", "ipw": "IPW", "aipw": "AIPW", "dim": "DiM", "llr": "LLR"}
"""Values written as their acronym in labels."""


def _named(group: str, value: object) -> str:
    """A group's ``name`` as words: a gate's own label (``SPRT``, ``margin gate``), else
    the value (acronyms upper-cased, underscores as spaces)."""
    text = show(value)
    if group in ("gate", "cost_gate") and text in GATES:
        return GATES[text].label
    if group == "gate" and text == PRESCRIBED:
        return "prescribed gate"  # the design tool's pick (procmem_core.gates.prescribed)
    return ACRONYMS.get(text.lower(), text.replace("_", " "))


def phrase(column: str, value: object) -> str:
    """One label part: ``min runs 3`` for ``params.gate.min_runs``; a name as its label."""
    parts = column.split(".")
    leaf = parts[-1]
    if leaf == "name":
        return _named(parts[-2] if len(parts) > 1 else "", value)
    text = show(value)
    words = unset_phrase(leaf) if text == "none" and "scenario" in parts else None
    if words is not None:
        return words  # e.g. no prior ledger: the gate was given the prior's true rate
    return f"{leaf.replace('_', ' ')} {ACRONYMS.get(text.lower(), text)}"


def _is_feedback(column: str) -> bool:
    return "feedback" in column.split(".")[:-1]


def label(row: pd.Series, cols: list[str], empty: str) -> str:
    """The parts of ``cols`` in words (names first), ``empty`` if none; the feedback
    settings read together: each one set, or "perfect feedback" when none is."""
    if not cols:
        return empty
    ordered = sorted(cols, key=lambda c: not c.endswith(".name"))
    parts = [phrase(c, row[c]) for c in ordered if not _is_feedback(c)]
    feedback = [c for c in ordered if _is_feedback(c)]
    if feedback:
        noisy = [phrase(c, row[c]) for c in feedback if show(row[c]) not in ("none", "0")]
        parts.append(", ".join(noisy) if noisy else "perfect feedback")
    return ", ".join(parts)


def same(a: object, b: object) -> bool:
    """Equal, with floats compared by ``numpy.isclose``."""
    numeric = (int, float, np.integer, np.floating)
    if isinstance(a, numeric) and isinstance(b, numeric) and not isinstance(a, bool):
        return bool(np.isclose(float(a), float(b)))
    return a == b


def _order_key(row: pd.Series, cols: list[str]) -> tuple:
    key = []
    for c in cols:
        v = row[c]
        if v is None or (isinstance(v, float) and np.isnan(v)):
            key.append((0, 0.0, ""))
        elif isinstance(v, int | float) and not isinstance(v, bool):
            key.append((1, float(v), ""))
        else:
            key.append((2, 0.0, str(v)))
    return tuple(key)


def _without_redundant(
    runs: pd.DataFrame, fixed: list[str], cols: list[str], text_first: bool
) -> list[str]:
    """Drop columns of ``cols`` that the other swept columns already determine.

    Conditions (``text_first``): a preset's case name (``case=gate_ledger``) says nothing
    the params it sets do not, so text columns go first and numeric params stay.
    Configurations (numeric first): ``gate.alpha`` is empty exactly when ``gate.name`` is
    margin, so the gate's name stays and the params it implies go.
    """
    keep = list(cols)
    feedback = [c for c in cols if _is_feedback(c)]
    if len(feedback) > 1:  # read together ("perfect feedback" or each setting), never one
        cols = [c for c in cols if c not in feedback]

    def is_text(c: str) -> bool:
        values = [v for v in runs[c] if v is not None and v == v]
        return bool(values) and all(isinstance(v, str) for v in values)

    def order(c: str) -> tuple[bool, bool]:
        # a component's own name (gate.name = sprt / margin) is the last to go
        return (is_text(c) != text_first, c.split(".")[-1] == "name")

    for c in sorted(cols, key=order):
        others = [o for o in fixed + keep if o != c]
        if not others:
            continue
        keys = runs[others].map(repr).agg("|".join, axis=1)
        if runs.groupby(keys)[c].agg(lambda v: v.map(repr).nunique()).max() <= 1:
            keep.remove(c)
    return keep


def _implied(runs: pd.DataFrame, swept: list[str], kept: list[str], key: list[str]) -> list[str]:
    """Swept columns left out of both labels that the configuration alone determines (one
    value per ``key`` combination) and whose set values differ between configurations:
    ``gate.beta`` set by the gate's name, the design its runs were given
    (``scenario.design``); a param only one kind of gate has (``gate.prior``) says nothing
    the name does not."""
    if not key:
        return []
    keys = runs[key].map(repr).agg("|".join, axis=1)
    out = []
    for c in swept:
        if c in kept or c.split(".")[-1] == "seed":
            continue
        if runs[c].dropna().map(repr).nunique() < 2:
            continue
        if runs.groupby(keys)[c].agg(lambda v: v.map(repr).nunique()).max() <= 1:
            out.append(c)
    return out


def _said(row: pd.Series, cols: list[str]) -> list[str]:
    """The columns of ``cols`` set in this row (an unset one is no part of its label)."""
    return [c for c in cols if show(row.get(c)) != "none"]


def label_runs(
    sweep: Sweep,
    scenarios: tuple[str, ...],
    group: str,
    needed: tuple[str, ...],
    empty: str,
    always: tuple[str, ...] = (),
) -> Labelled | None:
    """The FINISHED runs of ``scenarios`` carrying every metric in ``needed``, labelled.

    With ``always`` (param leaves of ``group``, e.g. ``max_runs``) the configuration labels
    say everything that tells the configurations apart (issue 30 item 10): the params of
    ``always``, and every swept param the configuration alone determines although the
    labels would not need it (``_implied``; each only where set), so "exact two-sample
    test, beta 0.4, min runs 3, max runs 50, design concurrent, concurrent share 0.5" says
    what ran. None when there are no runs (the report then leaves the family's section out).
    """
    runs = sweep.scenario_runs(*scenarios)
    runs = runs[runs["status"] == "FINISHED"].reset_index(drop=True)
    if runs.empty or any(m not in runs.columns for m in needed):
        return None
    runs = runs.dropna(subset=list(needed)).reset_index(drop=True)
    if runs.empty:
        return None
    swept = [p for p in sweep.param_names if runs[p].map(repr).nunique(dropna=False) > 1]
    config_cols = [p for p in swept if group in p.split(".")[1:-1]]
    condition_cols = [p for p in swept if p not in config_cols and p.split(".")[-1] != "seed"]
    config_cols = _without_redundant(runs, [], config_cols, text_first=False)
    condition_cols = _without_redundant(runs, config_cols, condition_cols, text_first=True)
    shown = config_cols
    if always:
        extra = [f"params.{group}.{k}" for k in always if f"params.{group}.{k}" in runs]
        kept = config_cols + condition_cols
        implied = _implied(runs, swept, kept, config_cols)
        shown = config_cols + [c for c in extra + implied if c not in config_cols]
        shown = sorted(shown, key=lambda c: (not c.endswith(".name"), group not in c.split(".")))
    runs["config"] = [label(r, _said(r, shown), empty) for _, r in runs.iterrows()]
    runs["condition"] = [label(r, condition_cols, "as configured") for _, r in runs.iterrows()]
    order = sorted(range(len(runs)), key=lambda i: _order_key(runs.iloc[i], condition_cols))
    return Labelled(runs, config_cols, condition_cols, str(runs.at[order[0], "condition"]))


def _same(value: object) -> str:
    """``repr`` of a cell, numpy scalars as Python ones: a row taken with ``iloc`` holds
    ``np.float64(0.25)`` where its column's cells read ``0.25``."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def at_reference(lab: Labelled, keep: str | None = None) -> pd.DataFrame:
    """Rows at the reference condition; with ``keep``, that condition param may vary."""
    if keep is None:
        return lab.rows[lab.rows["condition"] == lab.reference_condition]
    ref = lab.rows[lab.rows["condition"] == lab.reference_condition].iloc[0]
    t = lab.rows
    for c in lab.condition_cols:
        if c != keep:
            t = t[t[c].map(_same) == _same(ref[c])]
    return t
