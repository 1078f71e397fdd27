"""ProcedureFateScenario: one flat procedure, no noise; the simulated twin of ``flat_fate``.

A procedure with success probability ``p`` per applied session starts at the rule's
``initial`` confidence. In every session it is shown when the engine's prompt filter
(``shown_mask``) lets it through; a shown procedure is applied and updated by the
engine's ``rule.update``. Below the threshold it is never shown again, so the
threshold is absorbing (docs/statistics.md, "The flat confidence rule"). A rule that
compares against no procedure (``needs_baseline``) is told the no-procedure success rate
its prior assumes (``rule.baseline_estimate(0, 0)``: no session is withheld here), and
``flat_fate`` is walked at the same baseline; a rule that reads counts gets them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from procmem_core.errors import check_instance, check_int, check_probability
from procmem_core.flat import (
    DEFAULT_RULE,
    DEFAULT_THRESHOLD,
    FlatFate,
    FlatRule,
    flat_fate,
    shown_mask,
)
from simulators.calibration_blocks import Figure, block_units, calibration_metrics, pick_figures
from simulators.replication import DEFAULT_CHUNK, Chunk
from simulators.result import ScenarioResult, rate_and_se
from simulators.scenarios.base import Scenario, Work


@dataclass(frozen=True)
class ProcedureFateScenario(Scenario):
    """Fate of one flat procedure over ``sessions`` sessions, ``replications`` times.

    Metrics: ``p_excluded`` (below the threshold after the last session),
    ``expected_sessions_applied`` (sessions in which it was shown), each with ``_se``
    (``p_excluded`` at 0 or 1: the binomial SE at its exact value, ``boundary_se``),
    and their exact counterparts ``p_excluded_exact``, ``expected_sessions_applied_exact``
    from ``flat_fate`` (this scenario is always in the exact regime), plus the rule's
    ``break_even``. Table ``fates``: exclusion by session, simulated and exact.

    With ``calibration_blocks`` > 0, that many more ``p_excluded`` figures at horizons
    ``h <= sessions``, each from ``calibration_replications`` fresh replications of its
    own (``simulators.calibration_blocks``: independent z-scores for the calibration
    check), logged as ``cal<i>_p_excluded_s<h>`` with ``_se`` and ``_exact``.
    """

    name: ClassVar[str] = "fate"
    key_metrics: ClassVar[tuple[str, ...]] = ("p_excluded", "expected_sessions_applied")
    inputs: ClassVar[dict[str, str]] = {"rule": "rule", "threshold": "rule.threshold"}

    p: float = 0.7
    sessions: int = 20
    rule: FlatRule = DEFAULT_RULE
    threshold: float = DEFAULT_THRESHOLD
    replications: int = 20_000
    chunk_size: int = DEFAULT_CHUNK
    calibration_blocks: int = 0
    calibration_replications: int = 10_000
    min_replications: ClassVar[int] = 1
    units_per_second: ClassVar[float] = 1e7  # procedure-sessions

    def __post_init__(self) -> None:
        check_probability("p", self.p)
        check_int("sessions", self.sessions, minimum=1)
        check_instance("rule", self.rule, FlatRule)
        check_probability("threshold", self.threshold)
        self.check_replications()
        check_int("calibration_blocks", self.calibration_blocks, minimum=0)
        check_int("calibration_replications", self.calibration_replications, minimum=1)

    @property
    def exact_regime(self) -> bool:
        return True

    def work(self) -> Work:
        """Procedure-sessions (the calibration blocks' too); 24 B kept per replication,
        ~8 arrays of 8 B per chunk row."""
        units = self.replications * self.sessions + block_units(self)
        return self.estimate(units, 24, 64, ("replications", "sessions"))

    def exact_metrics(self) -> dict[str, float]:
        """``p_excluded_exact`` and ``expected_sessions_applied_exact`` (``flat_fate``)."""
        exact = self._exact_fate()
        return {
            "p_excluded_exact": exact.p_excluded,
            "expected_sessions_applied_exact": exact.expected_sessions_applied,
        }

    def block_figures(self) -> list[Figure]:
        """The calibration blocks' ``p_excluded`` figures (``simulators.calibration_blocks``)."""
        return pick_figures(self, ("p_excluded",))

    def _exact_fate(self) -> FlatFate:
        rule = self.rule
        baseline = rule.baseline_estimate(0.0, 0.0) if rule.needs_baseline else None
        return flat_fate(self.p, self.sessions, rule, self.threshold, baseline)

    def _chunk(self, chunk: Chunk) -> tuple[np.ndarray, np.ndarray]:
        """One chunk: exclusions by session (counts) and sessions applied per replication."""
        n_sessions, rule = self.sessions, self.rule
        baseline = rule.baseline_estimate(0.0, 0.0) if rule.needs_baseline else None
        excluded_by = np.zeros(n_sessions)
        conf = np.full(chunk.size, rule.start(baseline))
        applied = np.zeros(chunk.size)
        extra = {} if baseline is None else {"baseline": baseline}
        succ, fail = np.zeros(chunk.size), np.zeros(chunk.size)
        for k in range(n_sessions):
            shown = shown_mask(conf[:, None], self.threshold, 1)[:, 0]
            outcome = chunk.rng.random(chunk.size) < self.p
            if rule.needs_counts:
                succ, fail = succ + (shown & outcome), fail + (shown & ~outcome)
                extra.update(successes=succ, failures=fail)
            conf = np.where(shown, rule.update(conf, outcome, **extra), conf)
            applied += shown
            still = shown_mask(conf[:, None], self.threshold, 1)[:, 0]
            excluded_by[k] += chunk.size - np.count_nonzero(still)
        return excluded_by, applied

    def run(self, seed: int) -> ScenarioResult:
        n_sessions, reps = self.sessions, self.replications
        parts = self.map_chunks(seed, self._chunk)
        excluded_by = np.zeros(n_sessions)
        for counts, _ in parts:
            excluded_by += counts
        applied_parts = [applied for _, applied in parts]

        result = self.new_result()
        result.add_rate("p_excluded", excluded_by[-1], reps)
        result.add_mean("expected_sessions_applied", np.concatenate(applied_parts))
        exact = self._exact_fate()
        result.metrics["p_excluded_exact"] = exact.p_excluded
        # all 400 excluded at an exact 0.99993 (chance 0.97): SE 0 made z infinite
        result.boundary_se("p_excluded", reps)
        result.metrics["expected_sessions_applied_exact"] = exact.expected_sessions_applied
        result.metrics["break_even"] = exact.break_even
        result.metrics.update(calibration_metrics(self, seed))
        rates = [rate_and_se(x, reps) for x in excluded_by]
        result.tables["fates"] = pd.DataFrame(
            {
                "session": np.arange(1, n_sessions + 1),
                "p": self.p,
                "excluded_rate": [r for r, _ in rates],
                "excluded_rate_se": [se for _, se in rates],
                "excluded_exact": exact.excluded_by_session,
            }
        )
        return result
