"""The withheld-vs-shown A/B section: per deployment, per procedure, with its guarantees.

One row per swept cell and procedure, computed from each replication's arm counts
(``ab_arms_by_replication`` of the explore scenario, the loop's ``ab_arms`` as it is):
the median estimate, the median fixed-n interval and its width, the confidence sequence
at the last session, the share of deployments flagged for sample-ratio mismatch, the
median Holm- and BH-adjusted p-values and the power (share of deployments finding an effect),
before and after adjustment. Pooled counts appear only in a second table, labelled as
a check of the estimator against the simulated truth.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from procmem_core.ab import SRM_ALPHA
from reports.configs import label
from reports.document import Section, Table
from reports.evidence import fmt_share
from reports.options import ReportOptions
from reports.sections import report_section
from reports.sections.ab_deployments import ALPHA, deployments, summarise
from reports.source import Sweep
from reports.world import world_blocks

MOST = 0.5
"""A comparison "has an effect" when more than this share of deployments find one."""
BOOKKEEPING = ("name", "replications", "seed", "chunk_size")
ANALYSIS = ("estimator", "confidence_level", "target_power", "cs_tuning_sessions")
"""Explore knobs that change how a run is read, not its arms (left out of cell labels)."""


def _arms(sweep: Sweep, run_id: str) -> pd.DataFrame | None:
    """The run's per-deployment arms table, or None (a pooled table is not one)."""
    tables = sweep.tables.get(run_id, {})
    for name in ("ab_arms_by_replication", "ab_arms"):
        t = tables.get(name) if name in tables else None
        if t is not None and {"replication", "arm", "sessions", "successes"} <= set(t.columns):
            return t
    return None


def _explore_rate(run: pd.Series) -> float | None:
    for col in ("params.explore.explore_rate", "params.scenario.explore_rate"):
        v = run.get(col)
        if v is not None and not (isinstance(v, float) and np.isnan(v)):
            return float(v)
    return None


def _cells(sweep: Sweep, runs: pd.DataFrame) -> dict[str, str]:
    """``run_id -> "scenario: what varies, in words"`` (``explore: explore rate 0.02,
    sessions 200``) over the params that vary among its scenario's runs, in the order of
    those params' values; a scenario with one run reads as its name alone."""
    out = {}
    for _, g in runs.groupby("scenario", sort=True):
        varying = [
            p
            for p in sweep.param_names
            if p.split(".")[-1] not in BOOKKEEPING + ANALYSIS
            and g[p].map(repr).nunique(dropna=False) > 1
        ]
        for _, r in (
            g.sort_values(varying, kind="mergesort").iterrows() if varying else g.iterrows()
        ):
            words = label(r, varying, "")
            out[r["run_id"]] = f"{r['scenario']}: {words}" if words else str(r["scenario"])
    return out


def _share(rate: float, n: int) -> str:
    """A share of deployments with its Monte Carlo SE (``evidence.fmt_share``: at 0 or 1
    its exact one-sided bound, since the loop has as few as 4 deployments)."""
    return fmt_share(float(rate), int(n))


def _interval(low: float, high: float) -> str:
    return "n/a" if np.isnan(low) else f"[{low:.3f}, {high:.3f}]"


def _rows(summary: pd.DataFrame, cell: str) -> list[dict]:
    rows = []
    for _, s in summary.iterrows():
        rows.append(
            {
                "cell": cell,
                "procedure": s["key"],
                "deployments": f"{s['compared']:,} of {s['deployments']:,}",
                "sessions shown / withheld (median)": f"{s['shown']:,.0f} / {s['withheld']:,.0f}",
                "true lift": s["truth"],
                "estimate (median)": s["estimate"],
                "fixed-n 95 % interval (median)": _interval(s["low"], s["high"]),
                "width": s["width"],
                "power": _share(s["power"], s["deployments"]),
                "power after Holm": _share(s["power_holm"], s["deployments"]),
                "power after BH": _share(s["power_bh"], s["deployments"]),
                "sequence at the end (median)": _interval(s["cs_low"], s["cs_high"]),
                "sequence width": s["cs_width"],
                "sequence power": _share(s["cs_power"], s["deployments"]),
                "sequence power after Holm": _share(s["cs_power_holm"], s["deployments"]),
                "SRM flagged": _share(s["srm_flagged"], s["deployments"])
                if s["srm_tested"]
                else "not tested",
                "Holm p (median)": s["holm_p"],
                "BH p (median)": s["bh_p"],
                "procedures per deployment": int(s["family"]),
            }
        )
    return rows


def _check_rows(summary: pd.DataFrame, cell: str) -> list[dict]:
    return [
        {
            "cell": cell,
            "procedure": s["key"],
            "deployments": int(s["compared"]),
            "mean true lift": s["truth"],
            "mean estimate - true lift": s["bias"],
            "SE": s["bias_se"],
            "z": s["bias"] / s["bias_se"] if s["bias_se"] > 0 else np.nan,
        }
        for _, s in summary.iterrows()
    ]


FEW_DEPLOYMENTS = 30
"""Below this many deployments a cell's shares are called rough in the opening sentence."""


def beyond_chance(flagged_share: float, deployments: int) -> bool:
    """Whether ``m = flagged_share * deployments`` SRM flags are more than a right split
    gives: each deployment is flagged with probability at most ``SRM_ALPHA`` (the exact
    test is conservative), so ``P(Binomial(deployments, SRM_ALPHA) >= m) < SRM_ALPHA``.
    One flag of 50 deployments (P about 0.049) is chance; three are not."""
    n = int(deployments)
    m = round(float(flagged_share) * n)
    return m > 0 and float(stats.binom.sf(m - 1, n, SRM_ALPHA)) < SRM_ALPHA


def rate(cell: str) -> float:
    """The share in a ``"0.358 ± 0.011"`` cell (NaN for "n/a" or "not tested")."""
    head = str(cell).split(" ")[0]
    try:
        return float(head)
    except ValueError:
        return float("nan")


def _procedures(names: list[str]) -> str:
    """``procedure a`` or ``2 procedures (a, b)``."""
    return (
        f"procedure {names[0]}"
        if len(names) == 1
        else f"{len(names)} procedures ({', '.join(names)})"
    )


def _counts(values: list[int]) -> str:
    """Sorted distinct counts in words: ``3``, ``1 or 4``, ``3 to 6`` (a run of 3 or more)."""
    if len(values) > 2 and values[-1] - values[0] == len(values) - 1:
        return f"{values[0]} to {values[-1]}"
    return " or ".join(map(str, values))


def _answer(table: pd.DataFrame, deployments: list[int]) -> str:
    n = len(table)
    holm = int((table["power after Holm"].map(rate) > MOST).sum())
    bh = int((table["power after BH"].map(rate) > MOST).sum())
    seq = int((table["sequence power after Holm"].map(rate) > MOST).sum())
    fams = sorted(set(table["procedures per deployment"]))
    power = table["power"].map(rate)
    lo, hi = power.min(), power.max()
    few, many = min(deployments), max(deployments)
    per = f"{few:,}" if few == many else f"{few:,} to {many:,}"
    verb = "finds" if holm == 1 else "find"
    if fams == [1]:
        fixed = (
            f"{holm} of {n} procedure comparisons {verb} an effect in most deployments with the "
            "fixed-n interval read once at the end. Each deployment compares one procedure, so "
            "there is nothing to adjust for."
        )
    else:
        fixed = (
            f"{holm} of {n} procedure comparisons {verb} an effect in most deployments after Holm "
            f"adjustment (fixed-n interval read once at the end, family-wise error <= 0.05). "
            f"Each deployment compares {_counts(fams)} procedures. {bh} "
            f"{'finds' if bh == 1 else 'find'} one after Benjamini-Hochberg (false discovery "
            "rate <= 0.05)."
        )
    adjusted = "" if fams == [1] else ", Holm-adjusted"
    thin = sum(d < FEW_DEPLOYMENTS for d in deployments)
    rough = (
        f" {thin} of the {n} comparisons rest on fewer than {FEW_DEPLOYMENTS} deployments, "
        f"so their shares are rough (with {few} deployments one deployment moves a share by "
        f"{1 / few:.2g})."
        if thin
        else ""
    )
    return (
        f"Read per deployment (one replication: what one researcher would see), {fixed} "
        f"{seq} {'finds' if seq == 1 else 'find'} one with the per-arm Beta-mixture "
        f"confidence sequence{adjusted}, which is valid at any stopping time and wider. Per "
        f"comparison, the share of deployments finding an effect with the fixed-n interval "
        f"ranges from {lo:.3g} to {hi:.3g} ({per} deployments per cell).{rough}"
    )


def ab_section(sweep: Sweep) -> Section | None:
    """Withheld vs shown per deployment (see the module docstring)."""
    runs = sweep.runs[sweep.runs["status"] == "FINISHED"]
    runs = runs[[(_arms(sweep, r) is not None) for r in runs["run_id"]]]
    if runs.empty:
        return None
    cells = _cells(sweep, runs)
    rows, checks, counts, mismatch = [], [], [], []
    order = {run_id: i for i, run_id in enumerate(cells)}
    for _, r in runs.sort_values("run_id", key=lambda c: c.map(order)).iterrows():
        summary = summarise(deployments(_arms(sweep, r["run_id"]), _explore_rate(r)))
        summary = summary[summary["compared"] > 0]
        counts += list(summary["deployments"])
        rows += _rows(summary, cells[r["run_id"]])
        pairs = zip(summary["srm_flagged"], summary["deployments"], strict=True)
        mismatch += [beyond_chance(f, d) for f, d in pairs]
        checks += _check_rows(summary, cells[r["run_id"]])
    table = pd.DataFrame(rows)
    # a right split flags a deployment with probability <= SRM_ALPHA: one flag in 50 is
    # chance (P 0.049), so a comparison's mismatch is said only beyond chance
    flagged = table[(table["SRM flagged"].map(rate) > 0.01) & np.array(mismatch, dtype=bool)]
    blocks: list = world_blocks(runs, None, "Each deployment's estimate")
    blocks += [
        Table(
            "Per deployment: each row is one swept cell and procedure; medians and shares are "
            "over its deployments (replications). Fixed-n: difference in means with Newcombe's "
            "95 % interval (valid with small arms). Sequence: a Beta-mixture confidence "
            "sequence per arm, differenced, read at the last session (valid at any stopping "
            "time, finite-sample; wider). Power: the share of deployments whose interval "
            "excludes 0 (± its Monte Carlo SE); a deployment flagged for sample-ratio mismatch "
            "(withheld count against Binomial(sessions, explore rate), p < 0.001) counts as "
            "not finding one.",
            table,
        ),
        f"Adjustment is within a deployment: the procedures one replication compares form "
        f"the family (Holm: family-wise error; BH: false discovery rate; both at {ALPHA:g}).",
    ]
    if not flagged.empty:
        blocks.append(
            f"Sample-ratio mismatch was flagged in more than 1 % of the deployments of "
            f"{len(flagged)} of the {len(table)} comparisons, of "
            f"{_procedures(sorted(set(flagged['procedure'])))}: "
            "their arms are not the randomized split the explore rate draws, so their "
            "estimates should not be read as the procedure's effect (more flags than a right "
            f"split gives, which flags a deployment with probability at most {SRM_ALPHA:g})."
        )
    blocks.append(
        Table(
            "Check of the estimator against the simulated truth, pooled over deployments "
            "(this measures the simulation, not what one deployment sees): mean per-deployment "
            "estimate minus the mean true lift, with its Monte Carlo SE",
            pd.DataFrame(checks),
        )
    )
    return Section("ab", "Withheld vs shown: the A/B table", _answer(table, counts), blocks)


@report_section("ab", order=60)
def _ab_report(sweep: Sweep, options: ReportOptions) -> Section | None:
    return ab_section(sweep)
