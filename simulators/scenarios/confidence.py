"""ConfidenceScenario: the flat design with a library of procedures per user.

Each replication is one user with a base success rate and a library of ``procedures``
whose true effects are drawn by the ``UserPopulation``. In every session:

1. the prompt holds the procedures the engine's ``shown_mask`` selects (threshold,
   limit); with probability ``withhold_rate`` the session is withheld
   (``pack.withhold_top``, the flat design's control arm): ``withhold="top"`` leaves out
   the highest-confidence procedure, ``"all"`` the whole prompt (a no-procedure session);
   with probability ``reshow_rate`` one procedure that is not shown (below the threshold,
   past the limit, or the one just withheld: the draw follows the withholding; chosen
   uniformly) is shown as well;
2. the session succeeds with probability ``clip(base + crowded sum of shown effects, 0,
   1)`` (``UserPopulation.crowded_effect``: interference between shown procedures);
3. the ``Feedback`` channels turn the outcome into a signal (flipped, missing, delayed);
4. when a signal arrives, every procedure shown in the session it reports on is updated
   by the engine's ``rule.update`` (the seed's credit assignment). A rule that compares
   against no procedure (``needs_baseline``) reads the user's no-procedure success rate
   as estimated from the signals of the sessions in which nothing was shown
   (``rule.baseline_estimate``); one that reads counts gets each procedure's.

The sessions run as one pass each over a chunk's procedures x users array
(``confidence_pass``, ``confidence_library``): a rule whose update reads only the
confidence and the outcome (the seed's) keeps each confidence as its index into the
finite set the rule reaches (``flat.chain.confidence_space``, from ``rule.update``);
the others keep floats and call ``rule.update``. Either way a seed gives the numbers it
gave session by session before the pass was fused (tests/data/confidence_pinned.json).
Throughput on one core (``benchmarks/bench_simulators.py``): the session pass alone about
3e8 procedure-sessions/s for the seed's library, a whole run 1-2e8 (0.3-0.5 of numpy's raw
Bernoulli rate; less on a busy machine above 10,000 replications, where the threaded BLAS
dot in ``result.ratio_and_se`` stalls), about 5e7 with noisy, late feedback and
exploration or with a rule that reads a baseline.

Exact regime: one procedure, identical users (or finitely many base rates), no noise,
no withholding, and no exploration unless the rule reads no baseline. Then each kind of
procedure is ``flat_fate`` at ``p = clip(base + effect)`` (``reshow_fate`` at the explore
rate; a baseline rule uses its prior, since no session is withheld before exclusion),
and the metrics gain ``helpful_retained_exact``, ``harmful_excluded_exact``,
``session_success_rate_exact`` and ``mean_shown_exact``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd

from procmem_core.errors import check_choice, check_instance, check_int, check_probability
from procmem_core.flat import (
    DEFAULT_LIMIT,
    DEFAULT_RULE,
    DEFAULT_THRESHOLD,
    FlatRule,
    flat_fate,
)
from procmem_core.flat.reshow import reshow_fate
from simulators.calibration_blocks import Figure, block_units, calibration_metrics, pick_figures
from simulators.feedback import Feedback
from simulators.replication import Chunk
from simulators.result import RatioTally, ScenarioResult
from simulators.scenarios.base import Scenario, Work
from simulators.scenarios.confidence_pass import SessionPass, row_sum, tally_trajectory
from simulators.users import HARMFUL, HELPFUL, KIND_NAMES, NEUTRAL, UserPopulation

WITHHOLD = ("top", "all")
CALIBRATION_SHARES = ("helpful_retained", "harmful_excluded")
"""The shares a calibration block may log (exact at every horizon in the exact regime)."""


@dataclass(frozen=True)
class ConfidenceScenario(Scenario):
    """Flat confidence dynamics with a library of procedures of known true effect.

    Metrics (each simulated one with ``_se``; the replication, one user, is the cluster):
    ``session_success_rate``, ``prompt_precision`` (share of shown procedure-slots that
    truly help), ``mean_shown``, ``helpful_retained`` (helpful procedures still at or
    above the threshold after the last session), ``harmful_excluded``,
    ``sessions_to_exclude_harmful`` (session of first exclusion, among excluded harmful
    procedures), ``success_rate_no_procedures`` and ``success_rate_oracle`` (expected
    rates without procedures and with only the helpful ones, up to ``limit``), and the
    exact ``break_even`` of the rule. Tables ``trajectory`` (per session) and ``fates``
    (per kind of procedure); their rates carry ``_se`` columns (users as clusters).

    In the exact regime, ``calibration_blocks`` > 0 adds that many ``helpful_retained``
    and ``harmful_excluded`` figures at horizons ``h <= sessions``, each from
    ``calibration_replications`` fresh users of its own (``simulators.calibration_blocks``:
    independent z-scores for the calibration check), as ``cal<i>_<metric>_s<h>``.
    """

    name: ClassVar[str] = "confidence"
    key_metrics: ClassVar[tuple[str, ...]] = (
        "session_success_rate",
        "helpful_retained",
        "harmful_excluded",
    )
    inputs: ClassVar[dict[str, str]] = {
        "population": "users",
        "feedback": "feedback",
        "rule": "rule",
        "threshold": "rule.threshold",
        "limit": "rule.limit",
    }

    population: UserPopulation = field(default_factory=UserPopulation)
    feedback: Feedback = field(default_factory=Feedback)
    rule: FlatRule = DEFAULT_RULE
    procedures: int = 8
    sessions: int = 40
    threshold: float = DEFAULT_THRESHOLD
    limit: int = DEFAULT_LIMIT
    reshow_rate: float = 0.0
    withhold_rate: float = 0.0
    withhold: str = "top"
    replications: int = 2_000
    chunk_size: int = 8_192
    calibration_blocks: int = 0
    calibration_replications: int = 2_000
    units_per_second: ClassVar[float] = 5e6  # procedure-sessions

    def __post_init__(self) -> None:
        check_instance("population", self.population, UserPopulation)
        check_instance("feedback", self.feedback, Feedback)
        check_instance("rule", self.rule, FlatRule)
        check_int("procedures", self.procedures, minimum=1, maximum=255)
        check_int("sessions", self.sessions, minimum=1)
        check_probability("threshold", self.threshold)
        check_int("limit", self.limit, minimum=1)
        check_probability("reshow_rate", self.reshow_rate, open_high=True)
        check_probability("withhold_rate", self.withhold_rate)
        check_choice("withhold", self.withhold, WITHHOLD)
        self.check_replications()
        check_int("calibration_blocks", self.calibration_blocks, minimum=0)
        check_int(
            "calibration_replications", self.calibration_replications, minimum=self.min_replications
        )

    @property
    def exact_regime(self) -> bool:
        """One procedure, finitely many base rates, noiseless feedback, no withholding,
        and no exploration for a rule that reads a baseline (module docstring)."""
        return (
            self.procedures == 1
            and bool(self.population.base_points)
            and self.feedback.noiseless
            and (self.reshow_rate == 0 or not self.rule.needs_baseline)
            and self.withhold_rate == 0
        )

    def _simulate_chunk(self, rng: np.random.Generator, n: int, traj: dict) -> dict:
        """One chunk of ``n`` users: the fused session pass (``confidence_pass``), then
        the per-user sums the metrics read and the trajectory's tallies."""
        sim = SessionPass(self, rng, n)
        sim.run()
        rec, kind = sim.rec, sim.kind
        per_kind = sim.kind_counts()
        tally_trajectory(traj, sim, per_kind)
        kept = {label: rec[label][-1].astype(float) for label in per_kind}  # after the last
        acc = {
            "successes": rec["success"].sum(axis=0, dtype=float),
            "shown": rec["shown"].sum(axis=0, dtype=float),
            "helpful_shown": rec["helpful_shown"].sum(axis=0, dtype=float),
            "helpful": per_kind["helpful"],
            "harmful": per_kind["harmful"],
            "helpful_kept": kept["helpful"],
        }
        acc["harmful_gone"], acc["harmful_gone_sessions"] = sim.harmful_gone(acc["harmful"])
        acc["rate_none"] = sim.base
        acc["rate_oracle"] = self._oracle(sim.base, acc["helpful"])
        evidence = sim.state.evidence_metrics()
        if evidence:
            acc["baseline_error"] = evidence["baseline"] - sim.base
            acc["baseline_sessions"] = evidence["baseline_sessions"]
        conf = np.ascontiguousarray(sim.state.confidences().T)  # users x procedures
        for i, code in enumerate((HELPFUL, NEUTRAL, HARMFUL)):
            label = KIND_NAMES[code]
            traj["kept"].add(i, kept[label], per_kind[label])
            total = row_sum(conf * (kind == code))  # the row sum of 0 or c, as it was
            traj["final_confidence"].add(i, total, per_kind[label])
        return acc

    def work(self) -> Work:
        """Procedure-sessions; ~12 sums kept per replication, ~10 arrays per procedure."""
        units = (self.replications * self.sessions + block_units(self)) * self.procedures
        return self.estimate(
            units, 200, 80 * self.procedures, ("replications", "procedures", "sessions")
        )

    def _new_tallies(self) -> dict[str, RatioTally]:
        names = ("success", "shown", "precision", *(f"{v}_active" for v in KIND_NAMES.values()))
        traj: dict = {name: RatioTally(self.sessions) for name in names}
        traj["kept"] = RatioTally(3)
        traj["final_confidence"] = RatioTally(3)
        return traj

    def _chunk_job(self, chunk: Chunk) -> tuple[dict, dict[str, RatioTally]]:
        """One chunk's per-user sums and its own trajectory tallies (merged in order)."""
        traj = self._new_tallies()
        return self._simulate_chunk(chunk.rng, chunk.size, traj), traj

    def run(self, seed: int) -> ScenarioResult:
        s = self.sessions
        traj = self._new_tallies()
        jobs = self.map_chunks(seed, self._chunk_job)
        for _, tallies in jobs:
            for name, tally in tallies.items():
                traj[name].merge(tally)
        parts = [part for part, _ in jobs]
        acc = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
        reps = self.replications
        result = self.new_result()
        result.add_ratio("session_success_rate", acc["successes"], np.full(reps, float(s)))
        result.add_ratio("prompt_precision", acc["helpful_shown"], acc["shown"])
        result.add_mean("mean_shown", acc["shown"] / s)
        result.add_ratio("helpful_retained", acc["helpful_kept"], acc["helpful"])
        result.add_ratio("harmful_excluded", acc["harmful_gone"], acc["harmful"])
        result.add_ratio(
            "sessions_to_exclude_harmful", acc["harmful_gone_sessions"], acc["harmful_gone"]
        )
        result.add_mean("success_rate_no_procedures", acc["rate_none"])
        result.add_mean("success_rate_oracle", acc["rate_oracle"])
        if "baseline_error" in acc:  # a rule that estimates the no-procedure rate
            result.add_mean("baseline_estimate_error", acc["baseline_error"])
            result.add_mean("baseline_sessions", acc["baseline_sessions"])
        if not np.isnan(self.rule.break_even):  # NaN: it is each task's baseline
            result.metrics["break_even"] = self.rule.break_even
        if self.exact_regime:
            result.metrics.update(self.exact_metrics())
            self._boundary_se(result, acc)
            result.metrics.update(calibration_metrics(self, seed))
        self._add_tables(result, traj)
        return result

    def _add_tables(self, result: ScenarioResult, traj: dict[str, RatioTally]) -> None:
        """The ``trajectory`` table (per session: rates with their SEs) and the ``fates``
        table (per kind: share retained and mean final confidence, with SEs)."""
        table = {"session": np.arange(1, self.sessions + 1)}
        columns = {
            "success": "success_rate",
            "shown": "mean_shown",
            "precision": "prompt_precision",
            **{f"{v}_active": f"{v}_active_share" for v in KIND_NAMES.values()},
        }
        for key, column in columns.items():
            table[column], table[f"{column}_se"] = traj[key].rates()
        result.tables["trajectory"] = pd.DataFrame(table)
        kept, kept_se = traj["kept"].rates()
        final, final_se = traj["final_confidence"].rates()
        result.tables["fates"] = pd.DataFrame(
            {
                "kind": [KIND_NAMES[c] for c in (HELPFUL, NEUTRAL, HARMFUL)],
                "procedures": traj["kept"].sy,
                "retained_rate": kept,
                "retained_rate_se": kept_se,
                "mean_final_confidence": final,
                "mean_final_confidence_se": final_se,
            }
        )

    @staticmethod
    def _boundary_se(result: ScenarioResult, acc: dict) -> None:
        """``ScenarioResult.boundary_se`` over the procedures of each kind (one per user
        here, so independent)."""
        for name, count in (("helpful_retained", "helpful"), ("harmful_excluded", "harmful")):
            result.boundary_se(name, float(acc[count].sum()))

    def _oracle(self, base: np.ndarray, helpful: np.ndarray) -> np.ndarray:
        """Expected success with only helpful procedures shown, as many as pay off (at
        most ``limit``; with interference, the best number ``m`` of them)."""
        pop = self.population
        most = np.minimum(helpful, self.limit)
        if pop.interference == 0:
            return pop.success_probability(base, most * pop.helpful_effect)
        best = pop.success_probability(base, 0.0)
        for m in range(1, int(most.max(initial=0)) + 1):
            rate = pop.success_probability(base, pop.crowded_effect(m * pop.helpful_effect, m))
            best = np.where(m <= most, np.maximum(best, rate), best)
        return best

    def block_figures(self) -> list[Figure]:
        """The calibration blocks' kept and excluded shares (``simulators.calibration_blocks``)."""
        return pick_figures(self, CALIBRATION_SHARES)

    def exact_metrics(self) -> dict[str, float]:
        """Single procedure: mix the exact fate over the base rates and the three kinds of
        effect (``flat_fate``; ``reshow_fate`` when excluded ones are explored)."""
        pop, rule = self.population, self.rule
        baseline = rule.baseline_estimate(0.0, 0.0) if rule.needs_baseline else None
        kinds = [
            (pop.helpful_share, pop.helpful_effect),
            (1.0 - pop.helpful_share - pop.harmful_share, 0.0),
            (pop.harmful_share, -pop.harmful_effect),
        ]
        points = pop.base_points
        success = shown_mean = kept = excluded = 0.0
        for base in points:
            for i, (weight, effect) in enumerate(kinds):
                p = float(pop.success_probability(base, effect))
                shown, in_prompt, gone = self._fate(p, baseline)
                w = weight / len(points)
                success += w * float(np.mean(shown * p + (1.0 - shown) * base))
                shown_mean += w * float(np.mean(shown))
                kept += in_prompt / len(points) if i == 0 else 0.0
                excluded += gone / len(points) if i == 2 else 0.0
        out = {"session_success_rate_exact": success, "mean_shown_exact": shown_mean}
        if pop.helpful_share > 0:
            out["helpful_retained_exact"] = kept
        if pop.harmful_share > 0:
            out["harmful_excluded_exact"] = excluded
        return out

    def _fate(self, p: float, baseline: float | None) -> tuple[np.ndarray, float, float]:
        """``(P(shown in session t), P(at or above the threshold at the end), P(excluded
        at some session))`` of one procedure; the first exclusion does not depend on
        exploration, which only shows it again afterwards."""
        fate = flat_fate(p, self.sessions, self.rule, self.threshold, baseline)
        if self.reshow_rate > 0:
            r = reshow_fate(p, self.reshow_rate, self.sessions, self.rule, self.threshold)
            return r.shown_by_session, r.in_prompt_after, fate.p_excluded
        return fate.shown_by_session, 1.0 - fate.p_excluded, fate.p_excluded
