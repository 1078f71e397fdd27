"""Sweep-wide tables: ``summary.csv`` (one row per child run) and simulated-vs-exact checks."""

from __future__ import annotations

import numpy as np
import pandas as pd

from procmem_core.metric import Metric
from reports.calibration import calibration, normal_scale
from reports.document import Section, Table
from reports.source import Sweep

AGREEMENT_COLUMNS = ("scenario", "run", "metric", "simulated", "se", "exact", "z", "df", "normal z")
"""The agreement table's columns (``df``: NaN when the SE is not estimated from few
replications, and then ``normal z`` is ``z``)."""
AGREEMENT_Z = 4.0
"""A simulated figure and its exact counterpart must agree within this many SEs."""

RUN_COLUMNS = ("run_id", "run_name", "scenario", "status", "config_hash", "seed")


def short_name(param: str) -> str:
    """``params.gate.alpha`` -> ``gate.alpha``."""
    return param.removeprefix("params.")


def measured_metrics(metric_names: tuple[str, ...]) -> list[str]:
    """Metrics with a standard error or an exact counterpart, each followed by them."""
    names = set(metric_names)
    out = []
    for m in sorted(names):
        if m.endswith(("_se", "_exact")):
            continue
        if f"{m}_se" in names or f"{m}_exact" in names:
            out += [m] + [f"{m}{s}" for s in ("_se", "_exact") if f"{m}{s}" in names]
    return out


def summary_table(sweep: Sweep) -> pd.DataFrame:
    """One row per child run: identity, swept params, key metrics with their SEs."""
    runs = sweep.runs
    cols = [c for c in RUN_COLUMNS if c in runs.columns]
    params = list(sweep.swept_params)
    metrics = [m for m in measured_metrics(sweep.metric_names) if m in runs.columns]
    out = runs[cols + params + metrics].copy()
    return out.rename(columns={p: short_name(p) for p in params}).reset_index(drop=True)


def agreement_table(sweep: Sweep) -> pd.DataFrame:
    """Every simulated metric ``x`` with ``x_se`` and ``x_exact``: ``z = (x - exact) / se``.

    When ``x_exact`` is computed from the same replications as ``x`` (an expectation given
    what each replication drew), the run logs ``x_diff_se``, the SE of the mean paired
    difference, and ``se`` is that one (``simulators.scenarios.loop_lift``); with
    ``x_diff_n`` replications behind it, ``df = n - 1`` and ``normal z`` is that t-score on
    the normal scale (``reports.calibration.normal_scale``); elsewhere ``normal z = z``."""
    rows = []
    names = set(sweep.metric_names)
    pairs = [m for m in sorted(names) if f"{m}_se" in names and f"{m}_exact" in names]
    for _, r in sweep.runs.iterrows():
        for m in pairs:
            sim, se, exact = r.get(m), r.get(f"{m}_se"), r.get(f"{m}_exact")
            paired = r.get(f"{m}_diff_se")
            se = se if paired is None or np.isnan(paired) else paired
            if any(v is None or np.isnan(v) for v in (sim, se, exact)):
                continue
            z = Metric(sim, se, exact).z  # SE 0: 0 when equal up to rounding, else inf
            n = r.get(f"{m}_diff_n") if paired is not None and not np.isnan(paired) else None
            df = float(n) - 1.0 if n is not None and not np.isnan(n) and n >= 2 else np.nan
            rows.append(
                {
                    "scenario": r["scenario"],
                    "run": r.get("run_name") or r["run_id"],
                    "metric": m,
                    "simulated": sim,
                    "se": se,
                    "exact": exact,
                    "z": z,
                    "df": df,
                    "normal z": normal_scale(z, df),
                }
            )
    return pd.DataFrame(rows, columns=[*AGREEMENT_COLUMNS])


def agreement_section(sweep: Sweep) -> Section | None:
    """Do the simulated figures agree with the exact ones, and are their SEs right? The
    answer rests on every pair within ``AGREEMENT_Z`` SEs and on the z-scores'
    calibration (``reports.calibration``). None when nothing is exact."""
    t = agreement_table(sweep)
    if t.empty:
        return None
    bad = t[t["normal z"].abs() > AGREEMENT_Z]
    worst = float(t["normal z"].abs().max())
    cal = calibration(t)
    calibrated = cal is None or cal.ok
    if bad.empty:
        answer = (
            f"{'Yes' if calibrated else 'Not quite'}: all {len(t)} simulated figures with an "
            f"exact counterpart agree with it within {AGREEMENT_Z:g} standard errors "
            f"(largest |z| = {worst:.2f})."
        )
    else:
        answer = (
            f"No: {len(bad)} of {len(t)} simulated figures differ from their exact value by "
            f"more than {AGREEMENT_Z:g} standard errors (largest |z| = {worst:.2f}); "
            "treat those configurations' simulated numbers with suspicion."
        )
    if cal is not None:
        answer += " " + cal.describe()
    shown = t.reindex(t["normal z"].abs().sort_values(ascending=False).index).head(40)
    if t["df"].isna().all():
        shown = shown.drop(columns=["df", "normal z"])
        caption = "Simulated vs exact, largest deviations first (z = (simulated - exact) / SE)"
    else:
        caption = (
            "Simulated vs exact, largest deviations first (z = (simulated - exact) / SE; "
            "where the SE is estimated from n replications, z is Student's t with df = n - 1 "
            "and normal z = Phi^-1(T_df(z)) is the same tail probability on the normal scale, "
            "which the check reads)"
        )
    return Section(
        "exact",
        "Simulation against exact answers",
        answer,
        [Table(caption, shown.reset_index(drop=True))],
    )


NAMED_SWEPT = 8
"""At most this many swept params are named in the section's sentence; more are counted
there and listed, with their values, in a table."""


def sweep_section(sweep: Sweep) -> Section:
    """What was run: scenarios, child runs, swept params (with their values when there
    are more than ``NAMED_SWEPT``), statuses."""
    runs = sweep.runs
    counts = runs.groupby(["scenario", "status"]).size().reset_index(name="runs")
    failed = int((runs["status"] == "FAILED").sum())
    swept = [short_name(p) for p in sweep.swept_params]
    if len(swept) > NAMED_SWEPT:
        sweeping = f", sweeping {len(swept)} parameters (each listed with its values)"
    else:
        sweeping = f", sweeping {', '.join(swept)}" if swept else ""
    scenarios = sorted(runs["scenario"].unique())
    answer = (
        f"This sweep ran {len(runs)} job{'s' * (len(runs) != 1)} over "
        f"scenario{'s' * (len(scenarios) != 1)} {', '.join(scenarios)}"
        + sweeping
        + (f"; {failed} job{'s' * (failed != 1)} FAILED and "
           f"{'are' if failed != 1 else 'is'} left out of the figures." if failed else ".")
    )  # fmt: skip
    blocks: list = [
        f"Experiment {sweep.experiment}, parent run {sweep.parent_name} ({sweep.parent_id}).",
        Table("Jobs by scenario and status", counts),
    ]
    if len(swept) > NAMED_SWEPT:
        blocks.append(Table("Swept parameters and the values they took", _swept_values(sweep)))
    return Section("sweep", "What this sweep ran", answer, blocks)


def _swept_values(sweep: Sweep) -> pd.DataFrame:
    """Each swept param and its distinct values over the runs, "unset" for the runs that
    did not set it (a float column's whole numbers written as integers)."""
    rows = []
    for name in sweep.swept_params:
        column = sweep.runs[name]
        unset = column.isna() | column.astype(str).isin(("None", "null", ""))
        values = sorted({_plain(v) for v in column[~unset]}, key=lambda v: (len(v), v))
        rows.append(
            {
                "parameter": short_name(name),
                "values": ", ".join(values + ["unset"] * bool(unset.any())),
            }
        )
    return pd.DataFrame(rows)


def _plain(value: object) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
