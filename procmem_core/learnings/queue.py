"""``LearningsQueue``: the seed's learnings review queue (loom-procedures.txt).

"Loom records the reviewer's choice and never makes it." Support never promotes.

- ``propose`` (writer) and ``support`` (writer): any candidate other than a bot's rule is
  written by the caller's own process (``conversation`` or ``supporters`` kind); a
  supporter row holds the user, the session, the writer and the user's own quotes.
- ``file_agent_rule`` (writer): with assistant-turn learnings on (``LearningsSettings``,
  off by default), a rule a bot states about its own behaviour becomes an
  ``assistant_turn`` candidate for the acting agent, never a memory; each session that
  states it adds a supporter row with that user's quotes. A pinned token acts as the
  agent it names; one naming no agent files no bot's rule.
- ``list`` / ``get`` (viewer): by status (pending by default), source kind and agent.
- ``review`` (admin): promote or reject with a reason; a promotion writes to memory,
  knowledge or both (unset: knowledge for a bot's rule, memory otherwise) with the
  candidate id as lineage; a bot's rule is tagged ``agent:<agent>``. Reviewing again
  with the decision it holds is a no-op; rejecting a promoted candidate marks it
  rejected and leaves what the promotion wrote (``MemoryStore.delete_source`` of
  ``learning://<candidate_id>`` stops serving it).
- ``quality`` (viewer): per namespace pending / promoted / rejected and the approve
  ratio, for the conversation seeder by default.
- ``erase_user`` (admin): deletes the user's supporter rows and their quotes; a pending
  candidate left without a supporter is deleted, a decided one keeps its status row with
  the rule blanked; a bot's rule whose last supporter was erased answers not found.

``LearningsQueue()`` is in memory; ``LearningsQueue.open(path)`` writes through to the
SQLite tables ``learnings_queue`` and ``learnings_supporters``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from procmem_core.closed import close_journal
from procmem_core.errors import ParameterError, check_choice, check_text
from procmem_core.graph.keys import check_namespace
from procmem_core.learnings.candidate import CandidateState, check_support, fingerprint
from procmem_core.learnings.erasure import plan_erasure
from procmem_core.learnings.publish import check_destination, promote
from procmem_core.learnings.reading import QueueReads, principal_of
from procmem_core.learnings.records import (
    DECISIONS,
    Decision,
    Erasure,
    Learning,
    ReviewResult,
    Supporter,
)
from procmem_core.learnings.settings import LearningsSettings
from procmem_core.limits import MAX_NOTE, MAX_RECORD_TEXT, check_identifier
from procmem_core.locking import thread_safe
from procmem_core.memory import NO_AGENT, READ_EVERY_AGENT, MemoryStore, Principal
from procmem_core.memory.access import allowed_namespaces
from procmem_core.memory.journal import RowJournal

CANDIDATES, SUPPORTERS = "learnings_queue", "learnings_supporters"
CALLER_KINDS = ("conversation", "supporters")


@thread_safe()
class LearningsQueue(QueueReads):
    """Candidates and their supporters; see the module docstring (reads in
    ``learnings.reading``). Thread-safe: every public method runs under the queue's lock
    (``procmem_core.locking``)."""

    @classmethod
    def open(
        cls,
        path: str | Path,
        memory: MemoryStore | None = None,
        settings: LearningsSettings | None = None,
    ) -> LearningsQueue:
        """A queue kept in the SQLite file ``path`` (created if there is no file or a
        zero-byte one, else loaded; a file that is not procmem's raises
        ``StoreFileError`` naming the path, and nothing is written to it)."""
        queue = cls(memory, settings)
        journal = RowJournal(path, "learnings", (CANDIDATES, SUPPORTERS))
        try:
            for c in journal.load(CANDIDATES, CandidateState.from_json):
                queue._candidates[c.candidate_id] = c
                queue._by_print[c.fingerprint] = c.candidate_id
            for row in journal.load(SUPPORTERS, Supporter.from_json):
                queue._candidates[row.candidate_id].rows.append(row)
            queue._seq = int(journal.meta("seq", 0))
        except BaseException:
            journal.close()
            raise
        queue._journal = journal
        return queue

    def close(self) -> None:
        """Close the file (``procmem_core.closed``: a later write raises ``StoreClosed``);
        nothing to do in memory."""
        self._journal = close_journal("LearningsQueue", self._journal)

    def __enter__(self) -> LearningsQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- bookkeeping --------------------------------------------------------------

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def _commit(
        self,
        candidates: Sequence[CandidateState] = (),
        rows: Sequence[Supporter] = (),
        dropped: Sequence[str] = (),
        dropped_rows: Sequence[str] = (),
    ) -> None:
        if self._journal is None:
            return
        self._journal.commit(
            {
                CANDIDATES: [(c.candidate_id, c.seq, c.to_json()) for c in candidates],
                SUPPORTERS: [(r.row_id, r.seq, r.to_json()) for r in rows],
            },
            {CANDIDATES: list(dropped), SUPPORTERS: list(dropped_rows)},
            {"seq": self._seq},
        )

    def _find_or_new(
        self, text: str, source_kind: str, agent: str | None, namespace: str
    ) -> CandidateState:
        """The candidate with this identity, or a new pending one (not yet written)."""
        key = fingerprint(namespace, source_kind, agent, text)
        held = self._by_print.get(key)
        if held is not None:
            return self._candidates[held]
        seq = self._next()
        return CandidateState(
            candidate_id=f"lrn_{seq}",
            namespace=namespace,
            text=text,
            fingerprint=key,
            source_kind=source_kind,
            agent=agent,
            seq=seq,
        )

    def _keep(
        self, c: CandidateState, rows: Sequence[Supporter] = (), text: str | None = None
    ) -> Learning:
        """Write the candidate (its rule restored to ``text`` when an erasure blanked it)
        and its new rows through, then hold them; on a failed write nothing changes."""
        before = c.text
        if text is not None and not c.text:
            c.text = text
        try:
            self._commit([c], rows)
        except BaseException:
            c.text = before
            raise
        self._candidates[c.candidate_id] = c
        self._by_print[c.fingerprint] = c.candidate_id
        c.rows.extend(rows)
        return c.snapshot()

    # -- writing candidates and support ----------------------------------------------

    def propose(
        self,
        text: str,
        *,
        principal: Principal,
        source_kind: str = "supporters",
        namespace: str = "default",
        agent: str | None = None,
    ) -> Learning:
        """A candidate written by the caller's process (``conversation`` or ``supporters``);
        the same rule proposed again is the same candidate, whatever its status."""
        principal_of(principal).require("writer", "learnings.propose", check_namespace(namespace))
        check_text("text", text, MAX_RECORD_TEXT)
        if source_kind == "assistant_turn":
            raise ParameterError(
                "source_kind",
                source_kind,
                "a bot's rule is filed by extraction: use file_agent_rule",
            )
        check_choice("source_kind", source_kind, CALLER_KINDS)
        if agent is not None:
            check_text("agent", agent)
        c = self._find_or_new(text, source_kind, agent, check_namespace(namespace))
        return self._keep(c, text=text)

    def support(
        self,
        candidate_id: str,
        *,
        principal: Principal,
        user_id: str | None,
        session_id: str,
        quotes: Sequence[str],
        confidence: float | None = None,
    ) -> Learning:
        """Add one supporter row (the user's own quotes) to a caller's candidate."""
        principal_of(principal).require("writer", "learnings.support")
        c = self._live(candidate_id, principal)
        principal.require("writer", "learnings.support", c.namespace)
        if c.source_kind == "assistant_turn":
            raise ParameterError(
                "candidate_id",
                candidate_id,
                "a bot's rule gains supporters as sessions state it (file_agent_rule)",
            )
        row = self._row(c, principal, user_id, session_id, quotes, confidence, "learnings.support")
        return self._keep(c, [row])

    def file_agent_rule(
        self,
        rule: str,
        *,
        principal: Principal,
        agent: str | None,
        user_id: str | None,
        session_id: str,
        quotes: Sequence[str],
        confidence: float | None = None,
        namespace: str = "default",
    ) -> Learning | None:
        """Extraction's bot rule: an ``assistant_turn`` candidate for the acting agent plus
        this session's supporter row; None when assistant-turn learnings are off or the
        call acts as no bot: a pinned token naming none, ``"-"`` (no agent) or ``"*"``
        (the read of every agent, which is no bot: its rule would be served to all)."""
        namespace = check_namespace(namespace)
        principal_of(principal).require("writer", "learnings.file_agent_rule", namespace)
        check_text("rule", rule, MAX_RECORD_TEXT)
        if not self.settings.agent_learnings:
            return None
        acting = principal.acting_agent(agent)
        if acting in (None, NO_AGENT, READ_EVERY_AGENT):  # no bot: '-' none, '*' every read
            return None
        check_text("agent", acting)
        c = self._find_or_new(rule, "assistant_turn", acting, namespace)
        row = self._row(
            c, principal, user_id, session_id, quotes, confidence, "learnings.file_agent_rule"
        )
        return self._keep(c, [row], text=rule)

    def _row(self, c, principal, user_id, session_id, quotes, confidence, operation) -> Supporter:
        user = principal.acting_user(user_id, operation)
        quotes, confidence = check_support(session_id, quotes, confidence)
        seq = self._next()
        return Supporter(
            row_id=f"sup_{seq}",
            candidate_id=c.candidate_id,
            user_id=user,
            session_id=session_id,
            writer=principal.name,
            quotes=quotes,
            confidence=confidence,
            seq=seq,
        )

    # -- review and erasure ----------------------------------------------------------

    def review(
        self,
        candidate_id: str,
        decision: str,
        *,
        principal: Principal,
        reason: str,
        destination: str | None = None,
    ) -> ReviewResult:
        """``learnings.review`` (admin); see the module docstring."""
        principal_of(principal).require("admin", "learnings.review")
        check_choice("decision", decision, tuple(DECISIONS))
        check_text("reason", reason, MAX_NOTE)
        c = self._live(candidate_id, principal)
        principal.require("admin", "learnings.review", c.namespace)
        check_destination(decision, destination)
        target = DECISIONS[decision]
        if c.status == target:
            return ReviewResult(learning=c.snapshot(), changed=False)
        written: tuple[str, ...] = ()
        if target == "promoted":
            destination, written = promote(self.memory, c, destination, principal, reason)
        before = (c.status, list(c.decisions))
        c.status = target
        c.decisions.append(
            Decision(
                decision=decision,
                reason=reason,
                reviewer=principal.name,
                destination=destination,
                written=written,
                seq=self._next(),
            )
        )
        try:
            learning = self._keep(c)
        except BaseException:
            c.status, c.decisions = before
            raise
        return ReviewResult(learning=learning, changed=True, written=written)

    def erase_user(self, user_id: str, *, principal: Principal) -> Erasure:
        """A user erasure (admin; a principal scoped to namespaces erases in those where it
        is admin; a pinned token only its own user); see the module docstring."""
        spaces = allowed_namespaces(principal_of(principal), "admin", "learnings.erase_user")
        check_identifier("user_id", user_id)
        if principal.pinned:  # a pinned token speaks for its own user only
            principal.acting_user(user_id, "learnings.erase_user")
        mine = [c for c in self._candidates.values() if spaces is None or c.namespace in spaces]
        plan = plan_erasure(mine, user_id)
        kept = [replace(c, text="", rows=[]) for c in plan.blanked]
        self._commit(kept, (), [c.candidate_id for c in plan.deleted], plan.dropped_rows)
        for cid, left in plan.remaining.items():
            self._candidates[cid].rows = left
        for c in plan.blanked:
            c.text = ""
        for c in plan.deleted:
            del self._candidates[c.candidate_id]
            del self._by_print[c.fingerprint]
        return Erasure(
            user_id=user_id,
            supporter_rows=len(plan.dropped_rows),
            deleted=tuple(c.candidate_id for c in plan.deleted),
            blanked=tuple(c.candidate_id for c in plan.blanked),
        )
