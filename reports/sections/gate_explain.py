"""Why an SPRT set to alpha 0.05 falsely reverts more than 0.05 of harmless revisions.

For each SPRT run shown: the nominal error rates beside the achieved ones (simulated ± SE
and exact), the share of harmless revisions still undecided at ``max_runs`` (the cap rule
then decides), how much of the false-revert rate the cap rule contributes (reverts whose
reason is ``at_cap``, from the run's ``gate_decisions``; both shares over the decisions
read, one per replication, ± their Monte Carlo SE), quantiles of the runs to a decision,
and the fixed-sample size with the same error rates: the fewest runs ``n`` of a one-sided
exact binomial test of p0 (known) against ``p0 - min_drop`` with
``P_p0(S <= c) <= alpha`` and ``P_p1(S <= c) >= 1 - beta`` for some ``c``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from reports.document import Detail, Table
from reports.evidence import fmt, fmt_metric, fmt_share
from reports.sections.gate_tables import GateRuns, p_prior_of
from reports.source import Sweep

QUANTILES = (0.1, 0.5, 0.9)
MAX_FIXED = 5000


def fixed_sample_size(p0: float, drop: float, alpha: float, beta: float) -> int | None:
    """The smallest exact one-sided binomial test size (module docstring); None past 5000."""
    p1 = p0 - drop
    if p1 <= 0:
        return None
    for n in range(1, MAX_FIXED + 1):
        c = int(stats.binom.ppf(alpha, n, p0))  # largest c with P_p0(S <= c) <= alpha ...
        while c >= 0 and stats.binom.cdf(c, n, p0) > alpha:
            c -= 1
        if c >= 0 and stats.binom.cdf(c, n, p1) >= 1 - beta:
            return n
    return None


def _decisions(sweep: Sweep, run_id: str) -> pd.DataFrame | None:
    t = sweep.tables.get(run_id, {}).get("gate_decisions")
    if t is None or not {"true_drop", "verdict", "reason_code", "runs_used"} <= set(t.columns):
        return None
    return t


def _quantiles(runs: pd.Series) -> str:
    return " / ".join(f"{np.quantile(runs, q):g}" for q in QUANTILES)


def explain_rows(sweep: Sweep, gates: GateRuns, configs: tuple[str, ...]) -> pd.DataFrame:
    """One row per run of a gate with Wald-nominal error targets (``Gate.wald_nominal``:
    the SPRT) among the shown configurations (module docstring)."""
    rows = []
    for _, r in gates.rows.iterrows():
        gate = gates.gates.get(r["run_id"])
        if gate is None or not gate.wald_nominal or r["config"] not in configs:
            continue
        alpha, beta = gate.targets.alpha, gate.targets.beta
        t = _decisions(sweep, r["run_id"])
        row = {
            "configuration": r["config"],
            "condition": r["condition"],
            "nominal alpha / beta": f"{alpha:g} / {beta:g}",
            "false revert (sim / exact)": _pair(r, "false_revert_rate"),
            "missed regression (sim / exact)": _pair(r, "missed_regression_rate"),
        }
        if t is not None:
            null = t[np.isclose(t["true_drop"], 0.0)]
            alt = t[np.isclose(t["true_drop"], gate.design_drop)]
            capped = null["reason_code"] == "at_cap"
            cap_reverts = (capped & (null["verdict"] == "revert")).mean()
            all_reverts = (null["verdict"] == "revert").mean()
            n = len(null)  # one decision per replication: independent Bernoulli shares
            row["undecided at max_runs (no change)"] = fmt_share(capped.mean(), n)
            row["false reverts by the cap rule"] = (
                f"{fmt_share(cap_reverts, n)} of {all_reverts:.3f}" if all_reverts else "0"
            )
            row["runs to decide, 10/50/90 % (no change)"] = _quantiles(null["runs_used"])
            row["runs to decide, 10/50/90 % (drop)"] = _quantiles(alt["runs_used"])
            row["decisions read"] = len(null)
        p0 = p_prior_of(sweep, r)
        n = None if p0 is None else fixed_sample_size(p0, gate.design_drop, alpha, beta)
        row["fixed-sample runs, same alpha/beta"] = "" if n is None else n
        row["SPRT mean runs null / drop"] = (
            f"{fmt_metric(r, 'mean_runs_null')} / {fmt_metric(r, 'mean_runs_alt')}"
        )
        rows.append(row)
    return pd.DataFrame(rows)


def _pair(r: pd.Series, metric: str) -> str:
    exact = r.get(f"{metric}_exact")
    sim = fmt_metric(r, metric)
    return f"{sim} / {fmt(float(exact))}" if exact is not None and exact == exact else sim


def explain_block(sweep: Sweep, gates: GateRuns, configs: tuple[str, ...]) -> list:
    """The explanation table and the sentence that reads it, or nothing without SPRT runs."""
    t = explain_rows(sweep, gates, configs)
    if t.empty:
        return []
    return [
        Detail(
            "Why an SPRT set to alpha misses alpha: Wald's boundaries assume an untruncated "
            "test with p0 known. At max_runs the undecided tests are decided by the cap rule "
            "(under 'follow the LLR' every undecided test with LLR > 0 reverts), and an "
            "estimated p0 moves both boundaries; the table separates the two."
        ),
        Table(
            "SPRT runs: nominal against achieved error rates, the cap rule's share of the false "
            "reverts (from the run's gate_decisions rows at no change), runs to a decision and "
            "the exact fixed-sample size with the same alpha and beta (p0 known)",
            t,
        ),
    ]
