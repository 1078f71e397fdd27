"""LoopScenario: the whole graph engine, closed loop, against a world with known truth.

See ``loop_world.py`` for what happens in a session. This module holds the parameters,
runs the replications (one ``LoopWorld`` each, seeded by its own spawned child) and
turns their logs into metrics and tables. It drives the object engine
(``ProcedureStore``, ``ContextPacker``), so it is slower than the vectorized scenarios;
keep ``sessions x replications`` in the thousands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd

from procmem_core.errors import ParameterError, check_instance, check_int, check_probability
from procmem_core.gates import CostGate, Gate, SPRTGate
from simulators.feedback import Feedback
from simulators.result import ScenarioResult
from simulators.scenarios.base import Scenario, Work
from simulators.scenarios.gate import check_veto
from simulators.scenarios.loop_world import KINDS, TASKS, LoopWorld


@dataclass(frozen=True)
class LoopScenario(Scenario):
    """Tasks arrive, the packer picks procedures, runs are recorded, evolve and gates act.

    Metrics (``_se`` over replications, the independent unit): ``success_rate``,
    ``success_rate_early`` / ``success_rate_late`` (first / last quarter of sessions),
    ``oracle_success_rate`` (always the best procedure of the task, or none if none beats
    ``base_rate``), ``regret`` (expected successes lost per session against it),
    ``withheld_rate``, ``off_task_rate`` (the top match was another task's procedure);
    ``revisions_proposed``, ``revisions_decided``, ``correct_verdict_rate``,
    ``wrong_revert_rate`` (non-harmful revisions reverted), ``missed_harmful_rate``
    (harmful revisions accepted), ``stranded_revision_rate`` (revisions still pending at
    the end on a quarantined procedure: never shown again, so the gate never decides),
    ``quarantines`` and ``templates_promoted`` (events per replication). Tables
    ``gate_decisions`` (every record the store made, with the true effect), ``ab_arms``
    (per procedure: shown vs withheld sessions) and ``trajectory`` (per window of
    sessions).
    """

    name: ClassVar[str] = "loop"
    inputs: ClassVar[dict[str, str]] = {
        "gate": "gate",
        "cost_gate": "cost_gate",
        "feedback": "feedback",
        "explore_rate": "explore.explore_rate",
    }

    tasks: int = 3
    procedures_per_task: int = 2
    steps: int = 3
    p_low: float = 0.35
    p_high: float = 0.9
    base_rate: float = 0.3
    explore_rate: float = 0.1
    sessions: int = 400
    evolve_every: int = 5
    revise_every: int = 40
    revision_mix: tuple[float, float, float] = (0.4, 0.3, 0.3)
    harmful_drop: float = 0.25
    helpful_gain: float = 0.1
    min_runs: int = 3
    strike_limit: int = 3
    gate: Gate = field(default_factory=SPRTGate)
    cost_gate: Gate = field(default_factory=CostGate)
    feedback: Feedback = field(default_factory=Feedback)
    window: int = 50
    replications: int = 2
    chunk_size: ClassVar[int] = 1
    min_replications: ClassVar[int] = 1
    units_per_second: ClassVar[float] = 200.0  # sessions of the object engine

    def __post_init__(self) -> None:
        check_int("tasks", self.tasks, minimum=1, maximum=len(TASKS))
        check_int("procedures_per_task", self.procedures_per_task, minimum=1, maximum=8)
        check_int("steps", self.steps, minimum=2, maximum=64)
        check_probability("p_low", self.p_low, open_low=True)
        check_probability("p_high", self.p_high, open_low=True)
        if self.p_low > self.p_high:
            raise ParameterError("p_low", self.p_low, f"expected p_low <= p_high ({self.p_high})")
        check_probability("base_rate", self.base_rate)
        check_probability("explore_rate", self.explore_rate)
        check_int("sessions", self.sessions, minimum=4)
        check_int("evolve_every", self.evolve_every, minimum=1)
        check_int("revise_every", self.revise_every, minimum=1)
        mix = self.revision_mix
        allowed = "expected 3 shares (harmful, neutral, helpful) summing to 1"
        if isinstance(mix, str) or not hasattr(mix, "__iter__"):
            raise ParameterError("revision_mix", mix, allowed)
        shares = [check_probability("revision_mix", m) for m in mix]
        if len(shares) != 3 or abs(sum(shares) - 1.0) > 1e-9:
            raise ParameterError("revision_mix", mix, allowed)
        object.__setattr__(self, "revision_mix", tuple(shares))
        check_probability("harmful_drop", self.harmful_drop)
        check_probability("helpful_gain", self.helpful_gain)
        check_int("min_runs", self.min_runs, minimum=1)
        check_int("strike_limit", self.strike_limit, minimum=0)
        check_instance("gate", self.gate, Gate)
        if self.gate.veto_only:
            raise ParameterError("gate", self.gate.name, "a gate that can accept (not a veto)")
        check_veto("cost_gate", self.cost_gate)
        check_instance("feedback", self.feedback, Feedback)
        check_int("window", self.window, minimum=1)
        self.check_replications()

    def simulate(self, seed: int) -> list[LoopWorld]:
        """Run every replication and return the worlds (store, truth and logs)."""
        worlds = []
        for chunk in self.chunks(seed):
            world = LoopWorld(self, chunk.rng)
            for t in range(self.sessions):
                world.session(t)
            worlds.append(world)
        return worlds

    def work(self) -> Work:
        """Sessions of the whole engine; each world keeps its store, ~2 kB a session."""
        units = self.replications * self.sessions
        return self.estimate(units, 2000 * self.sessions, 0, ("replications", "sessions"))

    def run(self, seed: int) -> ScenarioResult:
        worlds = self.simulate(seed)
        result = self.new_result()
        self._session_metrics(result, worlds)
        self._revision_metrics(result, worlds)
        result.add_mean("quarantines", [_count(w.events, "quarantined") for w in worlds])
        result.add_mean("templates_promoted", [_count(w.events, "template") for w in worlds])
        result.tables["gate_decisions"] = gate_table(worlds)
        result.tables["ab_arms"] = arms_table(worlds)
        result.tables["trajectory"] = self._trajectory(worlds)
        return result

    def _session_metrics(self, result: ScenarioResult, worlds: list[LoopWorld]) -> None:
        s = self.sessions
        q = max(1, s // 4)
        per = {k: [] for k in ("ok", "early", "late", "oracle", "regret", "withheld", "off")}
        for w in worlds:
            ok = np.array([x.ok for x in w.sessions], dtype=float)
            p = np.array([x.p_true for x in w.sessions])
            best = np.array([x.p_oracle for x in w.sessions])
            per["ok"].append(ok.sum())
            per["early"].append(ok[:q].sum())
            per["late"].append(ok[-q:].sum())
            per["oracle"].append(best.sum())
            per["regret"].append((best - p).sum())
            per["withheld"].append(sum(x.withheld is not None for x in w.sessions))
            per["off"].append(sum(not x.followed and x.withheld is None for x in w.sessions))
        n = np.full(len(worlds), float(s))
        nq = np.full(len(worlds), float(q))
        result.add_ratio("success_rate", per["ok"], n)
        result.add_ratio("success_rate_early", per["early"], nq)
        result.add_ratio("success_rate_late", per["late"], nq)
        result.add_ratio("oracle_success_rate", per["oracle"], n)
        result.add_ratio("regret", per["regret"], n)
        result.add_ratio("withheld_rate", per["withheld"], n)
        result.add_ratio("off_task_rate", per["off"], n)

    def _revision_metrics(self, result: ScenarioResult, worlds: list[LoopWorld]) -> None:
        proposed, decided, correct, benign, wrong_rev, harmful, missed, stranded = (
            [] for _ in range(8)
        )
        for w in worlds:
            done = [r for r in w.revisions if r.outcome != "pending"]
            stranded.append(
                sum(
                    r.outcome == "pending" and w.store.get(r.key).status == "quarantined"
                    for r in w.revisions
                )
            )
            proposed.append(len(w.revisions))
            decided.append(len(done))
            correct.append(sum(_VERDICT_OF[r.outcome] == r.correct_verdict for r in done))
            ok_kind = [r for r in done if r.kind != "harmful"]
            bad_kind = [r for r in done if r.kind == "harmful"]
            benign.append(len(ok_kind))
            wrong_rev.append(sum(r.outcome == "reverted" for r in ok_kind))
            harmful.append(len(bad_kind))
            missed.append(sum(r.outcome == "accepted" for r in bad_kind))
        result.add_mean("revisions_proposed", np.array(proposed, dtype=float))
        result.add_mean("revisions_decided", np.array(decided, dtype=float))
        result.add_ratio("correct_verdict_rate", correct, decided)
        result.add_ratio("wrong_revert_rate", wrong_rev, benign)
        result.add_ratio("missed_harmful_rate", missed, harmful)
        result.add_ratio("stranded_revision_rate", stranded, proposed)

    def _trajectory(self, worlds: list[LoopWorld]) -> pd.DataFrame:
        rows = []
        for i, w in enumerate(worlds):
            for start in range(0, self.sessions, self.window):
                block = w.sessions[start : start + self.window]
                stop = start + len(block)
                statuses = [st for t, st in w.status_by_window if t < stop]
                last = statuses[-1] if statuses else {}
                rows.append(
                    {
                        "replication": i,
                        "session_start": start,
                        "sessions": len(block),
                        "success_rate": float(np.mean([x.ok for x in block])),
                        "expected_success_rate": float(np.mean([x.p_true for x in block])),
                        "oracle_success_rate": float(np.mean([x.p_oracle for x in block])),
                        "regret": float(np.mean([x.p_oracle - x.p_true for x in block])),
                        "quarantined": sum(v == "quarantined" for v in last.values()),
                        "templates": sum(v == "template" for v in last.values()),
                    }
                )
        return pd.DataFrame(rows)


_VERDICT_OF = {"accepted": "accept", "reverted": "revert"}


def _count(events: list, status: str) -> float:
    return float(sum(1 for _, _, s in events if s == status))


def gate_table(worlds: list[LoopWorld]) -> pd.DataFrame:
    """Every gate record each store made, with the revision's known true effect."""
    rows = []
    for i, w in enumerate(worlds):
        truth = {(r.key, r.revision): r for r in w.revisions}
        for d in w.store.gate_decisions():
            r = truth.get((d.key, d.revision))
            rows.append(
                {
                    "replication": i,
                    "key": d.key,
                    "prior_revision": d.prior_revision,
                    "revision": d.revision,
                    "gate": d.gate,
                    "verdict": d.verdict,
                    "runs_used": d.runs_used,
                    "statistic": d.statistic,
                    "reason": d.reason,
                    "outcome": d.outcome,
                    "kind": r.kind if r else None,
                    "p_prior": r.p_prior if r else np.nan,
                    "p_new": r.p_new if r else np.nan,
                    "true_drop": r.p_prior - r.p_new if r else np.nan,
                    "correct_verdict": r.correct_verdict if r else None,
                }
            )
    return pd.DataFrame(rows, columns=_GATE_COLUMNS)


_GATE_COLUMNS = [
    "replication", "key", "prior_revision", "revision", "gate", "verdict", "runs_used",
    "statistic", "reason", "outcome", "kind", "p_prior", "p_new", "true_drop", "correct_verdict",
]  # fmt: skip


def arms_table(worlds: list[LoopWorld]) -> pd.DataFrame:
    """Per replication and procedure: sessions shown (followed) vs withheld, and their rates."""
    rows = []
    for i, w in enumerate(worlds):
        for key in w.task_of:
            for arm in ("shown", "withheld"):
                sel = [
                    x for x in w.sessions if (x.key == key if arm == "shown" else x.withheld == key)
                ]
                n = len(sel)
                k = sum(x.ok for x in sel)
                rows.append(
                    {
                        "replication": i,
                        "key": key,
                        "arm": arm,
                        "sessions": n,
                        "successes": k,
                        "rate": k / n if n else np.nan,
                        "mean_true_rate": float(np.mean([x.p_true for x in sel])) if n else np.nan,
                    }
                )
    return pd.DataFrame(rows)


__all__ = ["KINDS", "LoopScenario"]
