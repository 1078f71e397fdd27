"""LoopScenario: the whole graph engine, closed loop, against a world with known truth.

See ``loop_world.py`` for what happens in a session. This module holds the parameters,
runs the replications (one ``LoopWorld`` each, seeded by its own spawned child) and
turns their logs into metrics and tables. It drives the object engine
(``ProcedureStore``, ``ContextPacker``), so it is slower than the vectorized scenarios;
keep ``sessions x replications`` in the thousands.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from procmem_core.errors import (
    ParameterError,
    check_instance,
    check_int,
    check_number,
    check_probability,
)
from procmem_core.gates import CostGate, Gate, SPRTGate
from procmem_core.graph.evolve import check_streak_scope
from procmem_core.logged import CHECK_FIELDS
from procmem_core.quarantine import QuarantinePolicy, SeedPolicy
from simulators.calibration_blocks import Figure, block_units, calibration_metrics
from simulators.feedback import Feedback
from simulators.replication import Chunk
from simulators.result import ScenarioResult
from simulators.scenarios.base import Scenario, Work
from simulators.scenarios.gate import check_veto
from simulators.scenarios.loop_lift import add_lift_metrics
from simulators.scenarios.loop_tables import (
    arms_table,
    gate_table,
    ledger_log,
    regret_sources_table,
    session_log,
    trajectory_table,
)
from simulators.scenarios.loop_world import KINDS, TASKS, LoopWorld


@dataclass(frozen=True)
class LoopScenario(Scenario):
    """Tasks arrive, the packer picks procedures, runs are recorded, evolve and gates act.

    Settings beyond the world's: ``strike_limit`` (0 = no quarantine), ``streak_scope``
    (``graph.evolve``), ``concurrent_share`` q (while a revision is pending the pack serves
    the prior graph with probability q: the concurrent-control design; 0 = the seed's),
    ``utility_weight`` (the match term for the smoothed success rate; 0 = the seed's off),
    ``quarantine`` (the exit policy, group ``quarantine``; the seed's: absorbing).

    Metrics (``_se`` over replications, the independent unit): ``success_rate``,
    ``success_rate_early`` / ``success_rate_late`` (first / last quarter of sessions) and
    ``success_change`` (late minus early, per replication); ``oracle_success_rate``
    (always the best graph the task's procedures hold now, current or the prior of a
    pending revision, or none if none beats ``base_rate``); ``regret`` (oracle minus the
    expected success of what was done: the expected successes lost per session, >= 0),
    ``regret_early``, ``regret_late`` and ``regret_change`` (the loop learns when it
    falls); ``regret_fixed`` (and ``_early``, ``_late``, ``_change``): the regret against
    the fixed oracle, the best each task offered at the start, which the engine's own
    revisions cannot raise (negative: the engine beat its start); ``withheld_rate``,
    ``off_task_rate`` (no procedure of the task followed and none withheld: another
    task's on top, or nothing matched), ``prior_served_rate``;
    ``revisions_proposed``, ``revisions_decided``, ``correct_verdict_rate``,
    ``wrong_revert_rate`` (non-harmful revisions reverted), ``missed_harmful_rate``
    (harmful revisions accepted), ``stranded_revision_rate`` (revisions still pending at
    the end on a quarantined procedure: never shown again, so the gate never decides),
    ``quarantines`` and ``templates_promoted`` (events per replication); ``rated_rate``
    and the shown-vs-withheld lift by outcomes and by ratings, with the naive lift's exact
    bias under the feedback channel (``lift``, ``naive_lift``, ``naive_lift_exact``,
    ``lift_exact``, ``naive_lift_bias``: ``loop_lift``; every session is rated as a
    deployment's log would be, ``SessionLog.rated``/``rating``). Tables
    ``gate_decisions`` (every record the store made, with the true effect), ``ab_arms``
    (per procedure: shown vs withheld sessions), ``trajectory`` (per window of sessions)
    and ``regret_sources`` (``loop_tables``); with ``export_log`` N, ``sessions``,
    ``runs`` and ``revisions`` (the first N replications as one session log, its ledger
    and revisions from each store) and ``sessions_truth``.
    """

    name: ClassVar[str] = "loop"
    key_metrics: ClassVar[tuple[str, ...]] = (
        "success_rate",
        "regret",
        "correct_verdict_rate",
        "missed_harmful_rate",
    )
    inputs: ClassVar[dict[str, str]] = {
        "gate": "gate",
        "cost_gate": "cost_gate",
        "quarantine": "quarantine",
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
    streak_scope: str = "revision"
    concurrent_share: float = 0.0
    utility_weight: float = 0.0
    gate: Gate = field(default_factory=SPRTGate)
    cost_gate: Gate = field(default_factory=CostGate)
    quarantine: QuarantinePolicy = field(default_factory=SeedPolicy)
    feedback: Feedback = field(default_factory=Feedback)
    window: int = 50
    replications: int = 2
    export_log: int = 0
    """Export the first this many replications as one session log (docs/logs.md): tables
    ``sessions``, ``sessions_truth`` (``loop_tables.session_log``), ``runs`` and
    ``revisions`` (``loop_tables.ledger_log``); 0: none."""
    calibration_blocks: int = 0
    """Calibration blocks (``simulators.calibration_blocks``): that many more ``lift``
    figures, each from ``calibration_replications`` fresh replications over
    ``sessions // 4`` sessions with their paired exact value, so a search of few trials
    still gives the report's calibration check its pairs; 0: none."""
    calibration_replications: int = 4
    unseeded: ClassVar[tuple[str, ...]] = CHECK_FIELDS  # added after its jobs were logged
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
        check_streak_scope(self.streak_scope)
        check_probability("concurrent_share", self.concurrent_share, open_high=True)
        check_number("utility_weight", self.utility_weight, minimum=0.0)
        check_instance("gate", self.gate, Gate)
        if self.gate.veto_only:
            raise ParameterError("gate", self.gate.name, "a gate that can accept (not a veto)")
        if self.concurrent_share == 0 and "fixed" not in self.gate.designs:
            raise ParameterError(
                "concurrent_share", self.concurrent_share,
                f"> 0 with the {self.gate.name} gate: it decides only on runs of the prior "
                "served beside the revision (concurrent design), which q = 0 never serves",
            )  # fmt: skip
        check_veto("cost_gate", self.cost_gate)
        check_instance("quarantine", self.quarantine, QuarantinePolicy)
        check_instance("feedback", self.feedback, Feedback)
        check_int("window", self.window, minimum=1)
        self.check_replications()
        check_int("export_log", self.export_log, minimum=0)
        check_int("calibration_blocks", self.calibration_blocks, minimum=0)
        check_int("calibration_replications", self.calibration_replications, minimum=2)

    def simulate(self, seed: int) -> list[LoopWorld]:
        """Run every replication and return the worlds (store, truth and logs), in
        replication order; spread over ``CHUNK_WORKERS`` processes when set (each world
        draws from its own spawned child, so the worlds are the same on any number)."""
        with collector_paused():
            return self.map_chunks(seed, self._world)

    def _world(self, chunk: Chunk) -> LoopWorld:
        """One replication: a fresh world driven through every session."""
        world = LoopWorld(self, chunk.rng)
        with collector_paused():
            for t in range(self.sessions):
                world.session(t)
        return world

    def work(self) -> Work:
        """Sessions of the whole engine (the calibration blocks' too); each world keeps its
        store, ~2 kB a session."""
        units = self.replications * self.sessions + block_units(self, self._block_sessions())
        return self.estimate(units, 2000 * self.sessions, 0, ("replications", "sessions"))

    def run(self, seed: int) -> ScenarioResult:
        with collector_paused():  # the worlds, then their metrics and tables
            result = self._result(self.simulate(seed))
            if self.calibration_blocks:
                result.metrics.update(calibration_metrics(self, seed))
            return result

    def _result(self, worlds: list[LoopWorld]) -> ScenarioResult:
        result = self.new_result()
        self._session_metrics(result, worlds)
        self._revision_metrics(result, worlds)
        add_lift_metrics(result, worlds, self.feedback, self.base_rate)
        result.add_mean("quarantines", [_count(w.events, "quarantined") for w in worlds])
        result.add_mean("templates_promoted", [_count(w.events, "template") for w in worlds])
        result.tables["gate_decisions"] = gate_table(worlds)
        result.tables["ab_arms"] = arms_table(worlds)
        result.tables["trajectory"] = trajectory_table(worlds, self.sessions, self.window)
        result.tables["regret_sources"] = regret_sources_table(worlds, max(1, self.sessions // 4))
        if self.export_log:
            exported = worlds[: self.export_log]
            log, truth = session_log(exported, self.explore_rate, self.base_rate)
            result.tables["sessions"], result.tables["sessions_truth"] = log, truth
            result.tables["runs"], result.tables["revisions"] = ledger_log(exported)
        return result

    def _block_sessions(self) -> int:
        return max(4, self.sessions // 4)

    def block_figures(self) -> list[Figure]:
        """The calibration blocks' figures: the lift at a quarter of the horizon, once per
        block (each from replications of its own: ``simulators.calibration_blocks``)."""
        return [Figure("lift", self._block_sessions())] * self.calibration_blocks

    def calibration_run(self, seed: int) -> ScenarioResult:
        """A block's run: the worlds and their lift metrics only (no tables)."""
        result = self.new_result()
        add_lift_metrics(result, self.simulate(seed), self.feedback, self.base_rate)
        return result

    def _session_metrics(self, result: ScenarioResult, worlds: list[LoopWorld]) -> None:
        s = self.sessions
        q = max(1, s // 4)
        names = ("ok", "early", "late", "oracle", "regret", "regret_early", "regret_late",
                 "fixed", "fixed_early", "fixed_late", "withheld", "off", "prior")  # fmt: skip
        per: dict[str, list[float]] = {k: [] for k in names}
        for w in worlds:
            c = w.columns()
            ok, p, best = c.ok.astype(float), c.p_true, c.p_oracle
            per["ok"].append(ok.sum())
            per["early"].append(ok[:q].sum())
            per["late"].append(ok[-q:].sum())
            per["oracle"].append(best.sum())
            per["regret"].append((best - p).sum())
            per["regret_early"].append((best - p)[:q].sum())
            per["regret_late"].append((best - p)[-q:].sum())
            fixed = np.array(w.start_oracle)[c.task] - p
            per["fixed"].append(fixed.sum())
            per["fixed_early"].append(fixed[:q].sum())
            per["fixed_late"].append(fixed[-q:].sum())
            per["withheld"].append(int(c.withheld.sum()))
            per["off"].append(int(c.off.sum()))
            per["prior"].append(int(c.prior_served.sum()))
        n = np.full(len(worlds), float(s))
        nq = np.full(len(worlds), float(q))
        for name, key, den in (
            ("success_rate", "ok", n), ("success_rate_early", "early", nq),
            ("success_rate_late", "late", nq), ("oracle_success_rate", "oracle", n),
            ("regret", "regret", n), ("regret_early", "regret_early", nq),
            ("regret_late", "regret_late", nq), ("regret_fixed", "fixed", n),
            ("regret_fixed_early", "fixed_early", nq), ("regret_fixed_late", "fixed_late", nq),
            ("withheld_rate", "withheld", n),
            ("off_task_rate", "off", n), ("prior_served_rate", "prior", n),
        ):  # fmt: skip
            result.add_ratio(name, per[key], den)
        early, late = np.array(per["early"]) / q, np.array(per["late"]) / q
        result.add_mean("success_change", late - early)
        r_early, r_late = np.array(per["regret_early"]) / q, np.array(per["regret_late"]) / q
        result.add_mean("regret_change", r_late - r_early)
        f_early, f_late = np.array(per["fixed_early"]) / q, np.array(per["fixed_late"]) / q
        result.add_mean("regret_fixed_change", f_late - f_early)

    def _revision_metrics(self, result: ScenarioResult, worlds: list[LoopWorld]) -> None:
        proposed, decided, correct, benign, wrong_rev, harmful, missed, stranded = (
            [] for _ in range(8)
        )
        for w in worlds:
            done = [r for r in w.revisions if r.outcome != "pending"]
            stranded.append(
                sum(
                    r.outcome == "pending" and w.store.status(r.key) == "quarantined"
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


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a block, restoring its state after.

    A world allocates tens of container objects a session and keeps most of them (the
    ledger, the logs), so the collector's generational scans, which revisit every live
    object, cost about 15 % of the loop's time while finding nothing: the world's
    objects form no garbage cycles (2,000 sessions with the collector off leave 0 for
    ``gc.collect``), so reference counting frees them all once the worlds are dropped,
    and a run paused from its first world to its last table never scans them. Blocks
    nest (an inner block leaves the collector as the outer one set it)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_VERDICT_OF = {"accepted": "accept", "reverted": "revert"}


def _count(events: list, status: str) -> float:
    return float(sum(1 for _, _, s in events if s == status))


__all__ = ["KINDS", "LoopScenario", "gate_table"]
