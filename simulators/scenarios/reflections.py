"""ReflectionsScenario: is the distill worker's pair a true contrast?

A loop-like world (the loop's task situations, ``loop_world.TASKS``): each of ``tasks``
tasks has a helpful procedure (success ``p_good``) and a harmful one (``p_bad``); each
session draws a task uniformly, follows the harmful procedure with probability
``harmful_share``, succeeds with the procedure's rate, and is labelled by a judge that is
unsure with probability ``unsure_rate`` (then the label is a fair coin at confidence 0.5)
and otherwise right at confidence ``sure_confidence``. The session's text is its
situation, the procedure followed and its steps, and a line naming the customer.

After ``sessions`` sessions the real ``DistillWorker`` (enabled here; off by default in
the engine) pairs and distils them through the offline model server
(``simulators.llm_server``, started for the run), with ``max_pairs``,
``similarity_floor``, ``min_confidence`` and ``match_on`` as set.

Metrics (``add_ratio`` over replications):

- ``true_contrast_rate``: pairs whose failed session followed the harmful procedure;
- ``opposite_pair_rate``: ... and whose successful session followed the helpful one;
- ``same_procedure_rate``: both sessions followed the same procedure (the difference the
  model is asked to distil is then not the procedure); ``same_task_rate``;
- ``lesson_helpful_rate`` / ``lesson_harmful_rate``: reflections whose first lesson tells
  the agent to follow the helpful / the harmful procedure; ``junk_lesson_rate``:
  reflections with lessons, none naming a procedure;
- ``pairs``, ``unpaired`` (confident failures without a partner above the floor),
  ``distill_faults`` (per replication).

Exact where it applies (``match_on="situation"`` and a floor above every cross-task
similarity, so each confident failure is paired with the earliest success of its own
task, whose procedure is independent of the failure's): with ``P(flag | p) = (1 - u)(1 -
p)[c >= t] + (u / 2)[0.5 >= t]`` and ``P(ok | p) = (1 - u) p + u / 2``,
``true_contrast_rate_exact = P(harmful | flagged) = h P(flag | p_bad) / (h P(flag |
p_bad) + (1 - h) P(flag | p_good))``, ``opposite_pair_rate_exact = P(harmful | flagged)
P(helpful | labelled ok)``, equal to ``lesson_helpful_rate_exact``. There, with
``calibration_blocks`` > 0, the run adds that many ``true_contrast_rate`` and
``opposite_pair_rate`` figures, each from ``calibration_replications`` fresh replications
paired without the model (``calibration_run``; ``simulators.calibration_blocks``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import pandas as pd

from procmem_core.errors import ParameterError, check_choice, check_int, check_probability
from procmem_core.graph import HashingEmbedder
from procmem_core.graph.embedding import reaches_floor
from procmem_core.logged import CHECK_FIELDS
from procmem_core.memory import MemoryStore
from procmem_core.memory.index import VectorIndex
from procmem_core.reflections import (
    MATCH_ON,
    DistillSettings,
    SessionOutcome,
    SessionPair,
    pair_sessions,
    read_reflection,
)
from simulators.calibration_blocks import Figure, block_units, calibration_metrics, pick_figures
from simulators.llm_server import DEFAULT_MODEL, OfflineServer
from simulators.result import ScenarioResult
from simulators.scenarios.base import Scenario, Work
from simulators.scenarios.loop_world import TASKS

if TYPE_CHECKING:  # the worker loads the openai client: imported where it runs
    from procmem_core.reflections.distill import DistillReport

PROCEDURES = ("helpful", "harmful")
STEPS = {
    "helpful": (
        "look the case up in the ledger",
        "check the policy for the case",
        "confirm the outcome with the customer",
    ),
    "harmful": ("act on the first guess", "skip the policy check", "close the ticket at once"),
}


def procedure_name(task: int, which: str) -> str:
    return f"procedure: {which} approach to task {task}"


@dataclass(frozen=True)
class ReflectionsScenario(Scenario):
    """How often the distill worker's pair contrasts the harmful with the helpful procedure."""

    name: ClassVar[str] = "reflections"

    tasks: int = 4
    sessions: int = 40
    p_good: float = 0.8
    p_bad: float = 0.3
    harmful_share: float = 0.5
    unsure_rate: float = 0.2
    sure_confidence: float = 0.9
    min_confidence: float = 0.8
    similarity_floor: float = 0.5
    max_pairs: int = 5
    match_on: str = "situation"
    customers: int = 50
    replications: int = 100
    calibration_blocks: int = 0
    calibration_replications: int = 100
    chunk_size: ClassVar[int] = 1
    min_replications: ClassVar[int] = 2
    units_per_second: ClassVar[float] = 50.0  # sessions (set low: the estimate is a bound)
    unseeded: ClassVar[tuple[str, ...]] = CHECK_FIELDS  # added after its jobs were logged

    def __post_init__(self) -> None:
        check_int("tasks", self.tasks, minimum=1, maximum=len(TASKS))
        check_int("sessions", self.sessions, minimum=2, maximum=10_000)
        for name in (
            "p_good",
            "p_bad",
            "harmful_share",
            "unsure_rate",
            "sure_confidence",
            "min_confidence",
            "similarity_floor",
        ):
            check_probability(name, getattr(self, name))
        if self.sure_confidence < 0.5:
            raise ParameterError("sure_confidence", self.sure_confidence, "expected >= 0.5")
        check_int("max_pairs", self.max_pairs, minimum=1)
        check_choice("match_on", self.match_on, MATCH_ON)
        check_int("customers", self.customers, minimum=1)
        self.check_replications()
        check_int("calibration_blocks", self.calibration_blocks, minimum=0)
        check_int(
            "calibration_replications", self.calibration_replications, minimum=self.min_replications
        )

    @property
    def settings(self) -> DistillSettings:
        return DistillSettings(
            enabled=True,
            max_pairs=self.max_pairs,
            similarity_floor=self.similarity_floor,
            min_confidence=self.min_confidence,
            match_on=self.match_on,
        )

    @property
    def exact_regime(self) -> bool:
        """Situation matching with a floor above every cross-task similarity."""
        if self.match_on != "situation":
            return False
        v = HashingEmbedder().embed(list(TASKS[: self.tasks]))
        sims = v @ v.T
        cross = sims[~np.eye(self.tasks, dtype=bool)]
        return bool(cross.size == 0 or not reaches_floor(cross.max(), self.similarity_floor))

    def exact(self) -> dict[str, float]:
        """The exact rates of the module docstring (valid in ``exact_regime``)."""
        u, c, t = self.unsure_rate, self.sure_confidence, self.min_confidence

        def flag(p: float) -> float:
            return (1 - u) * (1 - p) * (c >= t) + (u / 2) * (t <= 0.5)

        def ok(p: float) -> float:
            return (1 - u) * p + u / 2

        h = self.harmful_share
        bad_f, good_f = h * flag(self.p_bad), (1 - h) * flag(self.p_good)
        bad_ok, good_ok = h * ok(self.p_bad), (1 - h) * ok(self.p_good)
        harmful_given_flag = bad_f / (bad_f + good_f) if bad_f + good_f > 0 else float("nan")
        helpful_given_ok = good_ok / (good_ok + bad_ok) if good_ok + bad_ok > 0 else float("nan")
        return {
            "true_contrast_rate": harmful_given_flag,
            "opposite_pair_rate": harmful_given_flag * helpful_given_ok,
            "lesson_helpful_rate": harmful_given_flag * helpful_given_ok,
        }

    def exact_metrics(self) -> dict[str, float]:
        """``<rate>_exact`` for each rate of ``exact`` (valid in ``exact_regime``)."""
        return {f"{name}_exact": value for name, value in self.exact().items()}

    def block_figures(self) -> list[Figure]:
        """The calibration blocks' pair rates (``simulators.calibration_blocks``), all at
        the run's horizon: the exact rates do not depend on it, and a short world pairs few
        sessions."""
        return pick_figures(self, BLOCK_METRICS, horizons=(self.sessions,))

    def work(self) -> Work:
        """Sessions; a world holds about 1 MB (the model client's import, about 30 MB, and
        the offline server start once per process: not the run's to budget). A calibration
        block's session costs about 1 % of one distilled (``calibration_run``: 0.7 ms
        against 90 ms a replication of 40 sessions, measured 2026-12-02)."""
        units = self.replications * self.sessions + block_units(self) / 100
        return self.estimate(
            units, 2_000, 1_000_000 + 500 * self.sessions, ("replications", "sessions")
        )

    def run(self, seed: int) -> ScenarioResult:
        # the model client is loaded here, not at import: a job that does not run this
        # scenario never loads openai
        from procmem_core.learn import LLMConfig, make_client

        logs = []
        with OfflineServer() as server:
            config = LLMConfig(base_url=server.base_url, model=DEFAULT_MODEL, max_retries=0)
            client = make_client(config)
            for chunk in self.chunks(seed):
                logs.append(self._replication(chunk.rng, client, config))
        return self._result(logs, seed)

    def _replication(self, rng: np.random.Generator, client, config) -> dict:
        sessions, truth = self._sessions(rng)
        from procmem_core.reflections.distill import DistillWorker

        worker = DistillWorker(MemoryStore(), client, config, self.settings)
        report = worker.run(sessions)
        return {"truth": truth, "report": report}

    def _sessions(
        self, rng: np.random.Generator
    ) -> tuple[list[SessionOutcome], dict[str, tuple[int, str]]]:
        """One replication's sessions, and each one's ``(task, procedure)`` by session id."""
        tasks = rng.integers(self.tasks, size=self.sessions)
        harmful = rng.random(self.sessions) < self.harmful_share
        p = np.where(harmful, self.p_bad, self.p_good)
        ok = rng.random(self.sessions) < p
        unsure = rng.random(self.sessions) < self.unsure_rate
        coin = rng.random(self.sessions) < 0.5
        customer = rng.integers(self.customers, size=self.sessions)
        label = np.where(unsure, coin, ok)
        confidence = np.where(unsure, 0.5, self.sure_confidence)
        sessions, truth = [], {}
        for i in range(self.sessions):
            which = PROCEDURES[int(harmful[i])]
            task = int(tasks[i])
            lines = [
                TASKS[task],
                procedure_name(task, which),
                *STEPS[which],
                f"the user is customer {int(customer[i])}",
            ]
            sid = f"s{i}"
            truth[sid] = (task, which)
            sessions.append(
                SessionOutcome(
                    session_id=sid,
                    text="\n".join(lines),
                    ok=bool(label[i]),
                    confidence=float(confidence[i]),
                    situation=TASKS[task],
                )
            )
        return sessions, truth

    def _result(self, logs: list[dict], seed: int) -> ScenarioResult:
        counts, rows = [], []
        for i, log in enumerate(logs):
            truth, report = log["truth"], log["report"]
            pairs = report.pairing.pairs
            kinds = _kinds(pairs, truth)
            counts.append(_counts(kinds, report))
            rows += _pair_rows(i, pairs, kinds)
        per = {k: [c[k] for c in counts] for k in COUNTS}
        result = self._pair_result(per)
        for name, key in (
            ("lesson_helpful_rate", "good"),
            ("lesson_harmful_rate", "bad"),
            ("junk_lesson_rate", "junk"),
        ):
            result.add_ratio(name, per[key], per["reflections"])
        for name, key in (("unpaired", "unpaired"), ("distill_faults", "faults")):
            result.add_mean(name, np.array(per[key], dtype=float))
        if self.exact_regime:
            result.metrics.update(self.exact_metrics())
        self._boundary(result, per)
        result.metrics.update(calibration_metrics(self, seed))
        result.tables["distill_pairs"] = pd.DataFrame(rows)
        return result

    def _pair_result(self, per: dict[str, list[int]]) -> ScenarioResult:
        """A result holding the pair rates (pairs as the denominator) and mean ``pairs``."""
        result = self.new_result()
        for name, key in PAIR_RATES:
            result.add_ratio(name, per[key], per["pairs"])
        result.add_mean("pairs", np.array(per["pairs"], dtype=float))
        return result

    def calibration_run(self, seed: int) -> ScenarioResult:
        """The run's pairs without the model: the same replications (``_sessions``) paired
        by ``pair_sessions`` through an index of the worker's own embedder, as the worker
        pairs them; metrics the pair rates and ``pairs``, as ``run`` logs them. The
        calibration blocks run this (``simulators.calibration_blocks``): a pair rate does
        not depend on the model, and pairing alone is about 100 times faster."""
        index = VectorIndex(MemoryStore().embedder)
        counts = []
        for chunk in self.chunks(seed):
            sessions, truth = self._sessions(chunk.rng)
            pairs = pair_sessions(sessions, index, self.settings).pairs
            counts.append(_pair_counts(_kinds(pairs, truth)))
        per = {k: [c[k] for c in counts] for k in counts[0]}
        result = self._pair_result(per)
        self._boundary(result, per)
        return result

    def _boundary(self, result: ScenarioResult, per: dict[str, list[int]]) -> None:
        """In the exact regime, a rate at 0 or 1 (plug-in SE 0) gets the binomial SE at its
        exact value (``ScenarioResult.boundary_se``) over the replications with a pair (or
        a reflection): all 100 pairs true contrasts at an exact 0.99 (chance 0.37) read as
        an infinite z. Replications, not pairs: the pairs of one replication share its
        sessions, so this bounds the SE of the pooled ratio from above."""
        if not self.exact_regime:
            return
        for name, value in self.exact().items():
            den = "reflections" if name.startswith("lesson") else "pairs"
            if den in per and f"{name}_se" in result.metrics:
                units = sum(1 for d in per[den] if d > 0)
                result.boundary_se(name, units, value)


PAIR_RATES = (
    ("true_contrast_rate", "true"),
    ("opposite_pair_rate", "opposite"),
    ("same_procedure_rate", "same_proc"),
    ("same_task_rate", "same_task"),
)
"""The pair rates and the ``_pair_counts`` key of their numerators."""
BLOCK_METRICS = ("true_contrast_rate", "opposite_pair_rate")
"""The pair rates a calibration block may log (exact in the exact regime)."""


COUNTS = (
    "pairs",
    "true",
    "opposite",
    "same_proc",
    "same_task",
    "reflections",
    "good",
    "bad",
    "junk",
    "unpaired",
    "faults",
)
"""What ``_counts`` counts in one replication."""


def _kinds(pairs: Sequence[SessionPair], truth: dict) -> list[tuple[tuple, tuple]]:
    """``(task, procedure)`` of each pair's failed and succeeded session."""
    return [(truth[pp.failed.session_id], truth[pp.succeeded.session_id]) for pp in pairs]


def _pair_counts(kinds: list[tuple[tuple, tuple]]) -> dict[str, int]:
    """One replication's pairs by what the failed and the succeeded session truly were
    (``kinds``: ``(task, procedure)`` of each)."""
    return {
        "pairs": len(kinds),
        "true": sum(f[1] == "harmful" for f, _ in kinds),
        "opposite": sum(f[1] == "harmful" and s[1] == "helpful" for f, s in kinds),
        "same_proc": sum(f[1] == s[1] for f, s in kinds),
        "same_task": sum(f[0] == s[0] for f, s in kinds),
    }


def _counts(kinds: list[tuple[tuple, tuple]], report: DistillReport) -> dict[str, int]:
    """One replication's counts: its pairs (``_pair_counts``), its reflections by lesson,
    the failed sessions left unpaired and the distill faults."""
    lessons = [read_reflection(r).lessons for r in report.reflections]
    return {
        **_pair_counts(kinds),
        "reflections": len(lessons),
        "good": sum(bool(x) and x[0].startswith("Do: procedure: helpful") for x in lessons),
        "bad": sum(bool(x) and x[0].startswith("Do: procedure: harmful") for x in lessons),
        "junk": sum(bool(x) and not any("procedure:" in y for y in x) for x in lessons),
        "unpaired": report.pairing.unpaired,
        "faults": len(report.faults),
    }


def _pair_rows(
    replication: int, pairs: Sequence[SessionPair], kinds: list[tuple[tuple, tuple]]
) -> list[dict]:
    """The ``distill_pairs`` table rows of one replication: each pair's truth and similarity."""
    return [
        {
            "replication": replication,
            "failed_task": f[0],
            "failed_procedure": f[1],
            "succeeded_task": s[0],
            "succeeded_procedure": s[1],
            "similarity": pp.similarity,
        }
        for pp, (f, s) in zip(pairs, kinds, strict=True)
    ]


__all__ = ["ReflectionsScenario"]
