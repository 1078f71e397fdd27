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

from procmem_core.ab import (
    ESTIMATORS,
    all_estimators,
    newcombe_path,
    regression_adjustment,
    sequential_srm_p_value,
    srm_p_value,
)
from procmem_core.errors import (
    ParameterError,
    check_choice,
    check_instance,
    check_int,
    check_probability,
)
from procmem_core.explore import withhold_top
from procmem_core.flat import DEFAULT_RULE, DEFAULT_THRESHOLD, FlatRule, passes_threshold
from procmem_core.logged import CHECK_FIELDS
from simulators.calibration_blocks import Figure, block_units, calibration_metrics, pick_figures
from simulators.feedback import Feedback
from simulators.replication import Chunk
from simulators.result import ScenarioResult
from simulators.scenarios.base import Scenario, Work
from simulators.scenarios.explore_metrics import correlation, estimator_metrics, online_metrics
from simulators.scenarios.explore_tables import (
    arms_table,
    deployment_arms,
    estimates_table,
    path_table,
)
from simulators.session_log import explore_log
from simulators.users import UserPopulation

TRACED = ("cs_aipw", "cs_eb_aipw")
"""The sequences traced over the sessions of the first deployment (table ``cs_path``)."""
CHUNK_SESSIONS = 4_000_000
ANALYSIS_SESSIONS = 500_000
BLOCK_METRICS = ("exploration_cost", "dim_estimate")
"""The figures a calibration block may log (``exact_metrics``)."""
BLOCK_HORIZONS = range(50, 201, 25)
"""The horizons of the calibration blocks (those up to ``sessions``; ``sessions`` when
none is): at 50 the withheld arm expects a session at the smallest preset rate (0.02),
and a block of 500 replications at 200 costs a tenth of a 1000-session job."""


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
    """Withheld-vs-shown A/B of one procedure, analysed by every registered estimator.

    Metrics, per estimator ``e`` (``ESTIMATORS``: dim, ipw, ipw_ht, aipw, cuped and the
    confidence sequences cs_*): ``e_estimate``, ``e_bias``, ``e_rmse``, ``e_coverage`` (CI
    holds the pool's lift at the horizon), ``e_power`` (CI excludes 0 at the horizon),
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

    Reading online (docs/ab.md), each with ``_se``: for every traced sequence,
    ``e_monitor_miss_rate`` (the pool's lift left it at some session) and
    ``e_sequential_power`` (0 left it at some session: stopping at the first exclusion);
    ``dim_monitor_miss_rate`` (the same for Newcombe's fixed-n interval, recomputed after
    every session from the first with both arms: what peeking costs); for every sequence
    ``e_width_ratio`` (its width over its fixed-n counterpart's at the horizon, the
    tuning at ``cs_tuning_sessions``, None = ``sessions``); ``srm_flag_rate`` and
    ``srm_sequential_flag_rate`` (sample-ratio mismatch at p < 0.001: the exact test at
    the horizon; the always-valid test ever, checked after every session);
    ``cuped_width_reduction`` (``1 - se / se_unadjusted`` with the user's base rate as
    the pre-session covariate). Tables (``explore_tables``): ``ab_arms`` (per arm,
    pooled: a check of the simulation), ``ab_arms_by_replication`` (per deployment and
    arm, the loop's layout), ``estimates`` (per replication and estimator, with p-values
    and the monitoring flags) and ``cs_path`` (the first deployment, session by session).

    With ``calibration_blocks`` > 0, that many ``exploration_cost`` and ``dim_estimate``
    figures at horizons ``BLOCK_HORIZONS``, each from ``calibration_replications`` fresh
    replications of its own (``simulators.calibration_blocks``, ``exact_metrics``).
    """

    name: ClassVar[str] = "explore"
    key_metrics: ClassVar[tuple[str, ...]] = (
        "true_lift",
        "estimate",
        "coverage",
        "power",
        "exploration_cost",
    )
    inputs: ClassVar[dict[str, str]] = {
        "population": "users",
        "feedback": "feedback",
        "rule": "rule",
        "threshold": "rule.threshold",
        "explore_rate": "explore.explore_rate",
        "estimator": "explore.estimator",
        "confidence_level": "explore.confidence_level",
        "target_power": "explore.target_power",
        "cs_tuning_sessions": "explore.cs_tuning_sessions",
    }

    population: UserPopulation = field(default_factory=_default_population)
    feedback: Feedback = field(default_factory=Feedback)
    explore_rate: float = 0.1
    sessions: int = 1_000
    users: int = 50
    confidence_level: float = 0.95
    target_power: float = 0.8
    estimator: str = "dim"
    cs_tuning_sessions: int | None = None
    rule: FlatRule = DEFAULT_RULE
    threshold: float = DEFAULT_THRESHOLD
    replications: int = 200
    chunk_size: int | None = None
    export_log: int = 0
    """Export this many replications (of the first chunk) as one session log
    (docs/logs.md): tables ``sessions`` (one procedure per replication) and
    ``sessions_truth`` (each one's pool lift); 0: none."""
    calibration_blocks: int = 0
    calibration_replications: int = 500
    units_per_second: ClassVar[float] = 1e6  # sessions
    unseeded: ClassVar[tuple[str, ...]] = CHECK_FIELDS  # added after its jobs were logged

    def __post_init__(self) -> None:
        check_instance("population", self.population, UserPopulation)
        check_instance("feedback", self.feedback, Feedback)
        check_probability("explore_rate", self.explore_rate, open_low=True, open_high=True)
        check_int("sessions", self.sessions, minimum=4)
        check_int("users", self.users, minimum=1)
        check_probability("confidence_level", self.confidence_level, open_low=True, open_high=True)
        check_probability("target_power", self.target_power, open_low=True, open_high=True)
        check_choice("estimator", self.estimator, ESTIMATORS.names())
        if self.cs_tuning_sessions is not None:
            check_int("cs_tuning_sessions", self.cs_tuning_sessions, minimum=1)
        check_instance("rule", self.rule, FlatRule)
        if self.rule.needs_baseline or self.rule.needs_counts:  # the side metric's update
            raise ParameterError(
                "rule",
                self.rule.name,
                "a rule whose update reads only the confidence and the outcome (the seed's "
                "confidence rule): confidence_final keeps no baseline or counts",
            )
        check_probability("threshold", self.threshold)
        self.check_replications()
        check_int("export_log", self.export_log, minimum=0)
        check_int("calibration_blocks", self.calibration_blocks, minimum=0)
        check_int(
            "calibration_replications", self.calibration_replications, minimum=self.min_replications
        )
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

    def _chunk(
        self, rng: np.random.Generator, n: int, trace: dict | None = None
    ) -> dict[str, np.ndarray]:
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
        if trace is not None and self.export_log:
            m = min(n, self.export_log)
            parts = (who[:m], shown[:m], signal[:m], arrived[:m])
            trace["session_log"] = explore_log(*parts, self.explore_rate, fb.delay, pool_lift[:m])
        out |= self._analyse(y, shown, b, arrived, pool_lift, trace)
        out["withheld"] = (~shown).sum(axis=1).astype(float)
        for arm, sel in (("shown", shown), ("withheld", ~shown)):
            out[f"{arm}_sessions"] = sel.sum(axis=1).astype(float)
            out[f"{arm}_successes"] = (outcome & sel).sum(axis=1).astype(float)
        update = shown & arrived
        conf = np.full(n, self.rule.start())
        for t in range(s):
            conf = np.where(update[:, t], self.rule.update(conf, signal[:, t]), conf)
        out["confidence"] = conf
        return out

    def _analyse(self, y, shown, b, arrived, truth, trace) -> dict[str, np.ndarray]:
        """``_estimates`` and ``_online`` in blocks of about ``ANALYSIS_SESSIONS`` sessions
        (each row is analysed on its own, so blocks change no number, only the memory)."""
        blocks = max(1, -(-y.size // ANALYSIS_SESSIONS))
        parts = []
        for i, rows in enumerate(np.array_split(np.arange(y.shape[0]), blocks)):
            t = trace if i == 0 else None
            part = self._estimates(y[rows], shown[rows], b[rows], arrived[rows], truth[rows], t)
            part |= self._online(y[rows], shown[rows], b[rows], arrived[rows], truth[rows], t)
            parts.append(part)
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

    def _estimates(self, y, shown, b, arrived, truth, trace) -> dict[str, np.ndarray]:
        """Every estimator at the horizon; for a traced confidence sequence, also whether
        the pool's lift (``_miss``) or 0 (``_detect``) ever left it."""
        e, level, out = 1.0 - self.explore_rate, self.confidence_level, {}
        for est in all_estimators(tuning_sessions=self.cs_tuning_sessions):
            path = est.monitor(y, shown, b, arrived, e, level)
            r = path.final() if path is not None else est.estimate(y, shown, b, arrived, e, level)
            out[f"{est.name}_tau"], out[f"{est.name}_se"] = r.tau, r.se
            out[f"{est.name}_low"], out[f"{est.name}_high"] = r.low, r.high
            out[f"{est.name}_p"] = r.p
            if path is not None:
                out[f"{est.name}_miss"] = path.ever_excludes(truth)
                out[f"{est.name}_detect"] = path.ever_excludes(0.0)
                if trace is not None and est.name in TRACED:
                    trace[est.name] = (path.low[0], path.high[0], path.centre[0])
        return out

    def _online(self, y, shown, b, arrived, truth, trace) -> dict[str, np.ndarray]:
        """The peeked fixed-n interval, the sample-ratio checks and CUPED's width."""
        level = self.confidence_level
        low, high = newcombe_path(y, shown, arrived, level)
        miss = (low > truth[:, None]) | (high < truth[:, None])
        tuning = self.cs_tuning_sessions or self.sessions
        seq = sequential_srm_p_value(~shown, self.explore_rate, tuning)
        adj = regression_adjustment(y, shown, b, arrived, 1.0 - self.explore_rate, level)
        if trace is not None:
            trace["dim"] = (low[0], high[0], None)
            trace["truth"] = truth[0]
        return {
            "peeked_miss": miss.any(axis=1),
            "srm_p": srm_p_value((~shown).sum(axis=1), self.sessions, self.explore_rate),
            "srm_sequential_p": seq[:, -1].copy(),
            "cuped_reduction": adj.width_reduction,
            **{f"{arm}_rated": (sel & arrived).sum(axis=1).astype(float)
               for arm, sel in (("shown", shown), ("withheld", ~shown))},
            **{f"{arm}_signal": (y * (sel & arrived)).sum(axis=1)
               for arm, sel in (("shown", shown), ("withheld", ~shown))},
        }  # fmt: skip

    def work(self) -> Work:
        """Sessions; ~24 estimates kept per replication, ~290 B per session of a chunk (the
        traced confidence sequences and the peeked interval hold a value per session)."""
        longest = min(self.sessions, BLOCK_HORIZONS[-1])
        units = self.replications * self.sessions + block_units(self, longest)
        drivers = ("replications", "sessions", "users")
        return self.estimate(units, 400, 290 * self.sessions, drivers)

    def _chunk_job(self, chunk: Chunk) -> tuple[dict[str, np.ndarray], dict]:
        """One chunk's arrays and, for the first chunk, the traced deployment."""
        trace: dict = {}
        part = self._chunk(chunk.rng, chunk.size, trace if chunk.index == 0 else None)
        return part, trace

    def run(self, seed: int) -> ScenarioResult:
        jobs = self.map_chunks(seed, self._chunk_job)
        parts = [part for part, _ in jobs]
        trace = jobs[0][1]
        log = trace.pop("session_log", None)
        d = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        reps = self.replications
        result = self.new_result()
        pop = self.population
        lift = pop.mean_lift
        result.metrics["true_lift"] = lift
        result.add_mean("true_lift_pool", d["pool_lift"])
        truth = d["pool_lift"]
        for name in ESTIMATORS.names():
            estimator_metrics(result, name, d, truth)
        for key in ("estimate", "bias", "rmse", "coverage", "power", "ci_width", "undefined_rate"):
            for suffix in ("", "_se"):
                result.metrics[key + suffix] = result.metrics[f"{self.estimator}_{key}{suffix}"]
        result.metrics.update(self._power_formula(lift))
        result.add_mean("exploration_cost", d["withheld"] * truth)
        result.metrics["exploration_cost_exact"] = self.exact_metrics()["exploration_cost_exact"]
        conf = d["confidence"]
        result.add_mean("confidence_final", conf)
        wrong = passes_threshold(conf, self.threshold) != (truth > 0)
        result.add_rate("confidence_wrong_side_rate", np.count_nonzero(wrong), reps)
        result.metrics.update(correlation("confidence_lift_correlation", conf, truth))
        online_metrics(result, d, truth, reps)
        result.tables["ab_arms"] = arms_table(d, pop)
        result.tables["ab_arms_by_replication"] = deployment_arms(d, reps)
        result.tables["estimates"] = estimates_table(d, reps)
        result.tables["cs_path"] = path_table(trace)
        if log is not None:
            result.tables["sessions"] = pd.DataFrame(log[0])
            result.tables["sessions_truth"] = pd.DataFrame(log[1])
        result.metrics.update(calibration_metrics(self, seed))
        return result

    @property
    def exact_regime(self) -> bool:
        """Always: ``exploration_cost`` has its exact value (``exact_metrics``)."""
        return True

    def exact_metrics(self) -> dict[str, float]:
        """``exploration_cost_exact = epsilon n true_lift`` (the withheld count is
        Binomial(n, epsilon), independent of the pool); with noiseless feedback also
        ``dim_estimate_exact = true_lift``: given the arms' sizes, each session's user is
        a uniform draw from a pool drawn from the population, so the mean of each arm is
        unbiased for the population's rate with and without the procedure (an empty arm,
        decided by the draw alone, leaves the replication out). A run logs only the first:
        its ``dim_estimate`` shares the replications of ``exploration_cost``; the
        calibration blocks check both (``block_figures``)."""
        lift = self.population.mean_lift
        out = {"exploration_cost_exact": self.explore_rate * self.sessions * lift}
        if self.feedback.noiseless:
            out["dim_estimate_exact"] = lift
        return out

    def block_figures(self) -> list[Figure]:
        """The calibration blocks' figures: ``BLOCK_METRICS`` at ``BLOCK_HORIZONS``
        (``simulators.calibration_blocks``)."""
        horizons = [h for h in BLOCK_HORIZONS if h <= self.sessions] or [self.sessions]
        return pick_figures(self, BLOCK_METRICS, horizons=horizons, bounded=False)

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
