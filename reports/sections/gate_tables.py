"""Gate runs of a sweep as tables: configurations, conditions, operating points, exact curves.

A *configuration* is what a researcher sets on the gate (the swept params under the
``gate`` config group: alpha, beta, min_drop, max_runs, cap rule, ...). A *condition* is
the world it was tried in (every other swept param: ledger size, user heterogeneity,
feedback noise, the prior's success rate). The seeds' default is ``SPRTGate()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from procmem_core.gates import Gate, SPRTGate
from procmem_core.logged import gate_from_params, parse_param, row_value
from reports.configs import Labelled, label_runs, same
from reports.source import Sweep, find_param

SEED_GATE: dict[str, object] = SPRTGate().config()
"""The Loom seed's gate: SPRT, min_drop 0.15, alpha 0.05, beta 0.20, max_runs 50, ..."""

GATE_SCENARIOS = ("gate",)
EXACT_GRID = 41


@dataclass
class GateRuns(Labelled):
    """Gate runs labelled by configuration and condition (``reports.configs``).

    ``gates``: ``{run_id: Gate}`` rebuilt from each run's logged ``gate.*`` params by the
    registry (``make_gate``). ``default_label``: the configuration equal to the seeds'
    default, if the sweep has it.
    """

    gates: dict[str, Gate] = field(default_factory=dict)
    default_label: str | None = None


NEEDED = ("false_revert_rate", "missed_regression_rate", "mean_runs_null", "mean_runs_alt")


def logged_gate(sweep: Sweep, row: pd.Series) -> Gate | None:
    """The gate a run used, rebuilt from its logged ``gate.*`` params (None if it cannot be)."""

    def value(key: str) -> object:
        return parse_param(row_value(row, find_param(sweep.param_names, key, "gate")))

    return gate_from_params(value)


def gate_runs(sweep: Sweep) -> GateRuns | None:
    """The finished gate runs of ``sweep`` labelled by configuration and condition."""
    lab = label_runs(sweep, GATE_SCENARIOS, "gate", NEEDED, "gate", always=("max_runs",))
    if lab is None:
        return None
    gates: dict[str, Gate] = {}
    default_label = None
    rows = lab.rows
    for i, r in rows.iterrows():
        gate = logged_gate(sweep, r)
        if gate is None:
            continue
        gates[r["run_id"]] = gate
        config = gate.config()
        if all(same(config.get(k), v) for k, v in SEED_GATE.items()):
            if not lab.config_cols:
                rows.at[i, "config"] = "seed default"
            default_label = rows.at[i, "config"]
    if not lab.config_cols and default_label is None:
        rows["config"] = [gates[r].describe() if r in gates else "?" for r in rows["run_id"]]
    return GateRuns(
        rows, lab.config_cols, lab.condition_cols, lab.reference_condition, gates, default_label
    )


OP_COLUMNS = {
    "true_drop": "drop",
    "revert_rate": "p_revert",
    "revert_rate_se": "p_revert_se",
    "revert_rate_exact": "p_revert_exact",
    "revert_rate_wald": "p_revert_wald",
    "mean_runs_exact": "mean_runs_exact",
    "mean_runs_wald": "mean_runs_wald",
}


def _from_decisions(t: pd.DataFrame) -> pd.DataFrame:
    """Per-drop P(revert) (SE ``sqrt(r (1 - r) / R)``) and mean runs from per-replication rows."""
    if not {"true_drop", "runs_used", "verdict"} <= set(t.columns):
        return pd.DataFrame()
    rows = []
    for drop, g in t.groupby("true_drop", sort=True):
        n = len(g)
        rev = float((g["verdict"] == "revert").mean())
        runs = g["runs_used"].astype(float)
        rows.append(
            {
                "drop": float(drop),
                "replications": n,
                "p_revert": rev,
                "p_revert_se": float(np.sqrt(rev * (1 - rev) / n)),
                "mean_runs": float(runs.mean()),
                "mean_runs_se": float(runs.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan,
            }
        )
    return pd.DataFrame(rows)


def operating_points(sweep: Sweep, gates: GateRuns) -> pd.DataFrame:
    """Simulated P(revert) and mean runs per configuration, condition and true drop.

    From each run's ``operating_points`` table (all replications, with exact and Wald
    columns where they apply), else from its per-replication ``gate_decisions``.
    """
    frames = []
    for _, r in gates.rows.iterrows():
        tables = sweep.tables.get(r["run_id"], {})
        op = tables.get("operating_points")
        if op is not None and {"true_drop", "revert_rate", "mean_runs"} <= set(op.columns):
            t = op.rename(columns=OP_COLUMNS)
        elif tables.get("gate_decisions") is not None:
            t = _from_decisions(tables["gate_decisions"])
        else:
            continue
        if t.empty:
            continue
        frames.append(t.assign(run_id=r["run_id"], config=r["config"], condition=r["condition"]))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def p_prior_of(sweep: Sweep, row: pd.Series) -> float | None:
    """The prior revision's true success rate p0 of a gate run, if the sweep logged it."""
    col = find_param(sweep.param_names, "p_prior", "scenario")
    value = row[col] if col else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def ledger_of(sweep: Sweep, row: pd.Series) -> int | None:
    """The prior ledger's size of a gate run (None: p0 known)."""
    col = find_param(sweep.param_names, "ledger_size", "scenario")
    value = row[col] if col else None
    return None if value is None or value != value else int(value)


def exact_curves(
    sweep: Sweep, gates: GateRuns, max_drop: float
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Exact OC and expected runs (each gate's ``operating_point``) and, for gates with a
    design drop, the Wald-Wolfowitz lower bounds on expected runs at the gate's *achieved*
    error rates there (its exact false revert at no change and missed regression at the
    design drop), so the bound compares the gate with what its own errors allow.

    One curve per configuration at the reference condition, over true drops
    ``0 .. max_drop``, with that run's ledger (p0 known when it has none).
    """
    curves, bounds = [], []
    ref = gates.rows[gates.rows["condition"] == gates.reference_condition]
    for _, r in ref.drop_duplicates("config").iterrows():
        g = gates.gates.get(r["run_id"])
        p0 = p_prior_of(sweep, r)
        if g is None or p0 is None or not g.exact:
            continue
        drops = np.linspace(0.0, min(max_drop, p0), EXACT_GRID)
        op = g.operating_point(p0 - drops, p0, ledger_of(sweep, r))
        curves.append(
            pd.DataFrame(
                {
                    "config": r["config"],
                    "drop": drops,
                    "p_revert": np.asarray(op.p_revert, float),
                    "expected_runs": np.asarray(op.expected_runs, float),
                }
            )
        )
        md = g.design_drop
        if md is not None and p0 - md > 0:
            point = g.operating_point(np.array([p0, p0 - md]), p0, ledger_of(sweep, r))
            alpha, beta = float(point.p_revert[0]), 1.0 - float(point.p_revert[1])
            if not (alpha > 0 and beta > 0 and alpha + beta < 1):
                continue
            at_p0, at_p1 = g.expected_runs_lower_bound(p0, alpha, beta)
            bounds += [
                {"config": r["config"], "drop": 0.0, "bound": float(at_p0)},
                {"config": r["config"], "drop": md, "bound": float(at_p1)},
            ]
    exact = pd.concat(curves, ignore_index=True) if curves else pd.DataFrame()
    return exact, pd.DataFrame(bounds)


def efficient_frontier(table: pd.DataFrame, x: str, y: str) -> pd.Series:
    """True for rows no other row beats on both ``x`` and ``y`` (lower is better).

    A row is dominated when another has ``x <=`` and ``y <=`` with one strictly lower.
    """
    xs, ys = table[x].to_numpy(float), table[y].to_numpy(float)
    le = (xs[None, :] <= xs[:, None]) & (ys[None, :] <= ys[:, None])
    lt = (xs[None, :] < xs[:, None]) | (ys[None, :] < ys[:, None])
    dominated = (le & lt).any(axis=1)
    return pd.Series(~dominated, index=table.index)
