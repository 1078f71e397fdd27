"""The graph live loop's revision proposals and their log (the session log's ``revisions``).

The graph seed's ``procedure.revise`` proposes a new topology that the run ledger then
accepts or reverts (``procedure.evolve``'s gate); nothing in the seed proposes one by
itself. The live loop proposes on the loop scenario's schedule (``revise_every``
sessions, conf/scenario/loop.yaml): at the end of every ``revise_every``-th session, one
procedure run since the last such step, not quarantined and with no revision pending,
whose current revision has failed runs, gets a revision: its steps and one new last
step. Of the eligible procedures (``proposals``, each a ``Candidate`` with its failed
runs, their last replies and the check they failed most often, ties: the first seen),
the one with the most failed runs on its current revision comes first (ties: key order).
Where the new step comes from is ``live.revision_step``: the model's reflection on the
failed runs (``experiments.live.reflect``, the default) or the checker's own verdict,
``Make sure the reply passes: <check>`` (``Candidate.checker_step``). A step already
among the steps is not proposed; a graph the ledger once reverted is refused by the
store (``RevisionError``); either way the next eligible procedure is revised.

Everything here is a function of the records applied in session order, so a resumed run
that re-applies the journal proposes the same revisions at the same sessions (the
reflections' answers are journaled with the session that asked for them).

``log`` is the session log's revisions table (docs/logs.md): ``key``, ``revision``,
``prior_revision`` (empty for a first revision), ``proposed_at``, ``decided_at`` and
``verdict`` (``accepted``, ``reverted``, ``pending``), times being session indexes, as the
runs' ``time``. A procedure's first revision is logged accepted when it is added.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

REVISE_EVERY = 40
"""Sessions between two revision steps: the loop scenario's ``revise_every``."""
LESSON = "Make sure the reply passes: "
REVISION_COLUMNS = ("key", "revision", "prior_revision", "proposed_at", "decided_at", "verdict")


@dataclass(frozen=True)
class FailedRun:
    """A failed run: its session, the agent's last reply and the checks it failed."""

    session_id: str
    reply: str
    missed: tuple[str, ...]


@dataclass(frozen=True)
class Candidate:
    """A procedure a revision may be proposed for: its current revision and steps, its
    failed runs on that revision, and the check they failed most often."""

    key: str
    title: str
    revision: int
    steps: tuple[str, ...]
    failures: tuple[FailedRun, ...]
    check: str

    def checker_step(self) -> str:
        """The checker's lesson as a step (``live.revision_step=checker``)."""
        return LESSON + self.check


@dataclass
class RevisionLog:
    """The proposals' bookkeeping: failed checks per (key, revision) and the log rows."""

    revise_every: int = REVISE_EVERY
    failed: dict[tuple[str, int], Counter] = field(default_factory=dict)
    failures: dict[tuple[str, int], list[FailedRun]] = field(default_factory=dict)
    recent: set[str] = field(default_factory=set)
    log: list[dict[str, Any]] = field(default_factory=list)

    def added(self, key: str, time: int) -> None:
        """A new procedure: its first revision, accepted, with no prior."""
        self.log.append({
            "key": key, "revision": 1, "prior_revision": None, "proposed_at": time,
            "decided_at": time, "verdict": "accepted",
        })  # fmt: skip

    def ran(
        self, key: str, revision: int, ok: bool, checks: list, session_id: str = "",
        reply: str = "",
    ) -> None:  # fmt: skip
        """A recorded run; a failed one counts the checks it failed (in their order) and
        is kept with its last reply (the reflection's evidence)."""
        self.recent.add(key)
        if not ok:
            missed = tuple(str(d) for d, passed in checks if not passed)
            self.failed.setdefault((key, revision), Counter()).update(missed)
            runs = self.failures.setdefault((key, revision), [])
            runs.append(FailedRun(session_id, reply, missed))

    def decided(self, key: str, outcome: str, time: int) -> None:
        """The gate decided ``key``'s pending revision (``accepted`` or ``reverted``)."""
        row = next(r for r in reversed(self.log) if r["key"] == key)
        if row["verdict"] == "pending":
            row.update(decided_at=time, verdict=outcome)

    def due(self, index: int) -> bool:
        """Whether session ``index`` ends a revision step."""
        return (index + 1) % self.revise_every == 0

    def proposals(self, snapshots: list[Any]) -> list[Candidate]:
        """The procedures a revision may be proposed for now, best first (module doc),
        each with its failed runs and the check they failed most often; clears the keys
        run since the last step."""
        ranked = []
        for p in snapshots:
            tally = self.failed.get((p.key, p.revision))
            if p.key not in self.recent or p.status == "quarantined" or not tally:
                continue
            if p.pending_revision is not None:
                continue
            check = max(tally, key=lambda d: (tally[d], -list(tally).index(d)))
            runs = tuple(self.failures.get((p.key, p.revision), ()))
            found = Candidate(p.key, p.name, p.revision, tuple(p.steps), runs, check)
            ranked.append((-len(runs), p.key, found))  # most failed runs first
        self.recent.clear()
        return [found for _, _, found in sorted(ranked, key=lambda r: r[:2])]

    def proposed(self, key: str, revision: int, prior: int, time: int) -> None:
        """Log a proposal (pending until the gate decides)."""
        self.log.append({
            "key": key, "revision": revision, "prior_revision": prior, "proposed_at": time,
            "decided_at": None, "verdict": "pending",
        })  # fmt: skip
