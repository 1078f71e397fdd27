"""The explore scenario's metrics from its per-replication arrays ``d`` (``ExploreScenario``'s
docstring names them): each estimator's figures at the horizon, the online reads
(monitoring, sample-ratio mismatch, CUPED) and a correlation with its Fisher-z SE."""

from __future__ import annotations

import numpy as np

from procmem_core.ab import ESTIMATORS, srm_flagged
from simulators.result import ScenarioResult


def online_metrics(result: ScenarioResult, d: dict, truth: np.ndarray, reps: int) -> None:
    """Monitoring, sample-ratio and CUPED metrics of ``reps`` replications
    (``ExploreScenario``'s docstring)."""
    for name, cls in ESTIMATORS.items():
        if f"{name}_miss" in d:
            result.add_rate(f"{name}_monitor_miss_rate", np.count_nonzero(d[f"{name}_miss"]), reps)
            result.add_rate(f"{name}_sequential_power", np.count_nonzero(d[f"{name}_detect"]), reps)
        if cls.fixed_counterpart is not None:
            width = d[f"{name}_high"] - d[f"{name}_low"]
            base = d[f"{cls.fixed_counterpart}_high"] - d[f"{cls.fixed_counterpart}_low"]
            ok = np.isfinite(width) & np.isfinite(base) & (base > 0)
            result.add_mean(f"{name}_width_ratio", width[ok] / base[ok])
    result.add_rate("dim_monitor_miss_rate", np.count_nonzero(d["peeked_miss"]), reps)
    result.add_rate("srm_flag_rate", np.count_nonzero(srm_flagged(d["srm_p"])), reps)
    seq = np.count_nonzero(srm_flagged(d["srm_sequential_p"]))
    result.add_rate("srm_sequential_flag_rate", seq, reps)
    reduction = d["cuped_reduction"]
    result.add_mean("cuped_width_reduction", reduction[np.isfinite(reduction)])


def estimator_metrics(result: ScenarioResult, name: str, d: dict, truth: np.ndarray) -> None:
    """Estimator ``name``'s estimate, bias, RMSE, coverage, power, undefined rate and
    interval width against the pool's lift ``truth`` (``ExploreScenario``'s docstring)."""
    tau, low, high = d[f"{name}_tau"], d[f"{name}_low"], d[f"{name}_high"]
    ok = np.isfinite(tau) & np.isfinite(low) & np.isfinite(high)
    err = (tau - truth)[ok]
    result.add_mean(f"{name}_estimate", tau[ok])
    result.add_mean(f"{name}_bias", err)
    sq, sq_se = np.mean(err**2), np.std(err**2, ddof=1) / np.sqrt(err.size)
    rmse = float(np.sqrt(sq))
    result.metrics[f"{name}_rmse"] = rmse
    result.metrics[f"{name}_rmse_se"] = float(sq_se / (2 * rmse)) if rmse > 0 else float("nan")
    covered = (low <= truth) & (truth <= high)
    result.add_rate(f"{name}_coverage", np.count_nonzero(covered[ok]), int(ok.sum()))
    detected = ok & ((low > 0) | (high < 0))  # no interval: nothing detected
    result.add_rate(f"{name}_power", np.count_nonzero(detected), tau.size)
    result.add_rate(f"{name}_undefined_rate", np.count_nonzero(~ok), tau.size)
    result.add_mean(f"{name}_ci_width", (high - low)[ok])


def correlation(name: str, a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """Pearson correlation with the Fisher-z delta SE ``(1 - r^2) / sqrt(n - 3)``."""
    n = a.size
    if n < 4 or np.std(a) == 0 or np.std(b) == 0:
        return {name: float("nan"), f"{name}_se": float("nan")}
    r = float(np.corrcoef(a, b)[0, 1])
    return {name: r, f"{name}_se": (1 - r * r) / np.sqrt(n - 3)}
