"""The explore scenario's tables, built from its per-replication arrays ``d``:
``ab_arms`` (pooled check), ``ab_arms_by_replication`` (one row per deployment and arm,
the loop's layout), ``estimates`` (per replication and estimator) and ``cs_path`` (the
first deployment's intervals after every session)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from procmem_core.ab import ESTIMATORS
from simulators.result import rate_and_se, ratio_and_se
from simulators.users import UserPopulation

TABLE_REPLICATIONS = 20_000


def arms_table(d: dict, population: UserPopulation) -> pd.DataFrame:
    """Per arm, pooled over replications: sessions, successes, rate (SE over
    replications) and the true rate: a check of the simulation, not one deployment."""
    rows = []
    base = population.base_rate
    for arm, true_rate in (("shown", base + population.mean_lift), ("withheld", base)):
        n, k = d[f"{arm}_sessions"].sum(), d[f"{arm}_successes"].sum()
        r, _ = rate_and_se(k, n)
        _, se = ratio_and_se(d[f"{arm}_successes"], d[f"{arm}_sessions"])
        rows.append(
            {
                "arm": arm,
                "sessions": int(n),
                "successes": int(k),
                "rate": r,
                "rate_se": se,
                "true_rate": true_rate,
            }
        )
    return pd.DataFrame(rows)


def deployment_arms(d: dict, replications: int) -> pd.DataFrame:
    """Per replication (first 20,000) and arm: rated sessions and signalled successes,
    the loop's ``ab_arms`` layout (``key`` is the one procedure, "top")."""
    keep = min(replications, TABLE_REPLICATIONS)
    frames = [
        pd.DataFrame(
            {
                "replication": np.arange(keep),
                "key": "top",
                "arm": arm,
                "sessions": d[f"{arm}_rated"][:keep].astype(int),
                "successes": d[f"{arm}_signal"][:keep].astype(int),
                "true_lift": d["pool_lift"][:keep],
            }
        )
        for arm in ("shown", "withheld")
    ]
    return (
        pd.concat(frames, ignore_index=True)
        .sort_values(["replication", "arm"], kind="mergesort")
        .reset_index(drop=True)
    )


def estimates_table(d: dict, replications: int) -> pd.DataFrame:
    """Per replication (first 20,000) and estimator: the estimate, SE, interval, p-value,
    and for a traced sequence whether 0 / the pool's lift ever left it."""
    keep = min(replications, TABLE_REPLICATIONS)
    frames = []
    for name in ESTIMATORS.names():
        frames.append(
            pd.DataFrame(
                {
                    "replication": np.arange(keep),
                    "estimator": name,
                    "estimate": d[f"{name}_tau"][:keep],
                    "se": d[f"{name}_se"][:keep],
                    "ci_low": d[f"{name}_low"][:keep],
                    "ci_high": d[f"{name}_high"][:keep],
                    "p_value": d[f"{name}_p"][:keep],
                    "ever_excluded_zero": _flags(d, f"{name}_detect", keep),
                    "true_lift_left": _flags(d, f"{name}_miss", keep),
                    "true_lift": d["pool_lift"][:keep],
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def _flags(d: dict, key: str, keep: int) -> np.ndarray:
    """A per-replication flag as floats (NaN where the estimator does not trace it)."""
    return d[key][:keep].astype(float) if key in d else np.full(keep, np.nan)


def path_table(trace: dict) -> pd.DataFrame:
    """The first deployment's intervals after every session: each traced sequence and
    the fixed-n interval read the same way (``dim``), with the pool's true lift."""
    frames = []
    for name, value in trace.items():
        if name == "truth":
            continue
        low, high, centre = value
        session = np.arange(1, low.size + 1)
        frames.append(
            pd.DataFrame(
                {
                    "session": session,
                    "estimator": name,
                    "low": low,
                    "high": high,
                    "estimate": centre if centre is not None else np.nan,
                    "true_lift": float(trace["truth"]),
                }
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
