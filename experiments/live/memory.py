"""The flat memory the live loop drives: procedure records, their pack and their updates.

Every procedure has a key, ``procedure_<slug of title>`` (``procmem_core.graph.keys``),
which the session log uses. One session:

- ``pack(withhold)``: the seed's ``build_system_prompt`` over the records with the
  configured rule's threshold and limit; the top procedure (highest confidence shown) is
  ``top_key``, and with ``withhold`` (drawn with probability ``explore_rate`` by the
  loop) it is left out of the prompt, as the graph seed's pack does;
- ``record(shown_keys, positive)``: ``Procedure.record_outcome`` for every procedure
  shown (the seed's semantics); a rule that reads a baseline gets
  ``rule.baseline_estimate`` of the withheld sessions so far;
- ``add_learned(procedures)``: new records at their extracted confidence; a title whose
  key already exists is not added again and the existing record keeps its evidence.

The state is a pure function of the sessions applied in order, so the loop restores it
after a kill by applying its journal again (``experiments.live.journal``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from procmem_core.flat import BASE_PROMPT, FlatRule, Procedure, build_system_prompt, prompt_order
from procmem_core.graph.keys import procedure_key


@dataclass(frozen=True)
class Pack:
    """What one session's system prompt holds."""

    prompt: str
    top_key: str  # "" when no procedure passed the filter
    shown_keys: tuple[str, ...]
    withheld: bool


@dataclass
class FlatMemory:
    """Flat procedure records by key, in the order they were learned."""

    kind = "flat"  # live.memory, written in each journal record

    rule: FlatRule
    threshold: float
    limit: int
    base_prompt: str = BASE_PROMPT
    records: dict[str, Procedure] = field(default_factory=dict)
    withheld_sessions: int = 0
    withheld_successes: int = 0

    def pack(self, withhold: bool) -> Pack:
        """The prompt, with the top procedure left out when ``withhold`` and there is one."""
        order = prompt_order(list(self.records.values()), self.threshold, self.limit)
        keys = [procedure_key(p.title) for p in order]
        top = keys[0] if keys else ""
        withheld = bool(withhold and top)
        shown = order[1:] if withheld else order
        prompt = build_system_prompt(shown, 0.0, max(1, len(shown)), self.base_prompt)
        return Pack(prompt, top, tuple(keys[1:] if withheld else keys), withheld)

    def pack_session(self, plan: Any) -> tuple[Pack, tuple[int, ...]]:
        """The loop's call: the pack for ``plan`` (its withholding draw) and no revisions."""
        return self.pack(plan.withhold), ()

    def apply_outcome(self, record: dict) -> None:
        """The loop's call: a finished session's outcome (``record``)."""
        self.record(record["shown_keys"], record["withheld"], bool(record["outcome"]))

    def close(self) -> None:
        """Nothing to release (the graph memory's event loop is)."""

    def baseline(self) -> float | None:
        """The no-procedure success rate a baseline-reading rule compares against."""
        if not self.rule.needs_baseline:
            return None
        return float(self.rule.baseline_estimate(self.withheld_successes, self.withheld_sessions))

    def record(self, shown_keys: Sequence[str], withheld: bool, positive: bool) -> None:
        """One finished session: every shown procedure's outcome (the seed's semantics)."""
        baseline = self.baseline()
        for key in shown_keys:
            self.records[key].record_outcome(bool(positive), self.rule, baseline)
        if withheld:
            self.withheld_sessions += 1
            self.withheld_successes += int(bool(positive))

    def add_learned(self, procedures: Sequence[dict]) -> list[str]:
        """Add extracted procedures (``title``, ``trigger``, ``description``,
        ``confidence``) not already held; the keys of those added."""
        added = []
        for p in procedures:
            key = procedure_key(p["title"])
            if key in self.records:
                continue
            self.records[key] = Procedure(
                p["title"], p["trigger"], p["description"], float(p["confidence"])
            )
            added.append(key)
        return added

    def confidences(self) -> dict[str, float]:
        """Every record's confidence by key."""
        return {k: p.confidence for k, p in self.records.items()}

    def snapshot(self) -> list[dict]:
        """Every record as a plain dict (``procedures.json``)."""
        return [
            {
                "key": k,
                "title": p.title,
                "trigger": p.trigger,
                "description": p.description,
                "confidence": p.confidence,
                "successes": p.successes,
                "failures": p.failures,
            }
            for k, p in self.records.items()
        ]
