"""GateScenario: how often a revision gate reverts, and how many runs it spends deciding.

A prior revision has true success rate ``p_prior``; the revision has ``p_prior - drop``
for each true ``drop`` of a grid that always includes 0 (null) and ``min_drop`` (alt)
(``max(0, p_prior - drop)``, so a drop past ``p_prior`` means a revision that never
succeeds).
Per replication and drop:

1. p0: the true ``p_prior`` when ``ledger_size`` is None (p0 known), else estimated by
   the gate from a simulated prior ledger of ``ledger_size`` runs (the SPRT gate's
   ``estimate_p0``; the margin gate's raw ``s/n``);
2. the revision's ``gate.max_runs`` runs are simulated and the gate's own vectorized
   ``decide_batch`` finds the first decision;
3. an optional ``cost_gate`` (``CostGate.decide``, object path) may overturn it to revert
   at the decision run, from log-normal success costs.

Heterogeneity: with ``heterogeneity`` rho > 0 every replication has a pool of
``pool_size`` users with success rates ``Beta`` (mean ``p_prior``, intra-class
correlation rho), the revision shifts each by ``-drop`` (clipped at 0), and each run
(ledger runs too) comes from a uniformly drawn pool user, so runs are correlated the way
repeat traffic is. Feedback: label flips act on every run the gates see; missing
signals cost extra sessions (a negative binomial count: the gate still needs its runs);
a delay of k means k more sessions run on the revision before the decision lands.

Exact regime (``<name>_exact`` metrics and ``operating_points`` columns): p0 known, no
heterogeneity, noiseless feedback, no cost gate; then ``sprt_operating_point`` or
``margin_operating_point`` give the rates and mean runs exactly for every cap rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd

from procmem_core.errors import ParameterError, check_int, check_probability
from procmem_core.exact import margin_operating_point, sprt_operating_point, wald_operating_point
from procmem_core.gates import CostGate, MarginGate, RevisionStats, SPRTGate
from procmem_core.sequential import ACCEPT_CODE, REVERT_CODE, VERDICT_NAMES
from simulators.feedback import FeedbackModel
from simulators.replication import check_positive, chunks
from simulators.result import ScenarioResult, mean_and_se, rate_and_se
from simulators.users import UserPopulation

SEED_MIN_DROP = 0.15
"""The Loom seed's gate_min_drop: the alt drop for a gate without its own min_drop."""


def _check_drops(drops: object) -> tuple[float, ...]:
    if isinstance(drops, str) or not hasattr(drops, "__iter__"):
        raise ParameterError("drops", drops, "expected a sequence of numbers in [0, 1]")
    return tuple(check_probability("drops", d) for d in drops)


@dataclass(frozen=True)
class GateScenario:
    """False reverts, missed regressions and runs to decision of one gate configuration.

    Metrics (each with ``_se``): ``false_revert_rate`` (revert at drop 0),
    ``accept_rate_null``, ``missed_regression_rate`` (no revert at drop ``min_drop``),
    ``revert_rate_alt``, ``mean_runs_null``, ``mean_runs_alt`` (runs at the decision) and
    ``mean_sessions_null``, ``mean_sessions_alt`` (sessions the revision ran before its
    decision landed: missing signals and delay included); exact counterparts
    ``<name>_exact`` in the exact regime. Tables ``gate_decisions`` (one row per
    replication and drop, the first ``table_rows`` replications of each drop) and
    ``operating_points`` (one row per drop, simulated, exact and, for SPRT, Wald).
    """

    name: ClassVar[str] = "gate"

    gate: SPRTGate | MarginGate = field(default_factory=SPRTGate)
    p_prior: float = 0.8
    drops: tuple[float, ...] = (0.0, 0.15)
    ledger_size: int | None = None
    heterogeneity: float = 0.0
    pool_size: int = 20
    feedback: FeedbackModel | None = None
    cost_gate: CostGate | None = None
    cost_increase: float = 0.0
    cost_sd: float = 0.5
    min_drop: float | None = None
    replications: int = 20_000
    chunk_size: int = 8_192
    table_rows: int = 20_000

    def __post_init__(self) -> None:
        if not isinstance(self.gate, SPRTGate | MarginGate):
            raise ParameterError("gate", self.gate, "expected an SPRTGate or a MarginGate")
        p = check_probability("p_prior", self.p_prior)
        object.__setattr__(self, "drops", _check_drops(self.drops))
        if self.ledger_size is not None:
            check_int("ledger_size", self.ledger_size, minimum=1)
        check_probability("heterogeneity", self.heterogeneity, open_high=True)
        if self.heterogeneity > 0 and not 0 < p < 1:
            raise ParameterError("p_prior", p, "expected 0 < p_prior < 1 with heterogeneity")
        check_int("pool_size", self.pool_size, minimum=1)
        if self.feedback is not None and not isinstance(self.feedback, FeedbackModel):
            raise ParameterError("feedback", self.feedback, "expected a FeedbackModel or None")
        if self.cost_gate is not None:
            if not isinstance(self.cost_gate, CostGate):
                raise ParameterError("cost_gate", self.cost_gate, "expected a CostGate or None")
            if self.ledger_size is None:
                raise ParameterError(
                    "cost_gate", self.cost_gate, "needs ledger_size (the prior's costs)"
                )
        check_positive("cost_increase", self.cost_increase + 1.0)  # > -100 %
        check_positive("cost_sd", self.cost_sd, allow_zero=True)
        if self.min_drop is not None:
            check_probability("min_drop", self.min_drop, open_low=True)
        check_int("replications", self.replications, minimum=2)
        check_int("chunk_size", self.chunk_size, minimum=1)
        check_int("table_rows", self.table_rows, minimum=0)

    @property
    def alt_drop(self) -> float:
        """The regression the gate must catch: ``min_drop``, else the SPRT gate's, else 0.15."""
        if self.min_drop is not None:
            return float(self.min_drop)
        return float(getattr(self.gate, "min_drop", SEED_MIN_DROP))

    @property
    def drop_grid(self) -> tuple[float, ...]:
        """The simulated drops: ``drops`` plus 0 and ``alt_drop``, sorted, without repeats.

        A drop larger than ``p_prior`` leaves the revision at success rate 0.
        """
        grid = {round(d, 12) for d in (*self.drops, 0.0, self.alt_drop)}
        return tuple(sorted(grid))

    @property
    def exact_regime(self) -> bool:
        fb = self.feedback
        return (
            self.ledger_size is None
            and self.heterogeneity == 0
            and (fb is None or fb.noiseless)
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

    def _runs(self, rng: np.random.Generator, rate, n: int, t: int) -> np.ndarray:
        if np.ndim(rate) == 0:
            out = rng.random((n, t)) < rate
        else:
            who = rng.integers(0, self.pool_size, size=(n, t))
            out = rng.random((n, t)) < rate[np.arange(n)[:, None], who]
        return out if self.feedback is None else self.feedback.signal(rng, out)

    def _p0(self, rng: np.random.Generator, prior_rate, n: int):
        if self.ledger_size is None:
            return np.full(n, self.p_prior), None
        ledger = self._runs(rng, prior_rate, n, self.ledger_size)
        s, m = ledger.sum(axis=1), self.ledger_size
        if isinstance(self.gate, SPRTGate):
            return np.asarray(self.gate.estimate_p0(s, m), dtype=float), s
        return s / m, s

    def _costs(self, rng: np.random.Generator, count: int, increase: float) -> tuple:
        sigma = self.cost_sd
        mu = np.log1p(increase) - sigma**2 / 2  # mean (1 + increase)
        return tuple(rng.lognormal(mu, sigma, count))

    def _apply_cost_gate(self, rng, decision, outcomes, prior_s) -> tuple[np.ndarray, np.ndarray]:
        """Overturn to revert where the cost gate objects at the decision run."""
        verdict = decision.verdict.copy()
        by_cost = np.zeros(verdict.size, dtype=bool)
        m = self.ledger_size
        for i in range(verdict.size):
            k = int(decision.runs_used[i])
            s_rev = int(outcomes[i, :k].sum())
            prior = RevisionStats(m, int(prior_s[i]), self._costs(rng, int(prior_s[i]), 0.0))
            rev = RevisionStats(k, s_rev, self._costs(rng, s_rev, self.cost_increase))
            if self.cost_gate.decide(prior, rev).verdict == "revert":
                by_cost[i] = verdict[i] != REVERT_CODE
                verdict[i] = REVERT_CODE
        return verdict, by_cost

    def _sessions(self, rng: np.random.Generator, runs_used: np.ndarray) -> np.ndarray:
        fb = self.feedback
        sessions = runs_used.astype(float)
        if fb is not None and fb.missing > 0:
            extra = rng.negative_binomial(np.maximum(runs_used, 1), 1.0 - fb.missing)
            sessions += np.where(runs_used > 0, extra, 0)
        if fb is not None:
            sessions += fb.delay
        return sessions

    def _simulate(self, seed: int) -> dict[float, dict[str, np.ndarray]]:
        out = {
            d: {k: [] for k in ("verdict", "runs", "stat", "p0", "cost", "sessions")}
            for d in self.drop_grid
        }
        t = self.gate.max_runs
        for chunk in chunks(seed, self.replications, self.chunk_size):
            for d in self.drop_grid:
                prior_rate, new_rate = self._rates(chunk.rng, chunk.size, d)
                p0, prior_s = self._p0(chunk.rng, prior_rate, chunk.size)
                outcomes = self._runs(chunk.rng, new_rate, chunk.size, t)
                decision = self.gate.decide_batch(outcomes, p0)
                verdict, by_cost = decision.verdict, np.zeros(chunk.size, dtype=bool)
                if self.cost_gate is not None:
                    verdict, by_cost = self._apply_cost_gate(chunk.rng, decision, outcomes, prior_s)
                acc = out[d]
                acc["verdict"].append(verdict)
                acc["runs"].append(decision.runs_used)
                acc["stat"].append(decision.statistic)
                acc["p0"].append(p0)
                acc["cost"].append(by_cost)
                acc["sessions"].append(self._sessions(chunk.rng, decision.runs_used))
        return {d: {k: np.concatenate(v) for k, v in acc.items()} for d, acc in out.items()}

    # --- results -----------------------------------------------------------------------

    def run(self, seed: int) -> ScenarioResult:
        sims = self._simulate(seed)
        result = ScenarioResult(self.name)
        exact = self._exact() if self.exact_regime else {}
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
            result.add_mean(f"mean_runs_{label}", sim["runs"])
            result.add_mean(f"mean_sessions_{label}", sim["sessions"])
            if drop in exact:
                p_rev, runs = exact[drop]
                if label == "null":
                    result.metrics["false_revert_rate_exact"] = p_rev
                else:
                    result.metrics["missed_regression_rate_exact"] = 1.0 - p_rev
                    result.metrics["revert_rate_alt_exact"] = p_rev
                result.metrics[f"mean_runs_{label}_exact"] = runs
        result.tables["operating_points"] = self._operating_points(sims, exact)
        result.tables["gate_decisions"] = self._decisions_table(sims)
        return result

    def _exact(self) -> dict[float, tuple[float, float]]:
        """``{drop: (P(revert), E[runs])}`` from the lattice recursion (p0 known)."""
        g, p0 = self.gate, self.p_prior
        p = np.array([max(0.0, p0 - d) for d in self.drop_grid])
        if isinstance(g, SPRTGate):
            op = sprt_operating_point(
                p, p0, g.min_drop, g.alpha, g.beta, g.max_runs, g.min_runs, g.at_cap
            )
        else:
            op = margin_operating_point(p, p0, g.margin, g.min_runs, g.max_runs)
        return {
            d: (float(op.p_revert[i]), float(op.expected_runs[i]))
            for i, d in enumerate(self.drop_grid)
        }

    def _operating_points(self, sims: dict, exact: dict) -> pd.DataFrame:
        g = self.gate
        wald = None
        if isinstance(g, SPRTGate) and self.ledger_size is None:
            p = np.array([max(0.0, self.p_prior - d) for d in self.drop_grid])
            wald = wald_operating_point(p, self.p_prior, g.min_drop, g.alpha, g.beta)
        rows = []
        for i, d in enumerate(self.drop_grid):
            sim = sims[d]
            reps = sim["verdict"].size
            rev, rev_se = rate_and_se(np.count_nonzero(sim["verdict"] == REVERT_CODE), reps)
            acc, acc_se = rate_and_se(np.count_nonzero(sim["verdict"] == ACCEPT_CODE), reps)
            runs, runs_se = mean_and_se(sim["runs"])
            sess, sess_se = mean_and_se(sim["sessions"])
            ex = exact.get(d, (np.nan, np.nan))
            rows.append(
                {
                    "true_drop": d,
                    "p_prior": self.p_prior,
                    "p_new": max(0.0, self.p_prior - d),
                    "replications": reps,
                    "revert_rate": rev,
                    "revert_rate_se": rev_se,
                    "accept_rate": acc,
                    "accept_rate_se": acc_se,
                    "mean_runs": runs,
                    "mean_runs_se": runs_se,
                    "mean_sessions": sess,
                    "mean_sessions_se": sess_se,
                    "revert_rate_exact": ex[0],
                    "mean_runs_exact": ex[1],
                    "revert_rate_wald": float(wald.p_revert[i]) if wald is not None else np.nan,
                    "mean_runs_wald": float(wald.expected_runs[i]) if wald is not None else np.nan,
                }
            )
        return pd.DataFrame(rows)

    def _reasons(self, verdict: np.ndarray, runs: np.ndarray, stat: np.ndarray, cost: np.ndarray):
        g = self.gate
        names = np.asarray(VERDICT_NAMES, dtype=object)[verdict]
        if isinstance(g, SPRTGate):
            ln_a, ln_b = g.boundaries
            crossed = (stat >= ln_a) | (stat <= ln_b)
            boundary = np.where(verdict == REVERT_CODE, "LLR >= ln A", "LLR <= ln B")
            cap = f"undecided at max_runs={g.max_runs}, at_cap={g.at_cap}"
        else:
            crossed = verdict == REVERT_CODE
            boundary = np.full(verdict.size, f"rate below the prior's by more than {g.margin:g}")
            cap = f"not reverted by max_runs={g.max_runs}"
        at_cap = (runs >= g.max_runs) & ~crossed
        reason = np.where(at_cap, cap, boundary).astype(object)
        reason[verdict == 0] = "undecided"
        reason[cost] = "cost gate: mean success cost above tolerance"
        return names, reason

    def _decisions_table(self, sims: dict) -> pd.DataFrame:
        keep = min(self.table_rows, self.replications)
        frames = []
        for d in self.drop_grid:
            sim = {k: v[:keep] for k, v in sims[d].items()}
            names, reason = self._reasons(sim["verdict"], sim["runs"], sim["stat"], sim["cost"])
            frames.append(
                pd.DataFrame(
                    {
                        "replication": np.arange(keep),
                        "true_drop": d,
                        "p_prior": self.p_prior,
                        "p_new": max(0.0, self.p_prior - d),
                        "p0_used": sim["p0"],
                        "verdict": names,
                        "runs_used": sim["runs"],
                        "sessions": sim["sessions"],
                        "statistic": sim["stat"],
                        "reason": reason,
                    }
                )
            )
        return pd.concat(frames, ignore_index=True)
