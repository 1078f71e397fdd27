"""ConfidenceScenario: the flat design with a library of procedures per user.

Each replication is one user with a base success rate and a library of ``procedures``
whose true effects are drawn by the ``UserPopulation``. In every session:

1. the prompt holds the procedures the engine's ``shown_mask`` selects (threshold,
   limit); with probability ``withhold_rate`` the session is withheld
   (``pack.withhold_top``, the flat design's control arm): ``withhold="top"`` leaves out
   the highest-confidence procedure, ``"all"`` the whole prompt (a no-procedure session);
   with probability ``explore_rate`` one procedure that is not shown (below the threshold
   or past the limit, chosen uniformly) is shown as well;
2. the session succeeds with probability ``clip(base + crowded sum of shown effects, 0,
   1)`` (``UserPopulation.crowded_effect``: interference between shown procedures);
3. the ``Feedback`` channels turn the outcome into a signal (flipped, missing, delayed);
4. when a signal arrives, every procedure shown in the session it reports on is updated
   by the engine's ``rule.update`` (the seed's credit assignment). A rule that compares
   against no procedure (``needs_baseline``) reads the user's no-procedure success rate
   as estimated from the signals of the sessions in which nothing was shown
   (``rule.baseline_estimate``); one that reads counts gets each procedure's.

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
from procmem_core.explore import withhold_top
from procmem_core.flat import (
    DEFAULT_LIMIT,
    DEFAULT_RULE,
    DEFAULT_THRESHOLD,
    FlatRule,
    flat_fate,
    passes_threshold,
    shown_mask,
    snap,
)
from procmem_core.flat.reshow import reshow_fate
from simulators.feedback import ArrivalLine, Feedback
from simulators.result import RatioTally, ScenarioResult
from simulators.scenarios.base import Scenario, Work
from simulators.users import HARMFUL, HELPFUL, KIND_NAMES, NEUTRAL, UserPopulation, effect_kind

_PER_USER = (
    "successes",
    "shown",
    "helpful_shown",
    "helpful",
    "harmful",
    "helpful_kept",
    "harmful_gone",
    "harmful_gone_sessions",
)


def _row_sum(x: np.ndarray) -> np.ndarray:
    """Sum over the last axis as floats, by ``einsum`` (numpy's axis reduction is slow on a
    short last axis, and a BLAS product stalls on its threads when the cores are busy)."""
    if x.dtype == np.bool_:  # count in uint8: at most 255 procedures per row
        return np.einsum("ij->i", x.view(np.uint8)).astype(float)
    return np.einsum("ij->i", x)


WITHHOLD = ("top", "all")


class _Evidence:
    """What the rule reads besides the outcome, kept only when it reads it: each user's
    no-procedure sessions (signals of sessions with nothing shown) and each procedure's
    successes and failures in the sessions it was updated for."""

    def __init__(self, rule: FlatRule, n: int, k: int) -> None:
        self.rule = rule
        self.base = (np.zeros(n), np.zeros(n)) if rule.needs_baseline else None
        self.counts = (np.zeros((n, k)), np.zeros((n, k))) if rule.needs_counts else None

    def baseline(self) -> np.ndarray | None:
        return None if self.base is None else self.rule.baseline_estimate(*self.base)

    def start(self, n: int, k: int) -> np.ndarray:
        b = self.baseline()
        if b is None:
            return np.full((n, k), snap(self.rule.initial))
        return np.repeat(np.asarray(self.rule.start(b))[:, None], k, axis=1)

    def record(self, shown, signal, observed, update) -> dict:
        """Count the arrived signal; the keyword arguments of ``rule.update``."""
        out = {}
        if self.base is not None:
            empty = _row_sum(shown) == 0
            if observed is not None:
                empty &= observed
            self.base[0][:] += empty & signal
            self.base[1][:] += empty
            out["baseline"] = self.baseline()[:, None]
        if self.counts is not None:
            self.counts[0][:] += update & signal[:, None]
            self.counts[1][:] += update & ~signal[:, None]
            out["successes"], out["failures"] = self.counts
        return out


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
    """

    name: ClassVar[str] = "confidence"
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
    explore_rate: float = 0.0
    withhold_rate: float = 0.0
    withhold: str = "top"
    replications: int = 2_000
    chunk_size: int = 8_192
    units_per_second: ClassVar[float] = 5e6  # procedure-sessions

    def __post_init__(self) -> None:
        check_instance("population", self.population, UserPopulation)
        check_instance("feedback", self.feedback, Feedback)
        check_instance("rule", self.rule, FlatRule)
        check_int("procedures", self.procedures, minimum=1, maximum=255)
        check_int("sessions", self.sessions, minimum=1)
        check_probability("threshold", self.threshold)
        check_int("limit", self.limit, minimum=1)
        check_probability("explore_rate", self.explore_rate)
        check_probability("withhold_rate", self.withhold_rate)
        check_choice("withhold", self.withhold, WITHHOLD)
        self.check_replications()

    @property
    def exact_regime(self) -> bool:
        """One procedure, finitely many base rates, noiseless feedback, no withholding,
        and no exploration for a rule that reads a baseline (module docstring)."""
        return (
            self.procedures == 1
            and bool(self.population.base_points)
            and self.feedback.noiseless
            and (self.explore_rate == 0 or not self.rule.needs_baseline)
            and self.withhold_rate == 0
        )

    def _explore(self, rng: np.random.Generator, shown: np.ndarray) -> np.ndarray:
        """Add one uniformly chosen not-shown procedure to the prompt, w.p. explore_rate."""
        n, k = shown.shape
        go = rng.random(n) < self.explore_rate
        key = np.where(shown, -1.0, rng.random((n, k)))
        pick = np.argmax(key, axis=1)
        go &= key[np.arange(n), pick] >= 0
        extra = np.zeros_like(shown)
        extra[np.arange(n)[go], pick[go]] = True
        return shown | extra

    def _withhold(self, rng: np.random.Generator, conf: np.ndarray, shown: np.ndarray):
        """Withhold the highest-confidence shown procedure (the engine's ``withhold_top``,
        as ``pack.pack_flat`` does); ties go to the first, as in ``prompt_order``."""
        n = shown.shape[0]
        top = np.argmax(np.where(shown, conf, -np.inf), axis=1)
        hit = withhold_top(rng.random(n), self.withhold_rate) & shown.any(axis=1)
        shown = shown.copy()
        if self.withhold == "all":
            shown[hit] = False
        else:
            shown[np.arange(n)[hit], top[hit]] = False
        return shown

    def _shown(self, conf: np.ndarray) -> np.ndarray:
        """The engine's ``shown_mask``, sorted only where the limit binds.

        Where at most ``limit`` procedures pass the threshold, ``shown_mask`` returns
        exactly the passing ones, so only the other rows need the ranking.
        """
        active = np.asarray(passes_threshold(conf, self.threshold))
        if self.limit >= conf.shape[1]:
            return active
        binding = _row_sum(active) > self.limit
        if binding.any():
            active[binding] = shown_mask(conf[binding], self.threshold, self.limit)
        return active

    def _simulate_chunk(self, rng: np.random.Generator, n: int, traj: dict) -> dict:
        k, pop = self.procedures, self.population
        base = pop.sample_base(rng, n)
        effects = pop.sample_effects(rng, (n, k))
        kind = effect_kind(effects)
        helpful = kind == HELPFUL
        harmful = kind == HARMFUL
        per_kind = {KIND_NAMES[c]: _row_sum(kind == c) for c in (HELPFUL, NEUTRAL, HARMFUL)}
        kind_weight = helpful + (k + 1.0) * harmful
        evidence = _Evidence(self.rule, n, k)
        conf = evidence.start(n, k)
        first_out = np.zeros((n, k), dtype=np.int64)  # 0 = not excluded yet
        line = ArrivalLine(self.feedback.delay)
        acc = {name: np.zeros(n) for name in _PER_USER}
        for t in range(self.sessions):
            shown = self._shown(conf)
            if self.withhold_rate > 0:
                shown = self._withhold(rng, conf, shown)
            if self.explore_rate > 0:
                shown = self._explore(rng, shown)
            n_shown = _row_sum(shown)
            p = pop.success_probability(
                base, pop.crowded_effect(_row_sum(effects * shown), n_shown)
            )
            outcome = rng.random(n) < p
            sig = self.feedback.transmit(rng, outcome, base)
            due = line.push((shown, sig.label, sig.observed))
            if due is not None:
                d_shown, d_signal, d_observed = due
                update = d_shown if d_observed is None else d_shown & d_observed[:, None]
                extra = evidence.record(d_shown, d_signal, d_observed, update)
                conf = np.where(update, self.rule.update(conf, d_signal[:, None], **extra), conf)
            active = np.asarray(passes_threshold(conf, self.threshold))
            newly_out = ~active
            newly_out &= first_out == 0
            first_out[newly_out] = t + 1
            helpful_shown = _row_sum(shown & helpful)
            acc["successes"] += outcome
            acc["shown"] += n_shown
            acc["helpful_shown"] += helpful_shown
            traj["success"].add(t, outcome, 1.0)
            traj["shown"].add(t, n_shown, 1.0)
            traj["precision"].add(t, helpful_shown, n_shown)
            # helpful and harmful active counts from one product: weights 1 and K + 1
            coded = _row_sum(active * kind_weight)
            active_harmful = np.floor_divide(coded, k + 1)
            active_helpful = coded - (k + 1) * active_harmful
            active_neutral = _row_sum(active) - active_helpful - active_harmful
            for label, x in (
                ("helpful", active_helpful),
                ("neutral", active_neutral),
                ("harmful", active_harmful),
            ):
                traj[f"{label}_active"].add(t, x, per_kind[label])
        active = passes_threshold(conf, self.threshold)
        acc["helpful"] = per_kind["helpful"]
        acc["harmful"] = per_kind["harmful"]
        acc["helpful_kept"] = _row_sum(active & helpful)
        gone = harmful & (first_out > 0)
        acc["harmful_gone"] = _row_sum(gone)
        acc["harmful_gone_sessions"] = _row_sum(np.where(gone, first_out, 0))
        acc["rate_none"] = base
        acc["rate_oracle"] = self._oracle(base, acc["helpful"])
        if evidence.base is not None:
            acc["baseline_error"] = evidence.baseline() - base
            acc["baseline_sessions"] = evidence.base[1]
        for i, code in enumerate((HELPFUL, NEUTRAL, HARMFUL)):
            sel = kind == code
            count = per_kind[KIND_NAMES[code]]
            traj["kept"].add(i, _row_sum(sel & active), count)
            traj["final_confidence"].add(i, _row_sum(np.where(sel, conf, 0.0)), count)
        return acc

    def work(self) -> Work:
        """Procedure-sessions; ~12 sums kept per replication, ~10 arrays per procedure."""
        units = self.replications * self.procedures * self.sessions
        return self.estimate(
            units, 200, 80 * self.procedures, ("replications", "procedures", "sessions")
        )

    def run(self, seed: int) -> ScenarioResult:
        s = self.sessions
        names = ("success", "shown", "precision", *(f"{v}_active" for v in KIND_NAMES.values()))
        traj: dict = {name: RatioTally(s) for name in names}
        traj["kept"] = RatioTally(3)
        traj["final_confidence"] = RatioTally(3)
        parts = [self._simulate_chunk(c.rng, c.size, traj) for c in self.chunks(seed)]
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
            result.metrics.update(self._exact())
            self._boundary_se(result, acc)
        table = {"session": np.arange(1, s + 1)}
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
        return result

    @staticmethod
    def _boundary_se(result: ScenarioResult, acc: dict) -> None:
        """A simulated share at 0 or 1 has a plug-in SE of 0; beside an exact value, report
        the binomial SE at that value, ``sqrt(e (1 - e) / n)`` (n procedures of the kind:
        one per user here, so independent), so the two can be compared."""
        for name, count in (("helpful_retained", "helpful"), ("harmful_excluded", "harmful")):
            exact = result.metrics.get(f"{name}_exact")
            n = float(acc[count].sum())
            if exact is not None and result.metrics[f"{name}_se"] == 0 and n > 0:
                result.metrics[f"{name}_se"] = float(np.sqrt(exact * (1 - exact) / n))

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

    def _exact(self) -> dict[str, float]:
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
        if self.explore_rate > 0:
            r = reshow_fate(p, self.explore_rate, self.sessions, self.rule, self.threshold)
            return r.shown_by_session, r.in_prompt_after, fate.p_excluded
        # P(shown in session k) = 1 - P(excluded within k - 1 sessions)
        shown = 1.0 - np.concatenate(([0.0], fate.excluded_by_session[:-1]))
        return shown, 1.0 - fate.p_excluded, fate.p_excluded
