"""Configurations and conditions: how the runs of one scenario are told apart.

A *configuration* is what a researcher sets on the component under study: the swept
params under its config group (``gate`` for gates, ``rule`` for the confidence rule,
...). A *condition* is the world it was tried in: every other swept param except the
seed. Labels read ``alpha=0.05, beta=0.2``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

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


def label(row: pd.Series, cols: list[str], empty: str) -> str:
    """``key=value, ...`` over ``cols`` (last dotted component as key), ``empty`` if none."""
    if not cols:
        return empty
    return ", ".join(f"{c.split('.')[-1]}={show(row[c])}" for c in cols)


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


def label_runs(
    sweep: Sweep, scenarios: tuple[str, ...], group: str, needed: tuple[str, ...], empty: str
) -> Labelled | None:
    """The FINISHED runs of ``scenarios`` carrying every metric in ``needed``, labelled.

    None when there are none (the report then leaves the family's section out).
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
    runs["config"] = [label(r, config_cols, empty) for _, r in runs.iterrows()]
    runs["condition"] = [label(r, condition_cols, "as configured") for _, r in runs.iterrows()]
    order = sorted(range(len(runs)), key=lambda i: _order_key(runs.iloc[i], condition_cols))
    return Labelled(runs, config_cols, condition_cols, str(runs.at[order[0], "condition"]))


def at_reference(lab: Labelled, keep: str | None = None) -> pd.DataFrame:
    """Rows at the reference condition; with ``keep``, that condition param may vary."""
    if keep is None:
        return lab.rows[lab.rows["condition"] == lab.reference_condition]
    ref = lab.rows[lab.rows["condition"] == lab.reference_condition].iloc[0]
    t = lab.rows
    for c in lab.condition_cols:
        if c != keep:
            t = t[t[c].map(repr) == repr(ref[c])]
    return t
