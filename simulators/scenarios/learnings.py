"""LearningsScenario: which review policy promotes the right bot rules?

See ``learnings_world.py`` for a session. This module holds the parameters, runs the
replications (one ``LearningsWorld`` each, its own spawned generator) and turns the
logs into metrics, each with its standard error over replications (the independent
unit; ``add_ratio`` where rules of one replication are pooled):

- ``precision``: helpful rules among those promoted; ``recall``: helpful rules promoted;
  ``harmful_promoted_rate`` and ``neutral_promoted_rate``: shares of those kinds promoted;
- ``sessions_to_promotion``: sessions until a promoted helpful rule was promoted (1 =
  the first session); ``helpful_wait``: the same over every helpful rule with a rule
  never promoted counted at the horizon (a restricted mean, which penalises low recall);
  ``helpful_unpromoted``: share of helpful rules not promoted by the horizon;
  ``helpful_wait_median`` with ``_low`` / ``_high``: the Kaplan-Meier median wait (rules
  not promoted censored at the horizon) and its 95 % interval, ``sessions + 1`` for
  "beyond the horizon" (``median_wait``);
- ``harmful_served``: harmful rules promoted per replication; ``harmful_served_sessions``:
  per replication, the later conversations of each promoted harmful rule's agent, summed
  over the rules (a conversation served two harmful rules counts twice, so it can exceed
  ``sessions``);
- with multi-user writers: ``pushed_count_per_writer`` (``supporter_count /
  supporter_writers`` over pushed rules at the end: how far one writer inflates the
  count), ``fabricated_ids_per_writer`` (distinct ids one writer sent per pushed rule,
  a ratio over replications: the rules one writer pushes share its sessions, so they
  are not independent units) with its exact value ``pool (1 - (1 - q / pool)^T)``,
  ``q = share x push_rate / writers``; ``pushed_promoted_rate`` (non-helpful pushed rules promoted);
- ``reach_writers_<kind>`` / ``reach_users_<kind>``: share of rules not pushed that had
  ``min_writers`` / ``min_users`` distinct honest supporters within the horizon (erasures
  ignored), with the exact ``reach_probability((1 - share) rate / agents, k, T, users)``
  (``procmem_core.learnings.exact``) as ``_exact`` where ``MIN_VARIANCE_UNITS`` allows;
- ``erased_deleted``, ``erased_blanked`` (candidates per replication), ``reviews``,
  ``reviews_lapsed`` (a due review found the candidate gone or below the bar).

Tables ``rules`` (one row per rule and replication: truth, fate, counts at the end) and
``reach`` (per count, threshold and kind: simulated share, SE and the exact value).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from procmem_core.errors import ParameterError, check_choice, check_int, check_probability
from procmem_core.learnings import COMBINE, ReviewPolicy, expected_distinct_ids, reach_probability
from simulators.result import ScenarioResult
from simulators.scenarios.base import Scenario, Work
from simulators.scenarios.learnings_world import KINDS, LearningsWorld

MIN_VARIANCE_UNITS = 10.0
"""``reach_*_exact`` is logged beside the simulated share only where ``n p (1 - p) >= 10``
(n rules pooled, p exact): the normal approximation behind the 4-SE agreement check
needs it (a share of 1 over 300 rules has a plug-in SE of 0). Table ``reach`` has the
exact value for every kind."""


@dataclass(frozen=True)
class LearningsScenario(Scenario):
    """Bots state rules of known worth, users support them, a reviewer follows a policy.

    The policy: review once ``supporter_writers >= min_writers`` and/or
    ``supporter_count >= min_users`` (``combine``; 0 = off), ``review_delay`` sessions
    later, right with probability ``reviewer_accuracy``.
    """

    name: ClassVar[str] = "learnings"

    agents: int = 2
    rules_per_agent: int = 10
    helpful_share: float = 0.4
    harmful_share: float = 0.3
    helpful_rate: float = 0.15
    neutral_rate: float = 0.08
    harmful_rate: float = 0.05
    users: int = 50
    sessions: int = 200
    multi_user_share: float = 0.0
    multi_user_writers: int = 1
    pushed_rules: int = 3
    push_rate: float = 1.0
    fabricated_ids: int = 50
    erasure_share: float = 0.1
    min_writers: int = 3
    min_users: int = 0
    combine: str = "and"
    reviewer_accuracy: float = 0.9
    review_delay: int = 10
    replications: int = 100
    chunk_size: ClassVar[int] = 1
    min_replications: ClassVar[int] = 2
    units_per_second: ClassVar[float] = 500.0  # sessions (set low: the estimate is a bound)

    def __post_init__(self) -> None:
        check_int("agents", self.agents, minimum=1, maximum=50)
        check_int("rules_per_agent", self.rules_per_agent, minimum=1, maximum=200)
        check_probability("helpful_share", self.helpful_share)
        check_probability("harmful_share", self.harmful_share)
        if self.helpful_share + self.harmful_share > 1 + 1e-12:
            raise ParameterError(
                "harmful_share",
                self.harmful_share,
                f"expected helpful_share + harmful_share <= 1 (helpful_share={self.helpful_share})",
            )
        for name in (
            "helpful_rate",
            "neutral_rate",
            "harmful_rate",
            "multi_user_share",
            "push_rate",
            "erasure_share",
            "reviewer_accuracy",
        ):
            check_probability(name, getattr(self, name))
        check_int("users", self.users, minimum=1)
        check_int("sessions", self.sessions, minimum=1, maximum=100_000)
        check_int("multi_user_writers", self.multi_user_writers, minimum=1)
        check_int("pushed_rules", self.pushed_rules, minimum=0)
        check_int("fabricated_ids", self.fabricated_ids, minimum=1)
        check_int("min_writers", self.min_writers, minimum=0)
        check_int("min_users", self.min_users, minimum=0)
        check_choice("combine", self.combine, COMBINE)
        ReviewPolicy(self.min_writers, self.min_users, self.combine)  # one rule, one check
        check_int("review_delay", self.review_delay, minimum=0)
        self.check_replications()

    @property
    def exact_regime(self) -> bool:
        return True

    @property
    def honest_rate_factor(self) -> float:
        """A rule's per-session support rate is ``rate x (1 - share) / agents``."""
        return (1.0 - self.multi_user_share) / self.agents

    def simulate(self, seed: int) -> list[LearningsWorld]:
        """Run every replication and return the worlds (queue, truth and logs)."""
        worlds = []
        for chunk in self.chunks(seed):
            world = LearningsWorld(self, chunk.rng)
            for t in range(self.sessions):
                world.session(t)
            worlds.append(world)
        return worlds

    def work(self) -> Work:
        """Sessions of the queue; a world (its queue and users) holds about 1 MB, and each
        replication keeps about 300 B per session until the end."""
        units = self.replications * self.sessions
        world = 1_000_000 + 500 * self.sessions
        kept = 300 * self.sessions  # each replication's session log and tables
        return self.estimate(units, kept, world, ("replications", "sessions"))

    def run(self, seed: int) -> ScenarioResult:
        worlds = self.simulate(seed)
        result = self.new_result()
        self._promotion_metrics(result, worlds)
        self._reach_metrics(result, worlds)
        self._writer_metrics(result, worlds)
        for name in ("erased_deleted", "erased_blanked", "reviews", "reviews_lapsed"):
            result.add_mean(name, np.array([getattr(w, name) for w in worlds], dtype=float))
        result.tables["rules"] = rules_table(worlds)
        return result

    def _promotion_metrics(self, result: ScenarioResult, worlds: list[LearningsWorld]) -> None:
        T = self.sessions
        per = {
            k: []
            for k in (
                "promoted",
                "good",
                "helpful",
                "harmful",
                "bad",
                "neutral",
                "mid",
                "t_good",
                "wait",
                "served",
                "waits",
            )
        }
        for w in worlds:
            promoted = [r for r in w.rules if r.promoted_at is not None]
            good = [r for r in promoted if r.kind == "helpful"]
            per["promoted"].append(len(promoted))
            per["good"].append(len(good))
            per["helpful"].append(sum(r.kind == "helpful" for r in w.rules))
            per["harmful"].append(sum(r.kind == "harmful" for r in w.rules))
            per["bad"].append(sum(r.kind == "harmful" for r in promoted))
            per["neutral"].append(sum(r.kind == "neutral" for r in w.rules))
            per["mid"].append(sum(r.kind == "neutral" for r in promoted))
            per["t_good"].append(sum(r.promoted_at + 1 for r in good))
            per["wait"].append(
                sum(
                    T if r.promoted_at is None else r.promoted_at + 1
                    for r in w.rules
                    if r.kind == "helpful"
                )
            )
            per["served"].append(sum(w.served_sessions(r) for r in promoted if r.kind == "harmful"))
            per["waits"].append([r.promoted_at + 1 for r in good])
        result.add_ratio("precision", per["good"], per["promoted"])
        result.add_ratio("recall", per["good"], per["helpful"])
        result.add_ratio("harmful_promoted_rate", per["bad"], per["harmful"])
        result.add_ratio("neutral_promoted_rate", per["mid"], per["neutral"])
        result.add_ratio("sessions_to_promotion", per["t_good"], per["good"])
        result.add_ratio("helpful_wait", per["wait"], per["helpful"])
        unpromoted = np.subtract(per["helpful"], per["good"])
        result.add_ratio("helpful_unpromoted", unpromoted, per["helpful"])
        median, low, high = median_wait(per["waits"], per["helpful"], T)
        result.metrics["helpful_wait_median"] = median
        result.metrics["helpful_wait_median_low"] = low
        result.metrics["helpful_wait_median_high"] = high
        result.add_mean("harmful_served", np.array(per["bad"], dtype=float))
        result.add_mean("harmful_served_sessions", np.array(per["served"], dtype=float))
        result.add_mean("promoted", np.array(per["promoted"], dtype=float))

    def _reach_metrics(self, result: ScenarioResult, worlds: list[LearningsWorld]) -> None:
        rows = []
        for label, k, attr in (
            ("writers", self.min_writers, "reach_writers"),
            ("users", self.min_users, "reach_users"),
        ):
            if not k:
                continue
            rates = (self.helpful_rate, self.neutral_rate, self.harmful_rate)
            for kind, rate in zip(KINDS, rates, strict=True):
                hits, total = [], []
                for w in worlds:
                    mine = [r for r in w.rules if r.kind == kind and not r.pushed_by]
                    hits.append(sum(getattr(r, attr) is not None for r in mine))
                    total.append(len(mine))
                n = sum(total)
                if n == 0:
                    continue
                name = f"reach_{label}_{kind}"
                result.add_ratio(name, hits, total)
                exact = reach_probability(
                    rate * self.honest_rate_factor, k, self.sessions, self.users
                )
                if n * exact * (1.0 - exact) >= MIN_VARIANCE_UNITS:
                    result.metrics[f"{name}_exact"] = exact
                rows.append(
                    {
                        "count": label,
                        "threshold": k,
                        "kind": kind,
                        "rules": n,
                        "simulated": result.metrics[name],
                        "simulated_se": result.metrics[f"{name}_se"],
                        "exact": exact,
                    }
                )
        result.tables["reach"] = pd.DataFrame(rows)

    def _writer_metrics(self, result: ScenarioResult, worlds: list[LearningsWorld]) -> None:
        if self.multi_user_share == 0 or self.pushed_rules == 0:
            return
        counts, writers, ids, pairs, bad, pushed_bad = [], [], [], [], [], []
        for w in worlds:
            pushed = [r for r in w.rules if r.pushed_by]
            final = [w.final_counts(r) for r in pushed]
            counts.append(sum(c for c, _ in final))
            writers.append(sum(x for _, x in final))
            sent = [len(r.fabricated.get(v, ())) for r in pushed for v in r.pushed_by]
            ids.append(sum(sent))
            pairs.append(len(sent))
            pushed_bad.append(sum(r.kind != "helpful" for r in pushed))
            bad.append(sum(r.kind != "helpful" and r.promoted_at is not None for r in pushed))
        result.add_ratio("pushed_count_per_writer", counts, writers)
        # one writer's pushed rules share its sessions: a cluster per replication
        result.add_ratio("fabricated_ids_per_writer", ids, pairs)
        q = self.multi_user_share * self.push_rate / self.multi_user_writers
        result.metrics["fabricated_ids_per_writer_exact"] = expected_distinct_ids(
            q, self.fabricated_ids, self.sessions
        )
        result.add_ratio("pushed_promoted_rate", bad, pushed_bad)


def median_wait(waits: list[list[int]], totals: list[int], horizon: int) -> tuple[int, ...]:
    """Kaplan-Meier median of the wait to promotion and its 95 % interval; ``horizon + 1``
    stands for "not within the horizon".

    A helpful rule not promoted by the horizon (or rejected) is censored there, so the
    estimator is the share promoted by session t, ``F(t) = sum_i x_i(t) / sum_i n_i``
    over replications i (a ratio estimator, its SE by linearization over replications:
    ``simulators.result.ratio_and_se``). Median: the first t with ``F(t) >= 1/2``;
    interval: the t with ``|F(t) - 1/2| <= 1.96 SE(F(t))`` (test inversion, Brookmeyer
    and Crowley 1982).
    """
    y = np.asarray(totals, dtype=float)
    hits = np.zeros((len(waits), horizon + 1))
    for i, w in enumerate(waits):
        hits[i] = np.bincount(np.asarray(w, dtype=int), minlength=horizon + 1)[: horizon + 1]
    x = np.cumsum(hits, axis=1)[:, 1:]  # promoted by session t = 1..horizon
    n, total = len(y), float(y.sum())
    if total <= 0 or n < 2:
        return horizon + 1, horizon + 1, horizon + 1
    f = x.sum(axis=0) / total
    resid = x - f[None, :] * y[:, None]
    se = np.sqrt(n / (n - 1) * (resid**2).sum(axis=0)) / total
    t = np.arange(1, horizon + 1)
    reached = t[f >= 0.5]
    near = t[np.abs(f - 0.5) <= 1.96 * se]
    median = int(reached[0]) if reached.size else horizon + 1
    low = int(near[0]) if near.size else median
    last = int(near[-1]) if near.size else median
    high = horizon + 1 if f[-1] - 1.96 * se[-1] < 0.5 else last  # beyond the horizon?
    return median, min(low, median), max(high, median)


def rules_table(worlds: list[LearningsWorld]) -> pd.DataFrame:
    """One row per rule and replication: truth, fate and the queue's counts at the end."""
    rows = []
    for i, w in enumerate(worlds):
        for r in w.rules:
            count, writers = w.final_counts(r)
            rows.append(
                {
                    "replication": i,
                    "rule": r.rule,
                    "agent": r.agent,
                    "kind": r.kind,
                    "rate": r.rate,
                    "pushed": bool(r.pushed_by),
                    "honest_supporters": len(r.honest_supporters),
                    "reach_writers_session": r.reach_writers,
                    "reach_users_session": r.reach_users,
                    "promoted_session": r.promoted_at,
                    "rejected_session": r.rejected_at,
                    "supporter_count": count,
                    "supporter_writers": writers,
                    "served_sessions": w.served_sessions(r),
                }
            )
    return pd.DataFrame(rows)


__all__ = ["LearningsScenario"]
