"""GateScenario: how often a revision gate reverts, and how many runs it spends deciding.

A prior revision has true success rate ``p_prior``; the revision has ``p_prior - drop``
for each true ``drop`` of a grid that always includes 0 (null) and the gate's design
drop (alt) (``max(0, p_prior - drop)``, so a drop past ``p_prior`` means a revision that
never succeeds). Per replication and drop:

1. p0: the true ``p_prior`` when ``ledger_size`` is None (p0 known), else the gate's own
   ``estimate_p0`` of a simulated prior ledger of ``ledger_size`` runs;
2. the revision's ``gate.max_runs`` runs are simulated and the gate's vectorized
   ``decide_batch`` finds the first decision; with a ``cost_gate`` the two decide
   together run by run (``gates.decide_together``, the store's rule), from log-normal
   success costs.

Heterogeneity: with ``heterogeneity`` rho > 0 every replication has a pool of
``pool_size`` users with success rates ``Beta`` (mean ``p_prior``, intra-class
correlation rho), the revision shifts each by ``-drop`` (clipped at 0), and each run
(ledger runs too) comes from a uniformly drawn pool user, so runs are correlated the way
repeat traffic is. Feedback: label channels act on every run the gates see (a judge
reads the user as the prior's rate, the user's own); arrival
channels cost sessions (``Feedback.sessions_to_collect``: the gate still needs its runs).

Designs (``procmem_core.gates.DESIGNS``): "fixed" (the seed's: the prior's ledger is all
its evidence) or "concurrent" (while the revision is pending each session serves the prior
with probability ``concurrent_share``, so the prior's runs accrue beside the revision's).
A one-sample gate decides from p0 in both; a gate that compares the arms
(``Gate.compares_arms``) reads the ledger and the concurrent runs (``decide_evidence``).
In the concurrent design the sessions are allocated exactly: a decision that needs ``r``
revision and ``c`` prior runs lands when both arms have them, the other arm having
accrued more meanwhile (``mean_revision_runs_*``, ``mean_prior_runs_*``).

Exact regime (``<name>_exact`` metrics and ``operating_points`` columns): a gate with an
exact operating point, no heterogeneity, noiseless feedback, no cost gate; p0 known or
estimated from the ledger (the exact mixture over the ledger's Binomial count).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from procmem_core.errors import (
    ParameterError,
    check_choice,
    check_instance,
    check_int,
    check_number,
    check_probability,
)
from procmem_core.gates import (
    ACCEPT_CODE,
    DESIGNS,
    REVERT_CODE,
    Gate,
    SPRTGate,
    decide_together,
)
from procmem_core.gates.arms import arm_runs
from procmem_core.gates.verdicts import successes_at
from simulators.draws import bernoulli_rows, scratch
from simulators.feedback import Feedback
from simulators.replication import Chunk, check_positive
from simulators.result import ScenarioResult, mean_and_se
from simulators.scenarios.base import Scenario, Work
from simulators.scenarios.gate_tables import decisions_table, operating_points_table
from simulators.users import UserPopulation

SEED_MIN_DROP = SPRTGate().min_drop
"""The Loom seed's gate_min_drop: the alt drop for a gate without a design drop of its own."""


def check_veto(field_name: str, gate: object) -> Gate:
    """A gate for the veto slot: one that can revert but never accepts (the cost gate)."""
    check_instance(field_name, gate, Gate)
    if not gate.veto_only:
        raise ParameterError(field_name, gate.name, "a veto gate (one that never accepts)")
    return gate


def _check_drops(drops: object) -> tuple[float, ...]:
    if isinstance(drops, str) or not hasattr(drops, "__iter__"):
        raise ParameterError("drops", drops, "expected a sequence of numbers in [0, 1]")
    return tuple(check_probability("drops", d) for d in drops)


@dataclass(frozen=True)
class GateScenario(Scenario):
    """False reverts, missed regressions and runs to decision of one gate configuration.

    Metrics (each with ``_se``): ``false_revert_rate`` (revert at drop 0),
    ``accept_rate_null``, ``missed_regression_rate`` (no revert at the alt drop),
    ``revert_rate_alt``, ``mean_runs_null``, ``mean_runs_alt`` (runs at the decision) and
    ``mean_sessions_null``, ``mean_sessions_alt`` (sessions the revision ran before its
    decision landed: missing and delayed ratings included); exact counterparts
    ``<name>_exact`` in the exact regime. Tables ``gate_decisions`` (one row per
    replication and drop, the first ``table_rows`` replications of each drop, in the
    schema ``gates.DECISION_COLUMNS`` plus the truth) and ``operating_points`` (one row
    per drop: simulated, exact and, where the gate has one, its approximation).
    """

    name: ClassVar[str] = "gate"
    key_metrics: ClassVar[tuple[str, ...]] = (
        "false_revert_rate",
        "missed_regression_rate",
        "mean_runs_null",
        "mean_runs_alt",
    )
    inputs: ClassVar[dict[str, str]] = {
        "gate": "gate",
        "cost_gate": "cost_gate",
        "feedback": "feedback",
    }
    unset_words: ClassVar[dict[str, str]] = {"ledger_size": "p0 known"}

    gate: Gate = field(default_factory=SPRTGate)
    p_prior: float = 0.8
    drops: tuple[float, ...] = (0.0, 0.15)
    ledger_size: int | None = None
    design: str = "fixed"
    concurrent_share: float = 0.0
    heterogeneity: float = 0.0
    pool_size: int = 20
    feedback: Feedback = field(default_factory=Feedback)
    cost_gate: Gate | None = None
    cost_increase: float = 0.0
    cost_sd: float = 0.5
    min_drop: float | None = None
    replications: int = 20_000
    chunk_size: int = 8_192
    table_rows: int = 20_000
    units_per_second: ClassVar[float] = 5e6  # revision runs

    def __post_init__(self) -> None:
        check_instance("gate", self.gate, Gate)
        if self.gate.veto_only:
            raise ParameterError("gate", self.gate.name, "a gate that can accept (not a veto)")
        p = check_probability("p_prior", self.p_prior)
        object.__setattr__(self, "drops", _check_drops(self.drops))
        if self.ledger_size is not None:
            check_int("ledger_size", self.ledger_size, minimum=1)
        self._check_design()
        check_probability("heterogeneity", self.heterogeneity, open_high=True)
        if self.heterogeneity > 0 and not 0 < p < 1:
            raise ParameterError("p_prior", p, "expected 0 < p_prior < 1 with heterogeneity")
        check_int("pool_size", self.pool_size, minimum=1)
        check_instance("feedback", self.feedback, Feedback)
        if self.feedback.informative:  # the runs it draws are the rated sessions' outcomes
            raise ParameterError(
                "feedback", self.feedback, "channels whose ratings do not depend on the outcome"
            )
        if self.cost_gate is not None:
            check_veto("cost_gate", self.cost_gate)
            if self.ledger_size is None:
                raise ParameterError(
                    "cost_gate", self.cost_gate, "needs ledger_size (the prior's costs)"
                )
        check_number("cost_increase", self.cost_increase, minimum=-1.0, open_low=True)  # > -100 %
        check_positive("cost_sd", self.cost_sd, allow_zero=True)
        if self.min_drop is not None:
            check_probability("min_drop", self.min_drop, open_low=True)
        self.check_replications()
        check_int("table_rows", self.table_rows, minimum=0)

    def _check_design(self) -> None:
        check_choice("design", self.design, DESIGNS)
        share = check_probability("concurrent_share", self.concurrent_share, open_high=True)
        if (self.design == "concurrent") != (share > 0):
            raise ParameterError(
                "concurrent_share", share, "in (0, 1) with design=concurrent, 0 with design=fixed"
            )
        if self.design not in self.gate.designs:
            raise ParameterError("design", self.design, f"one of the gate's {self.gate.designs}")
        if self.gate.compares_arms and self.design == "fixed" and self.ledger_size is None:
            raise ParameterError(
                "ledger_size", None, "a ledger: the gate compares the arms and has no other prior"
            )
        if self.gate.compares_arms and self.cost_gate is not None:
            raise ParameterError("cost_gate", self.cost_gate.name, "None with a two-sample gate")

    @property
    def concurrent(self) -> bool:
        return self.design == "concurrent"

    @property
    def alt_drop(self) -> float:
        """The regression the gate must catch: ``min_drop``, else the gate's design drop,
        else the seed's 0.15."""
        if self.min_drop is not None:
            return float(self.min_drop)
        drop = self.gate.design_drop
        return float(SEED_MIN_DROP if drop is None else drop)

    @property
    def drop_grid(self) -> tuple[float, ...]:
        """The simulated drops: ``drops`` plus 0 and ``alt_drop``, sorted, without repeats.

        A drop larger than ``p_prior`` leaves the revision at success rate 0.
        """
        grid = {round(d, 12) for d in (*self.drops, 0.0, self.alt_drop)}
        return tuple(sorted(grid))

    @property
    def exact_regime(self) -> bool:
        return (
            self.gate.exact
            and self.heterogeneity == 0
            and self.feedback.noiseless
            and self.cost_gate is None
        )

    # --- simulation --------------------------------------------------------------------

    def _rates(self, rng: np.random.Generator, n: int, drop: float):
        """Per-replication pools of (prior, revision) user rates, or scalars."""
        if self.heterogeneity == 0:
            return self.p_prior, max(0.0, self.p_prior - drop)
        pop = UserPopulation(base_rate=self.p_prior, heterogeneity=self.heterogeneity)
        prior = pop.sample_base(rng, (n, self.pool_size))
        return prior, np.clip(prior - drop, 0.0, 1.0)

    def _runs(self, rng: np.random.Generator, rate, n: int, t: int, out=None, base=None):
        """``n`` rows of ``t`` runs at ``rate`` (a scalar, or per-replication user pools),
        relabelled by the feedback reading who the user is, ``base`` (the users' prior
        rates; ``rate`` when None); ``out``: where to draw noiseless runs at a scalar rate."""
        base = rate if base is None else base
        if np.ndim(rate) == 0:
            if not self.feedback.relabels:
                return bernoulli_rows(rng, rate, n, t, out)
            out, user = rng.random((n, t)) < rate, base
        else:
            who = (np.arange(n)[:, None], rng.integers(0, self.pool_size, size=(n, t)))
            out, user = rng.random((n, t)) < rate[who], base[who]
        return self.feedback.relabel(rng, out, user)

    def _p0(self, rng: np.random.Generator, prior_rate, n: int):
        """``(p0 per row, the prior ledgers or None)``."""
        if self.ledger_size is None:
            return np.full(n, self.p_prior), None
        ledger = self._runs(rng, prior_rate, n, self.ledger_size)
        s = ledger.sum(axis=1)
        return np.asarray(self.gate.estimate_p0(s, self.ledger_size), dtype=float), ledger

    def _costs(self, rng: np.random.Generator, ok: np.ndarray, increase: float) -> np.ndarray:
        """Log-normal costs with mean ``1 + increase`` on successful runs, NaN elsewhere."""
        sigma = self.cost_sd
        mu = np.log1p(increase) - sigma**2 / 2
        return np.where(ok, rng.lognormal(mu, sigma, ok.shape), np.nan)

    def _decide(self, rng, outcomes, p0, ledger, conc):
        if self.cost_gate is None:
            if ledger is None:
                d = self.gate.decide_evidence(outcomes, p0=p0, concurrent=conc)
            else:
                d = self.gate.decide_evidence(
                    outcomes,
                    ledger_successes=ledger.sum(axis=1),
                    ledger_runs=self.ledger_size,
                    concurrent=conc,
                )
            return d, np.zeros(outcomes.shape[0], bool)
        prior_costs = self._costs(rng, ledger, 0.0)
        costs = self._costs(rng, outcomes, self.cost_increase)
        return decide_together(self.gate, self.cost_gate, outcomes, p0, costs, prior_costs)

    def _allocate(self, rng: np.random.Generator, runs_used: np.ndarray):
        """``(revision runs, prior runs)`` when a decision needing ``gate.arm_runs`` lands:
        ``X ~ NegBin(c, q)`` revision sessions come before the prior's ``c``-th; if
        ``X >= r`` the prior was the bottleneck, else the revision's last ``r - X`` runs
        bring ``NegBin(r - X, 1 - q)`` more prior runs."""
        r, c = self.gate.arm_runs(runs_used)
        if not self.concurrent:
            return r, c
        q = self.concurrent_share
        x = np.where(c > 0, rng.negative_binomial(np.maximum(c, 1), q), 0)
        short = np.maximum(r - x, 0)
        y = np.where(short > 0, rng.negative_binomial(np.maximum(short, 1), 1.0 - q), 0)
        return np.maximum(r, x), c + y

    def _chunk(self, chunk: Chunk) -> dict[float, dict[str, np.ndarray]]:
        """One chunk of replications at every drop of the grid (what only the decisions
        table reads, for the chunk's replications among its first ``table_rows``)."""
        keys = ("verdict", "runs", "sessions", "rev_runs", "prior_runs")
        keys += ("stat", "reason", "p0", "cost", "prior_s", "s")
        out = {d: {} for d in self.drop_grid}
        t = self.gate.max_runs
        tabled = slice(0, max(0, min(chunk.size, self.table_rows - chunk.start)))
        arms = slice(None) if self.concurrent else tabled  # the metrics read them there
        shape = (chunk.size, t)
        count = np.int16 if t < np.iinfo(np.int16).max else np.int64  # runs: exact, smaller
        for d in self.drop_grid:
            prior_rate, new_rate = self._rates(chunk.rng, chunk.size, d)
            p0, ledger = self._p0(chunk.rng, prior_rate, chunk.size)
            # outcomes stay inside this loop: a scratch array serves every drop and chunk
            outcomes = self._runs(
                chunk.rng, new_rate, chunk.size, t, scratch(shape, bool), base=prior_rate
            )
            conc = self._runs(chunk.rng, prior_rate, chunk.size, t) if self.concurrent else None
            decision, by_cost = self._decide(chunk.rng, outcomes, p0, ledger, conc)
            successes = decision.successes
            if successes is None:  # a gate that does not count them: count here
                successes = successes_at(outcomes[:, :t], decision.runs_used)
            rev_runs, prior_runs = self._allocate(chunk.rng, decision.runs_used)
            sessions = self.feedback.sessions_to_collect(chunk.rng, rev_runs + prior_runs)
            runs = decision.runs_used[tabled]
            values = (
                decision.verdict,
                decision.runs_used.astype(count),
                sessions,
                rev_runs[arms],
                prior_runs[arms],
                decision.statistic[tabled],
                decision.reason[tabled],
                p0[tabled],
                by_cost[tabled],
                -np.ones(runs.size, dtype=np.int64) if ledger is None else ledger[tabled].sum(1),
                np.where(runs > 0, successes[tabled], 0),
            )
            out[d] = dict(zip(keys, values, strict=True))
        return out

    def _simulate(self, seed: int) -> dict[float, dict[str, np.ndarray]]:
        parts = self.map_chunks(seed, self._chunk)
        return {
            d: {k: np.concatenate([p[d][k] for p in parts]) for k in parts[0][d]}
            for d in self.drop_grid
        }

    # --- results -----------------------------------------------------------------------

    def work(self) -> Work:
        """Revision runs per drop; 9 arrays kept per replication and drop, ~20 B a run."""
        drops, runs = len(self.drop_grid), self.gate.max_runs + (self.ledger_size or 0)
        kept = 130 * drops + 60 * drops * min(1.0, self.table_rows / self.replications)
        return self.estimate(
            self.replications * drops * runs, kept, 20 * runs, ("replications", "drops")
        )

    def run(self, seed: int) -> ScenarioResult:
        sims = self._simulate(seed)
        result = self.new_result()
        exact = self._exact() if self.exact_regime else {}
        means = {d: {k: mean_and_se(sims[d][k]) for k in ("runs", "sessions")} for d in sims}
        for label, drop in (("null", 0.0), ("alt", round(self.alt_drop, 12))):
            sim = sims[drop]
            reps = sim["verdict"].size
            reverts = np.count_nonzero(sim["verdict"] == REVERT_CODE)
            accepts = np.count_nonzero(sim["verdict"] == ACCEPT_CODE)
            if label == "null":
                result.add_rate("false_revert_rate", reverts, reps)
                result.add_rate("accept_rate_null", accepts, reps)
            else:
                result.add_rate("missed_regression_rate", reps - reverts, reps)
                result.add_rate("revert_rate_alt", reverts, reps)
            for key in ("runs", "sessions"):  # computed once: the table shows them too
                m, se = means[drop][key]
                result.metrics[f"mean_{key}_{label}"] = m
                result.metrics[f"mean_{key}_{label}_se"] = se
            if self.concurrent:
                result.add_mean(f"mean_revision_runs_{label}", sim["rev_runs"])
                result.add_mean(f"mean_prior_runs_{label}", sim["prior_runs"])
                if self.exact_regime:
                    arms = self._exact_arms(drop)
                    result.metrics[f"mean_revision_runs_{label}_exact"] = arms[0]
                    result.metrics[f"mean_prior_runs_{label}_exact"] = arms[1]
            if drop in exact:
                p_rev, runs = exact[drop]
                if label == "null":
                    result.metrics["false_revert_rate_exact"] = p_rev
                else:
                    result.metrics["missed_regression_rate_exact"] = 1.0 - p_rev
                    result.metrics["revert_rate_alt_exact"] = p_rev
                result.metrics[f"mean_runs_{label}_exact"] = runs
                for name in ("false_revert_rate", "missed_regression_rate", "revert_rate_alt"):
                    result.boundary_se(name, reps)
        result.tables["operating_points"] = operating_points_table(self, sims, exact, means)
        result.tables["gate_decisions"] = decisions_table(self, sims)
        return result

    def _exact_arms(self, drop: float) -> tuple[float, float]:
        """Exact expected runs of each arm at the decision (``gates.arms.arm_runs``)."""
        curve = self.gate.operating_curve(np.array([self.p_prior]), drop, self.ledger_size)
        rev, prior = arm_runs(self.gate, curve, self.concurrent_share)
        return float(rev[0]), float(prior[0])

    def p_new_grid(self) -> np.ndarray:
        """The revision's true rate ``max(0, p_prior - drop)`` at each drop of the grid."""
        return np.array([max(0.0, self.p_prior - d) for d in self.drop_grid])

    def _exact(self) -> dict[float, tuple[float, float]]:
        """``{drop: (P(revert), E[runs])}`` from the gate's exact operating point (p0 known,
        or mixed over the prior ledger's Binomial(ledger_size, p_prior) count)."""
        op = self.gate.operating_point(self.p_new_grid(), self.p_prior, self.ledger_size)
        return {
            d: (float(op.p_revert[i]), float(op.expected_runs[i]))
            for i, d in enumerate(self.drop_grid)
        }
