"""ExploreScenario: the top procedure withheld with probability epsilon, and what we learn.

Each replication is a deployment: a pool of ``users`` drawn from the ``UserPopulation``
and ``sessions`` sessions, each from a uniformly drawn user of the pool. The procedure
is shown unless withheld (probability ``explore_rate``, Loom's
``procedure_explore_rate``, decided by the engine's ``pack.withhold_top``); a session
succeeds with probability ``clip(b_u + e_u * shown, 0, 1)``. The ``Feedback`` channels
turn outcomes into signals (the judge sees the session's user).

Estimand: the pool's lift, ``mean over pool users of clip(b_u + e_u) - b_u`` (sessions
are i.i.d. given the pool, so this is what every estimator targets); ``true_lift`` is its
exact population value (``UserPopulation.mean_lift``). Bias, RMSE and coverage are
against the pool's lift. Label flips attenuate the lift the signal shows, so a noisy
judge shows up as bias.

Beside the estimators, the procedure's flat confidence is updated (engine rule) in the
sessions where it was shown and a signal arrived. It does not gate showing here, so the
A/B design stays intact; the metrics say how far it is from the effect
(docs/statistics.md, "Explore rate").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd
from scipy import stats

from procmem_core.ab import ESTIMATORS, all_estimators
from procmem_core.errors import (
    ParameterError,
    check_choice,
    check_instance,
    check_int,
    check_probability,
)
from procmem_core.explore import withhold_top
from procmem_core.flat import DEFAULT_RULE, DEFAULT_THRESHOLD, FlatRule, passes_threshold, snap
from simulators.feedback import Feedback
from simulators.result import ScenarioResult, rate_and_se, ratio_and_se
from simulators.scenarios.base import Scenario, Work
from simulators.users import UserPopulation

TABLE_REPLICATIONS = 20_000
CHUNK_SESSIONS = 4_000_000


def _default_population() -> UserPopulation:
    return UserPopulation(
        base_rate=0.5,
        heterogeneity=0.1,
        helpful_share=0.6,
        harmful_share=0.1,
        helpful_effect=0.15,
        harmful_effect=0.1,
    )


@dataclass(frozen=True)
class ExploreScenario(Scenario):
    """Withheld-vs-shown A/B of one procedure, analysed by four estimators.

    Metrics, per estimator ``e`` in (dim, ipw, ipw_ht, aipw): ``e_estimate``, ``e_bias``,
    ``e_rmse``, ``e_coverage`` (CI holds the pool's lift), ``e_power`` (CI excludes 0),
    ``e_ci_width``, ``e_undefined_rate`` (no session in one arm: no estimate; left out of
    estimate, bias, RMSE, coverage and width, counted as not detected in power), each
    with ``_se``; unprefixed ``estimate, bias, rmse, coverage, power, ci_width,
    undefined_rate`` repeat those of ``estimator``. Also ``true_lift`` (exact),
    ``true_lift_pool``, ``sessions_for_target_power`` and ``power_formula`` (the normal
    approximation of docs/statistics.md, from the exact population rates),
    ``exploration_cost`` (successes forgone: withheld sessions times the pool's lift)
    with ``exploration_cost_exact`` (``epsilon * n * true_lift``), and
    ``confidence_final``, ``confidence_wrong_side_rate`` (confidence on the other side of
    the threshold from the sign of the lift), ``confidence_lift_correlation``.
    Tables: ``ab_arms`` (per arm, pooled) and ``estimates`` (per replication and
    estimator, first 20,000 replications).
    """

    name: ClassVar[str] = "explore"
    inputs: ClassVar[dict[str, str]] = {
        "population": "users",
        "feedback": "feedback",
        "rule": "rule",
        "threshold": "rule.threshold",
        "explore_rate": "explore.explore_rate",
        "estimator": "explore.estimator",
        "confidence_level": "explore.confidence_level",
        "target_power": "explore.target_power",
    }

    population: UserPopulation = field(default_factory=_default_population)
    feedback: Feedback = field(default_factory=Feedback)
    explore_rate: float = 0.1
    sessions: int = 1_000
    users: int = 50
    confidence_level: float = 0.95
    target_power: float = 0.8
    estimator: str = "dim"
    rule: FlatRule = DEFAULT_RULE
    threshold: float = DEFAULT_THRESHOLD
    replications: int = 200
    chunk_size: int | None = None
    units_per_second: ClassVar[float] = 1e6  # sessions

    def __post_init__(self) -> None:
        check_instance("population", self.population, UserPopulation)
        check_instance("feedback", self.feedback, Feedback)
        check_probability("explore_rate", self.explore_rate, open_low=True, open_high=True)
        check_int("sessions", self.sessions, minimum=4)
        check_int("users", self.users, minimum=1)
        check_probability("confidence_level", self.confidence_level, open_low=True, open_high=True)
        check_probability("target_power", self.target_power, open_low=True, open_high=True)
        check_choice("estimator", self.estimator, ESTIMATORS.names())
        check_instance("rule", self.rule, FlatRule)
        check_probability("threshold", self.threshold)
        self.check_replications()
        if self.feedback.delay >= self.sessions:
            raise ParameterError(
                "feedback", self.feedback, f"expected delay < sessions ({self.sessions})"
            )

    @property
    def replications_per_chunk(self) -> int:
        """``chunk_size``, else as many replications as keep a chunk near 4 million
        sessions (about 250 MB of working arrays), at most 1024."""
        if self.chunk_size is not None:
            return self.chunk_size
        return max(1, min(1024, CHUNK_SESSIONS // self.sessions))

    def _chunk(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        pop, s, fb = self.population, self.sessions, self.feedback
        base = pop.sample_base(rng, (n, self.users))
        effect = pop.sample_effects(rng, (n, self.users))
        pool_lift = (pop.success_probability(base, effect) - base).mean(axis=1)
        who = rng.integers(0, self.users, size=(n, s))
        rows = np.arange(n)[:, None]
        b, e = base[rows, who], effect[rows, who]
        shown = ~withhold_top(rng.random((n, s)), self.explore_rate)
        outcome = rng.random((n, s)) < pop.success_probability(b, e * shown)
        sig = fb.transmit(rng, outcome, b)
        signal = sig.label
        arrived = fb.arrived_by(sig, s)
        y = signal.astype(float)
        out: dict[str, np.ndarray] = {"pool_lift": pool_lift}
        for est in all_estimators():
            r = est.estimate(y, shown, b, arrived, 1.0 - self.explore_rate, self.confidence_level)
            out[f"{est.name}_tau"], out[f"{est.name}_se"] = r.tau, r.se
            out[f"{est.name}_low"], out[f"{est.name}_high"] = r.low, r.high
        out["withheld"] = (~shown).sum(axis=1).astype(float)
        for arm, sel in (("shown", shown), ("withheld", ~shown)):
            out[f"{arm}_sessions"] = sel.sum(axis=1).astype(float)
            out[f"{arm}_successes"] = (outcome & sel).sum(axis=1).astype(float)
        update = shown & arrived
        conf = np.full(n, snap(self.rule.initial))
        for t in range(s):
            conf = np.where(update[:, t], self.rule.update(conf, signal[:, t]), conf)
        out["confidence"] = conf
        return out

    def work(self) -> Work:
        """Sessions; ~24 estimates kept per replication, ~64 B per session of a chunk."""
        units = self.replications * self.sessions
        return self.estimate(units, 400, 64 * self.sessions, ("replications", "sessions", "users"))

    def run(self, seed: int) -> ScenarioResult:
        parts = [self._chunk(c.rng, c.size) for c in self.chunks(seed)]
        d = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        reps = self.replications
        result = self.new_result()
        pop = self.population
        lift = pop.mean_lift
        result.metrics["true_lift"] = lift
        result.add_mean("true_lift_pool", d["pool_lift"])
        truth = d["pool_lift"]
        for name in ESTIMATORS.names():
            self._estimator_metrics(result, name, d, truth)
        for key in ("estimate", "bias", "rmse", "coverage", "power", "ci_width", "undefined_rate"):
            for suffix in ("", "_se"):
                result.metrics[key + suffix] = result.metrics[f"{self.estimator}_{key}{suffix}"]
        result.metrics.update(self._power_formula(lift))
        result.add_mean("exploration_cost", d["withheld"] * truth)
        result.metrics["exploration_cost_exact"] = self.explore_rate * self.sessions * lift
        conf = d["confidence"]
        result.add_mean("confidence_final", conf)
        wrong = passes_threshold(conf, self.threshold) != (truth > 0)
        result.add_rate("confidence_wrong_side_rate", np.count_nonzero(wrong), reps)
        result.metrics.update(_correlation("confidence_lift_correlation", conf, truth))
        result.tables["ab_arms"] = self._arms_table(d)
        result.tables["estimates"] = self._estimates_table(d)
        return result

    @staticmethod
    def _estimator_metrics(result: ScenarioResult, name: str, d: dict, truth: np.ndarray) -> None:
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

    def _power_formula(self, lift: float) -> dict[str, float]:
        """``n = (z_{1-a} + z_{power})^2 (p1 q1 / (1 - eps) + p0 q0 / eps) / delta^2``.

        One-sided level ``a = (1 - confidence_level) / 2`` (the two-sided CI's tail);
        ``p0`` the base rate, ``p1 = p0 + lift``: exact population rates.
        """
        eps = self.explore_rate
        p0 = self.population.base_rate
        p1 = p0 + lift
        v = p1 * (1 - p1) / (1 - eps) + p0 * (1 - p0) / eps
        za = stats.norm.ppf(0.5 + self.confidence_level / 2)
        zb = stats.norm.ppf(self.target_power)
        if lift == 0:
            return {
                "sessions_for_target_power": float("inf"),
                "power_formula": 1 - self.confidence_level,
            }
        n = (za + zb) ** 2 * v / lift**2
        power = stats.norm.cdf(abs(lift) / np.sqrt(v / self.sessions) - za)
        return {"sessions_for_target_power": float(n), "power_formula": float(power)}

    def _arms_table(self, d: dict) -> pd.DataFrame:
        rows = []
        base = self.population.base_rate
        for arm, true_rate in (("shown", base + self.population.mean_lift), ("withheld", base)):
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

    def _estimates_table(self, d: dict) -> pd.DataFrame:
        keep = min(self.replications, TABLE_REPLICATIONS)
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
                        "true_lift": d["pool_lift"][:keep],
                    }
                )
            )
        return pd.concat(frames, ignore_index=True)


def _correlation(name: str, a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """Pearson correlation with the Fisher-z delta SE ``(1 - r^2) / sqrt(n - 3)``."""
    n = a.size
    if n < 4 or np.std(a) == 0 or np.std(b) == 0:
        return {name: float("nan"), f"{name}_se": float("nan")}
    r = float(np.corrcoef(a, b)[0, 1])
    return {name: r, f"{name}_se": (1 - r * r) / np.sqrt(n - 3)}
