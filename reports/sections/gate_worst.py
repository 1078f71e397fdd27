"""Worst cases of the gate section, each cell naming where it came from.

``worst_rows``: one row per gate configuration holding, for every metric, its worst value
over the swept conditions, its SE and the condition it came from (a "worst-case row" is
never a mix of conditions presented as one operating point); ``complete`` says whether the
configuration ran in every condition: only those are ranked against each other.
``null_curves``: each configuration's exact false-revert rate against the prior's true rate
p0 (its run's ledger mixed in exactly), the curve whose maximum is the worst case.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from procmem_core.gates import Gate
from reports.evidence import fmt
from reports.gate_claims import ARM_METRICS, DESIGN_KEYS
from reports.recommend import GATE_METRICS
from reports.sections.gate_tables import GateRuns, ledger_of
from reports.source import Sweep

P0_GRID = np.linspace(0.05, 0.95, 91)


def worst_rows(rows: pd.DataFrame, metrics: tuple[str, ...] = GATE_METRICS) -> pd.DataFrame:
    """One row per configuration: each metric at its worst (largest) over conditions, with
    ``<metric>_se`` and ``<metric>_condition``; ``conditions`` and ``complete``; the
    ``DESIGN_KEYS`` a configuration logged one value of."""
    total = rows["condition"].nunique()
    out = []
    for config, g in rows.groupby("config", sort=True):
        row = {
            "config": config,
            "conditions": int(g["condition"].nunique()),
            "complete": bool(g["condition"].nunique() == total),
            "replications": g["replications"].iloc[0] if "replications" in g else None,
        }
        for key in DESIGN_KEYS:  # the design, where one holds for every condition
            if key in g and g[key].dropna().nunique() == 1:
                row[key] = g[key].dropna().iloc[0]
        for m in metrics:
            values = g[m].astype(float)
            idx = values.idxmax()
            row[m] = float(values[idx])
            row[f"{m}_se"] = float(g.at[idx, f"{m}_se"]) if f"{m}_se" in g else np.nan
            row[f"{m}_condition"] = str(g.at[idx, "condition"])
        row |= worst_sessions(g)
        out.append(row)
    return pd.DataFrame(out)


def worst_sessions(g: pd.DataFrame) -> dict:
    """Both arms' sessions of one configuration's runs (``ARM_METRICS``: the revision's and
    the prior's, which a paired gate's ``mean_runs_*`` leave out: it counts pairs), for
    ``null`` and ``alt`` each from the condition where their sum is largest, with their SEs
    and ``sessions_<label>_condition``. A run without them among runs with them (a fixed
    design beside a concurrent one) has every session on the revision (``mean_runs_*``)
    and none on the prior. Empty when none of the runs logged them."""
    out: dict = {}
    for label in ("null", "alt"):
        rev, prior = (f"{m}_{label}" for m in ARM_METRICS)
        if rev not in g or prior not in g:
            continue
        paired = g[rev].notna() & g[prior].notna()
        if not paired.any():
            continue
        nan = pd.Series(np.nan, index=g.index)
        runs = g[f"mean_runs_{label}"].astype(float)
        runs_se = g.get(f"mean_runs_{label}_se", nan).astype(float)
        values = {
            rev: (g[rev].astype(float), g.get(f"{rev}_se", nan).astype(float), runs, runs_se),
            prior: (g[prior].astype(float), g.get(f"{prior}_se", nan).astype(float), 0.0, 0.0),
        }
        both = sum(v.where(paired, alone) for v, _, alone, _ in values.values())
        if both.isna().all():
            continue
        idx = both.idxmax()
        for name, (v, se, alone, alone_se) in values.items():
            out[name] = float(v.where(paired, alone)[idx])
            out[f"{name}_se"] = float(se.where(paired, alone_se)[idx])
        out[f"sessions_{label}_condition"] = str(g.at[idx, "condition"])
    return out


def worst_table(worst: pd.DataFrame, several: bool) -> pd.DataFrame:
    """``worst_rows`` for reading: ``value ± SE (condition)`` in every metric cell."""
    out = pd.DataFrame({"configuration": worst["config"]})
    for m in GATE_METRICS:
        cells = []
        for _, r in worst.iterrows():
            cell = fmt(r[m], r[f"{m}_se"])
            cells.append(f"{cell} ({r[f'{m}_condition']})" if several else cell)
        out[m.replace("_", " ") + (" (worst, where)" if several else "")] = cells
    out["conditions run"] = worst["conditions"].astype(int)
    out["run in every condition"] = worst["complete"]
    return out


def null_curves(
    sweep: Sweep, gates: GateRuns, configs: tuple[str, ...], extra: dict[str, tuple[Gate, int]]
) -> pd.DataFrame:
    """``config, condition, ledger, p0, p_revert``: the exact false-revert rate at no change
    against p0, per configuration at the condition where its worst case is largest (plus
    ``extra`` gates by label, with their ledgers)."""
    frames = []
    for config in configs:
        best = None
        for _, r in gates.rows[gates.rows["config"] == config].iterrows():
            gate = gates.gates.get(r["run_id"])
            if gate is None or not gate.exact:
                continue
            ledger = ledger_of(sweep, r)
            curve = gate.operating_curve(P0_GRID, 0.0, ledger)
            if best is None or curve.p_revert.max() > best[0].p_revert.max():
                best = (curve, r["condition"], ledger)
        if best is not None:
            frames.append(_frame(config, *best))
    for label, (gate, ledger) in extra.items():
        frames.append(_frame(label, gate.operating_curve(P0_GRID, 0.0, ledger), "", ledger))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _frame(config: str, curve, condition: str, ledger: int | None) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "config": config,
            "condition": condition,
            "ledger": "p0 known" if ledger is None else ledger,
            "p0": curve.p0,
            "p_revert": curve.p_revert,
        }
    )
