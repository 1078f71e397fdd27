"""Where a promotion writes (seed: loom-procedures.txt, ``learnings.review``).

"destination: memory (the shared zone for a supporters candidate, a namespace row under
the approver's user_id for a conversation-seeded fact, the agent's user_id '-' row for a
bot's rule), knowledge or both; unset, knowledge for a bot's rule and memory otherwise."
A knowledge promotion is the document ``learning://<candidate_id>`` (that is its key
too); a memory promotion is a row keyed ``learning:<candidate_id>``. The two keys differ
because a memory key is replaced in place for the same namespace and user, and a
supporters candidate's shared-zone row has the document's user (None): under one key,
``both`` (or a second promotion after a rejection) overwrote the document. Every record a
promotion writes carries the candidate id as lineage (``learning:<candidate_id>``) and,
for a bot's rule, the tag ``agent:<agent>`` (``agent:*`` for a rule for every agent).
"""

from __future__ import annotations

from procmem_core.errors import ParameterError, check_choice
from procmem_core.learnings.candidate import CandidateState
from procmem_core.learnings.records import DESTINATIONS, EVERY_AGENT
from procmem_core.memory import AGENT_USER, MemoryStore, Principal, agent_tag


def default_destination(source_kind: str) -> str:
    """Knowledge for a bot's rule, memory otherwise."""
    return "knowledge" if source_kind == "assistant_turn" else "memory"


def memory_zone(source_kind: str, approver: Principal) -> str | None:
    """The user scope of a memory promotion: the agent's ``-`` row for a bot's rule, the
    shared zone (None) for a supporters candidate, the approver's user for a fact."""
    if source_kind == "assistant_turn":
        return AGENT_USER
    if source_kind == "supporters":
        return None
    if approver.user_id is None:
        raise ParameterError(
            "principal.user_id",
            None,
            "a conversation-seeded fact is promoted to memory under the approver's user_id: "
            "give the reviewing principal a user_id",
        )
    return approver.user_id


def check_destination(decision: str, destination: str | None) -> None:
    """A destination is given only with a promotion, and is one of ``DESTINATIONS``."""
    if destination is not None and decision != "promote":
        raise ParameterError("destination", destination, "only with decision='promote'")
    if destination is not None:
        check_choice("destination", destination, DESTINATIONS)


def promote(
    memory: MemoryStore | None,
    c: CandidateState,
    destination: str | None,
    principal: Principal,
    reason: str,
) -> tuple[str, tuple[str, ...]]:
    """Promote ``c`` to ``destination`` (unset: ``default_destination``); returns the
    destination and the ids written. A rule blanked by a user erasure is refused."""
    if not c.text:
        raise ParameterError(
            "candidate_id",
            c.candidate_id,
            "its rule was blanked by a user erasure: nothing to promote",
        )
    destination = destination or default_destination(c.source_kind)
    return destination, publish(memory, c, destination, principal, reason)


def publish(
    memory: MemoryStore | None,
    c: CandidateState,
    destination: str,
    principal: Principal,
    reason: str,
) -> tuple[str, ...]:
    """Write the promoted rule to ``destination``; returns the ids of the records written.
    Every check comes first, so a refused promotion writes nothing."""
    if memory is None:
        raise ParameterError(
            "memory", None, "a MemoryStore to promote into (LearningsQueue(memory=...))"
        )
    zone = memory_zone(c.source_kind, principal) if destination != "knowledge" else None
    if c.agent is None:
        tags: tuple[str, ...] = ()
    else:
        tags = ("agent:*",) if c.agent == EVERY_AGENT else (agent_tag(c.agent),)
    common = {
        "namespace": c.namespace,
        "tags": tags,
        "actor": principal.name,
        "lineage": (f"learning:{c.candidate_id}",),
        "metadata": {
            "candidate_id": c.candidate_id,
            "source_kind": c.source_kind,
            "reason": reason,
        },
    }
    written = []
    if destination in ("knowledge", "both"):
        source = f"learning://{c.candidate_id}"
        doc = memory.set(c.text, "knowledge", key=source, source=source, **common)
        written.append(doc.record_id)
    if destination in ("memory", "both"):
        key = f"learning:{c.candidate_id}"
        written.append(memory.set(c.text, "semantic", key=key, user_id=zone, **common).record_id)
    return tuple(written)
