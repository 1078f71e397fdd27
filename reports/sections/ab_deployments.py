"""Per-deployment withheld-vs-shown evidence from the arms' counts (the A/B section's data).

A simulated replication is one deployment: the evidence a researcher would have is that
replication's counts, never the counts pooled over replications (pooling measures how
long the simulation ran). For each deployment and procedure, from ``ab_arms``-layout
tables (``replication, key, arm, sessions, successes``), with the engine's formulas:

- fixed-n: difference in means with Newcombe's interval and its p-value (valid with the
  loop's arms of 10-20 sessions, where a Wald interval is not);
- always-valid: the Beta-mixture sequence of each arm's rate, differenced (``cs_arms``),
  read at the deployment's last session, with its p-value;
- sample-ratio mismatch: the withheld count against ``Binomial(sessions, epsilon)``,
  flagged at p < 0.001; a flagged deployment is not counted as finding an effect;
- multiplicity: Holm and Benjamini-Hochberg over the procedures one deployment compares.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from procmem_core.ab import (
    BetaMixtureArms,
    benjamini_hochberg,
    holm,
    newcombe_estimate,
    srm_flagged,
    srm_p_value,
)

LEVEL = 0.95
ALPHA = 1 - LEVEL


def _wide(arms: pd.DataFrame) -> pd.DataFrame:
    """One row per (replication, key): ``n1, k1, n0, k0`` and the per-deployment truth."""
    keys = ["replication", "key"]
    t = arms.copy()
    if "key" not in t:
        t["key"] = "top"
    counts = t.pivot_table(
        index=keys, columns="arm", values=["sessions", "successes"], aggfunc="sum", fill_value=0
    )
    out = pd.DataFrame(
        {
            "n1": counts[("sessions", "shown")],
            "k1": counts[("successes", "shown")],
            "n0": counts[("sessions", "withheld")],
            "k0": counts[("successes", "withheld")],
        }
    ).reset_index()
    if "true_lift" in t:  # the explore scenario: the pool's lift, the same on both rows
        truth = t.groupby(keys)["true_lift"].first()
    elif "mean_true_rate" in t:  # the loop: mean true rate of each arm's sessions
        rate = t.pivot_table(index=keys, columns="arm", values="mean_true_rate", aggfunc="first")
        truth = rate.get("shown") - rate.get("withheld")
    else:
        truth = None
    out["truth"] = (
        np.nan if truth is None else truth.reindex(pd.MultiIndex.from_frame(out[keys])).to_numpy()
    )
    return out


def deployments(arms: pd.DataFrame, explore_rate: float | None) -> pd.DataFrame:
    """Per deployment and procedure: the fixed-n and always-valid reads, SRM, and the
    adjusted p-values within the deployment (columns documented in the module)."""
    d = _wide(arms)
    n1, k1, n0, k0 = (d[c].to_numpy(dtype=float) for c in ("n1", "k1", "n0", "k0"))
    fixed = newcombe_estimate(k1, n1, k0, n0, LEVEL)
    d["tau"], d["low"], d["high"], d["p"] = fixed.tau, fixed.low, fixed.high, fixed.p
    share = 1.0 - explore_rate if explore_rate and 0 < explore_rate < 1 else 0.5
    d["cs_low"], d["cs_high"], d["cs_p"] = _sequences(k1, n1, k0, n0, share)
    compared = (n1 > 0) & (n0 > 0)
    if explore_rate and 0 < explore_rate < 1:
        d["srm_p"] = np.where(compared, srm_p_value(n0, n0 + n1, explore_rate), np.nan)
    else:
        d["srm_p"] = np.nan
    d["srm_flag"] = srm_flagged(d["srm_p"].to_numpy())
    for col, p in (("fixed", "p"), ("cs", "cs_p")):
        wide = d.pivot(index="replication", columns="key", values=p)
        for name, adjust in (("holm", holm), ("bh", benjamini_hochberg)):
            adj = pd.DataFrame(adjust(wide.to_numpy()), index=wide.index, columns=wide.columns)
            d[f"{col}_{name}"] = (
                adj.stack(future_stack=True)
                .reindex(pd.MultiIndex.from_frame(d[["replication", "key"]]))
                .to_numpy()
            )
    d["compared"] = compared
    return d


def _sequences(k1, n1, k0, n0, share: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``cs_arms`` at each deployment's last session, tuned at its own number of sessions
    (the default tuning: the horizon): ``(low, high, p)``."""
    est = BetaMixtureArms()
    lows, highs, ps = (np.full(k1.shape, np.nan) for _ in range(3))
    total = n1 + n0
    for sessions in np.unique(total[total > 0]):
        rows = total == sessions
        path = est.bounds(k1[rows], n1[rows], k0[rows], n0[rows], share, int(sessions), LEVEL)
        lows[rows], highs[rows], ps[rows] = path.low, path.high, path.p
    return lows, highs, ps


def _share(mask: pd.Series) -> float:
    return float(mask.mean()) if len(mask) else float("nan")


def summarise(d: pd.DataFrame) -> pd.DataFrame:
    """One row per procedure over the deployments of one run (``deployments`` output):
    medians of the reads, and the share of deployments finding an effect (power) before
    and after adjustment; an SRM-flagged deployment finds nothing."""
    rows = []
    for key, g in d.groupby("key", sort=True):
        ok = g["compared"] & ~g["srm_flag"]
        c = g[g["compared"]]
        rows.append(
            {
                "key": key,
                "deployments": len(g),
                "compared": int(g["compared"].sum()),
                "shown": float(c["n1"].median()) if len(c) else np.nan,
                "withheld": float(c["n0"].median()) if len(c) else np.nan,
                "truth": float(g["truth"].mean()),
                "estimate": float(c["tau"].median()) if len(c) else np.nan,
                "low": float(c["low"].median()) if len(c) else np.nan,
                "high": float(c["high"].median()) if len(c) else np.nan,
                "width": float((c["high"] - c["low"]).median()) if len(c) else np.nan,
                "power": _share(ok & ((g["low"] > 0) | (g["high"] < 0))),
                "power_holm": _share(ok & (g["fixed_holm"] < ALPHA)),
                "power_bh": _share(ok & (g["fixed_bh"] < ALPHA)),
                "cs_low": float(c["cs_low"].median()) if len(c) else np.nan,
                "cs_high": float(c["cs_high"].median()) if len(c) else np.nan,
                "cs_width": float((c["cs_high"] - c["cs_low"]).median()) if len(c) else np.nan,
                "cs_power": _share(ok & ((g["cs_low"] > 0) | (g["cs_high"] < 0))),
                "cs_power_holm": _share(ok & (g["cs_holm"] < ALPHA)),
                "srm_flagged": _share(g["srm_flag"]),
                "srm_tested": bool(g["srm_p"].notna().any()),
                "holm_p": float(c["fixed_holm"].median()) if len(c) else np.nan,
                "bh_p": float(c["fixed_bh"].median()) if len(c) else np.nan,
                "bias": float((c["tau"] - c["truth"]).mean()) if len(c) else np.nan,
                "bias_se": float((c["tau"] - c["truth"]).std(ddof=1) / np.sqrt(len(c)))
                if len(c) > 1
                else np.nan,
                "family": int(d.groupby("replication")["compared"].sum().median()),
            }
        )
    return pd.DataFrame(rows)
