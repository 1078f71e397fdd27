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
from procmem_core.flat import DEFAULT_RULE, DEFAULT_THRESHOLD, FlatRule, flat_fate, shown_mask
from simulators.replication import DEFAULT_CHUNK, Chunk
from simulators.result import ScenarioResult, rate_and_se
from simulators.scenarios.base import Scenario, Work


@dataclass(frozen=True)
class ProcedureFateScenario(Scenario):
    """Fate of one flat procedure over ``sessions`` sessions, ``replications`` times.

    Metrics: ``p_excluded`` (below the threshold after the last session),
    ``expected_sessions_applied`` (sessions in which it was shown), each with ``_se``,
    and their exact counterparts ``p_excluded_exact``, ``expected_sessions_applied_exact``
    from ``flat_fate`` (this scenario is always in the exact regime), plus the rule's
    ``break_even``. Table ``fates``: exclusion by session, simulated and exact.
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
    min_replications: ClassVar[int] = 1
    units_per_second: ClassVar[float] = 1e7  # procedure-sessions

    def __post_init__(self) -> None:
        check_probability("p", self.p)
        check_int("sessions", self.sessions, minimum=1)
        check_instance("rule", self.rule, FlatRule)
        check_probability("threshold", self.threshold)
        self.check_replications()

    @property
    def exact_regime(self) -> bool:
        return True

    def work(self) -> Work:
        """Procedure-sessions; 24 B kept per replication, ~8 arrays of 8 B per chunk row."""
        return self.estimate(
            self.replications * self.sessions, 24, 64, ("replications", "sessions")
        )

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
        rule = self.rule
        baseline = rule.baseline_estimate(0.0, 0.0) if rule.needs_baseline else None
        parts = self.map_chunks(seed, self._chunk)
        excluded_by = np.zeros(n_sessions)
        for counts, _ in parts:
            excluded_by += counts
        applied_parts = [applied for _, applied in parts]

        result = self.new_result()
        result.add_rate("p_excluded", excluded_by[-1], reps)
        result.add_mean("expected_sessions_applied", np.concatenate(applied_parts))
        exact = flat_fate(self.p, n_sessions, rule, self.threshold, baseline)
        result.metrics["p_excluded_exact"] = exact.p_excluded
        result.metrics["expected_sessions_applied_exact"] = exact.expected_sessions_applied
        result.metrics["break_even"] = exact.break_even
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
