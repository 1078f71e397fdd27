"""A flat procedure: a directive for the agent with a confidence that follows outcomes."""

from __future__ import annotations

from dataclasses import dataclass, field

from procmem_core.errors import check_int, check_probability, check_text
from procmem_core.flat.rule import DEFAULT_RULE, FlatRule


@dataclass
class Procedure:
    """A flat procedure (the seed's ``title``, ``trigger``, ``description``, ``confidence``)."""

    title: str
    trigger: str  # when the procedure applies
    description: str  # the instruction, written to the agent
    confidence: float = DEFAULT_RULE.initial
    successes: int = 0
    failures: int = 0
    metadata: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        check_text("title", self.title)
        self.confidence = check_probability("confidence", self.confidence)
        self.successes = check_int("successes", self.successes)
        self.failures = check_int("failures", self.failures)

    def record_outcome(
        self, positive: bool, rule: FlatRule = DEFAULT_RULE, baseline: float | None = None
    ) -> None:
        """Record one session in which the procedure was applied (the seed's semantics).

        The counts are updated first, so a rule that reads them (``rule.needs_counts``)
        sees this session; ``baseline`` is the no-procedure success rate a rule with
        ``rule.needs_baseline`` compares against (``rule.baseline_estimate`` of the
        withheld sessions). The same ``rule.update`` as the simulators call.
        """
        rule.check_evidence(self.successes, self.failures, baseline)
        if positive:
            self.successes += 1
        else:
            self.failures += 1
        self.confidence = rule.update(
            self.confidence,
            bool(positive),
            successes=self.successes,
            failures=self.failures,
            baseline=baseline,
        )
