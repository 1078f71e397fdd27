"""learnings.review on real inputs, both stores: destinations and their defaults, lineage,
per-agent serving of a promoted bot rule, re-review as a no-op, rejecting a promoted
candidate, knowledge.delete."""

from __future__ import annotations

import pytest

from procmem_core.errors import ParameterError
from procmem_core.learnings import EVERY_AGENT
from procmem_core.memory import Principal

APP = Principal("support-app", "writer")
ADMIN = Principal("ops-admin", "admin", user_id="admin-1")
VIEWER = Principal("dashboard", "viewer")
RULE = "I always confirm the refund amount before issuing it."


def bot_rule(q, agent="triage", rule=RULE, user="u1"):
    return q.file_agent_rule(
        rule,
        principal=APP,
        agent=agent,
        user_id=user,
        session_id=f"s-{user}",
        quotes=("refund me please",),
    )


def caller(q, kind):
    c = q.propose(f"A {kind} fact about refunds", principal=APP, source_kind=kind)
    return q.support(c.candidate_id, principal=APP, user_id="u1", session_id="s1", quotes=("q",))


DESTINATIONS = [  # kind, destination given, what is written: (type, user_id, source?)
    ("assistant_turn", None, [("knowledge", None, True)]),
    ("assistant_turn", "memory", [("semantic", "-", False)]),
    ("assistant_turn", "both", [("knowledge", None, True), ("semantic", "-", False)]),
    ("supporters", None, [("semantic", None, False)]),
    ("supporters", "knowledge", [("knowledge", None, True)]),
    ("supporters", "both", [("knowledge", None, True), ("semantic", None, False)]),
    ("conversation", None, [("semantic", "admin-1", False)]),
    ("conversation", "both", [("knowledge", None, True), ("semantic", "admin-1", False)]),
]


@pytest.mark.parametrize(("kind", "destination", "expected"), DESTINATIONS)
def test_promotion_writes_where_the_seed_says(backend, kind, destination, expected):
    q = backend.queue
    c = bot_rule(q) if kind == "assistant_turn" else caller(q, kind)
    done = q.review(
        c.candidate_id, "promote", principal=ADMIN, reason="verified", destination=destination
    )
    assert done.changed and done.learning.status == "promoted"
    records = [backend.memory.get(i) for i in done.written]
    got = [(r.memory_type, r.user_id, r.source is not None) for r in records]
    assert got == expected
    for r in records:
        assert r.text == c.text and r.actor == "ops-admin"
        assert r.lineage == (f"learning:{c.candidate_id}",)  # lineage back to the candidate
        if r.source is not None:
            assert r.source == f"learning://{c.candidate_id}"
        assert r.tags == (("agent:triage",) if kind == "assistant_turn" else ())
    decision = done.learning.decision
    assert (decision.decision, decision.reason, decision.reviewer) == (
        "promote",
        "verified",
        "ops-admin",
    )
    assert decision.destination == destination or (
        destination is None and decision.destination in ("knowledge", "memory")
    )
    backend.reopen()
    for r in records:
        assert backend.memory.lineage(r.record_id) == (f"learning:{c.candidate_id}",)
    assert backend.queue.get(c.candidate_id, principal=VIEWER).decision == decision


def test_the_default_destination_is_knowledge_for_a_bot_rule_and_memory_otherwise(backend):
    q = backend.queue
    bot, fact = bot_rule(q), caller(q, "supporters")
    a = q.review(bot.candidate_id, "promote", principal=ADMIN, reason="ok").learning
    b = q.review(fact.candidate_id, "promote", principal=ADMIN, reason="ok").learning
    assert (a.decision.destination, b.decision.destination) == ("knowledge", "memory")


def test_a_conversation_fact_needs_the_approvers_user_id(backend):
    q = backend.queue
    c = caller(q, "conversation")
    nameless = Principal("ops-admin", "admin")
    with pytest.raises(ParameterError, match=r"principal.user_id=None.*approver's user_id"):
        q.review(c.candidate_id, "promote", principal=nameless, reason="ok")
    assert len(backend.memory) == 0
    assert q.get(c.candidate_id, principal=VIEWER).status == "pending"


def test_a_promoted_bot_rule_is_served_to_that_agents_reads_for_every_user(backend):
    q, m = backend.queue, backend.memory
    triage = bot_rule(q, "triage")
    billing = bot_rule(q, "billing", "I never refund without a receipt.")
    for c in (triage, billing):
        q.review(c.candidate_id, "promote", principal=ADMIN, reason="good")
    everyone = q.propose("Refunds are answered within two days", principal=APP, agent=EVERY_AGENT)
    q.review(
        everyone.candidate_id, "promote", principal=ADMIN, reason="policy", destination="knowledge"
    )
    backend.reopen()
    m = backend.memory
    query = "refund the amount receipt"

    def served(agent, user=None):
        return {h.record.text for h in m.search(query, agent=agent, user_id=user, top_k=10)}

    for user in ("u1", "u2", "someone-else"):  # every user of the agent
        assert served("triage", user) == {RULE, everyone.text}
        assert served("billing", user) == {"I never refund without a receipt.", everyone.text}
    assert served("unrelated-bot") == {everyone.text}  # other agents' reads leave it out
    assert served("*") == {RULE, "I never refund without a receipt.", everyone.text}
    assert served("-") == served(None) == {everyone.text}  # a read under no agent
    minted = Principal("minted-u9", "viewer", read_user_id="u9")
    assert {h.record.text for h in m.search(query, agent="triage", principal=minted)} == {
        everyone.text
    }  # a minted pinned token names no agent: no rule promoted for a named bot
    found = {h.record.text for h in m.knowledge_search(query, principal=minted)}
    assert found == {RULE, "I never refund without a receipt.", everyone.text}


def test_reviewing_again_with_the_same_decision_is_a_no_op(backend):
    q = backend.queue
    c = bot_rule(q)
    first = q.review(c.candidate_id, "promote", principal=ADMIN, reason="good")
    n_records = len(backend.memory)
    again = q.review(
        c.candidate_id, "promote", principal=ADMIN, reason="still good", destination="both"
    )
    assert not again.changed and again.written == ()
    assert again.learning == first.learning and len(again.learning.decisions) == 1
    assert len(backend.memory) == n_records
    r = q.propose("a caller fact", principal=APP)
    q.review(r.candidate_id, "reject", principal=ADMIN, reason="wrong")
    assert not q.review(r.candidate_id, "reject", principal=ADMIN, reason="wrong again").changed
    backend.reopen()
    assert len(backend.queue.get(r.candidate_id, principal=VIEWER).decisions) == 1


def test_rejecting_a_promoted_candidate_leaves_what_the_promotion_wrote(backend):
    q = backend.queue
    c = bot_rule(q)
    promoted = q.review(c.candidate_id, "promote", principal=ADMIN, reason="good")
    rejected = q.review(c.candidate_id, "reject", principal=ADMIN, reason="users complained")
    assert rejected.changed and rejected.learning.status == "rejected"
    assert [d.decision for d in rejected.learning.decisions] == ["promote", "reject"]
    (record_id,) = promoted.written
    assert backend.memory.get(record_id).text == RULE
    assert [h.record.text for h in backend.memory.search("confirm the refund", agent="triage")] == [
        RULE
    ]
    # knowledge.delete of the learning://<candidate_id> document stops serving it
    assert backend.memory.delete_source(f"learning://{c.candidate_id}") == 1
    assert backend.memory.search("confirm the refund", agent="triage") == []
    backend.reopen()
    assert backend.queue.list(principal=VIEWER, status="rejected")[0].candidate_id == c.candidate_id


def test_review_refuses_bad_arguments_before_any_write(backend):
    q = backend.queue
    c = bot_rule(q)
    for kwargs, message in (
        ({"decision": "approve", "reason": "x"}, "decision='approve'"),
        ({"decision": "promote", "reason": ""}, "reason=''"),
        ({"decision": "promote", "reason": "x", "destination": "wiki"}, "destination='wiki'"),
        (
            {"decision": "reject", "reason": "x", "destination": "memory"},
            "only with decision='promote'",
        ),
    ):
        decision = kwargs.pop("decision")
        with pytest.raises(ParameterError, match=message):
            q.review(c.candidate_id, decision, principal=ADMIN, **kwargs)
    assert q.get(c.candidate_id, principal=VIEWER).status == "pending"
    assert len(backend.memory) == 0


def test_promotion_needs_a_memory_store():
    from procmem_core.learnings import LearningsQueue, LearningsSettings

    q = LearningsQueue(settings=LearningsSettings(agent_learnings=True))
    c = bot_rule(q)
    with pytest.raises(ParameterError, match=r"memory=None.*MemoryStore"):
        q.review(c.candidate_id, "promote", principal=ADMIN, reason="ok")
    assert q.get(c.candidate_id, principal=VIEWER).status == "pending"


def test_a_supporters_rule_promoted_to_both_keeps_its_knowledge_document(backend):
    """The document and the shared-zone row are two records: the row (user None, as the
    document's) once replaced the document in place (one semantic record, written twice,
    no learning://<id> source to find or delete)."""
    q, m = backend.queue, backend.memory
    c = caller(q, "supporters")
    done = q.review(c.candidate_id, "promote", principal=ADMIN, reason="ok", destination="both")
    assert len(set(done.written)) == 2 and len(m) == 2
    assert [h.record.text for h in m.knowledge_search("supporters fact refunds")] == [c.text]
    assert m.delete_source(f"learning://{c.candidate_id}") == 1
    assert [r.memory_type for r in m.records()] == ["semantic"]  # the shared-zone row stays


def test_rejecting_then_promoting_elsewhere_leaves_the_first_promotion(backend):
    """Seed: rejecting a promoted candidate leaves what the promotion wrote; a second
    promotion to knowledge adds the document beside the first one's shared-zone row."""
    q, m = backend.queue, backend.memory
    c = caller(q, "supporters")
    first = q.review(c.candidate_id, "promote", principal=ADMIN, reason="ok")
    q.review(c.candidate_id, "reject", principal=ADMIN, reason="not now")
    second = q.review(
        c.candidate_id, "promote", principal=ADMIN, reason="yes", destination="knowledge"
    )
    backend.reopen()
    m = backend.memory
    (row,) = first.written
    (doc,) = second.written
    assert row != doc
    assert (m.get(row).memory_type, m.get(row).user_id) == ("semantic", None)
    assert (m.get(doc).memory_type, m.get(doc).source) == (
        "knowledge",
        f"learning://{c.candidate_id}",
    )
