"""A user erasure (seed: "deletes that user's supporter rows, and their quotes with them.
A candidate left with no supporter is deleted when pending. When decided, it keeps its
status row with the rule blanked, so a rejected rule never comes back as pending." and
"A bot's rule whose last supporter was erased answers 404, as a missing candidate
does."), on real inputs, in memory and on SQLite."""

from __future__ import annotations

import sqlite3

import pytest

from procmem_core.errors import ParameterError
from procmem_core.learnings import UnknownLearning
from procmem_core.memory import Principal

APP = Principal("support-app", "writer")
ADMIN = Principal("ops-admin", "admin", user_id="admin-1")
VIEWER = Principal("dashboard", "viewer")
FACT = "Invoices above 10k EUR need a second approver"
RULE = "I always confirm the refund amount before issuing it."


def supported(q, text, users):
    c = q.propose(text, principal=APP)
    for i, user in enumerate(users):
        c = q.support(
            c.candidate_id,
            principal=APP,
            user_id=user,
            session_id=f"s{i}",
            quotes=(f"{user} said: secret words {i}",),
            confidence=0.5 + 0.1 * i,
        )
    return c


def test_erasure_deletes_the_users_rows_and_quotes_and_moves_the_rationale(backend):
    q = backend.queue
    c = supported(q, FACT, ["u1", "u2", "u1", "u3"])
    assert c.rationale == ("u1 said: secret words 0",)
    gone = q.erase_user("u1", principal=ADMIN)
    assert (gone.supporter_rows, gone.deleted, gone.blanked) == (2, (), ())
    after = q.get(c.candidate_id, principal=VIEWER)
    assert after.supporters == ("u2", "u3") and after.supporter_sessions == 2
    assert after.rationale == ("u2 said: secret words 1",)  # the earliest remaining supporter
    assert after.confidence_avg == pytest.approx((0.6 + 0.8) / 2)
    backend.reopen()
    assert backend.queue.get(c.candidate_id, principal=VIEWER) == after
    if backend.kind == "sqlite":
        text = " ".join(
            b
            for (b,) in sqlite3.connect(backend.path).execute(
                "SELECT body FROM learnings_supporters"
            )
        )
        assert "u1 said" not in text and "u2 said" in text


def test_a_pending_candidate_left_without_a_supporter_is_deleted(backend):
    q = backend.queue
    c = supported(q, FACT, ["u1", "u1"])
    other = supported(q, "another fact", ["u2"])
    gone = q.erase_user("u1", principal=ADMIN)
    assert gone.deleted == (c.candidate_id,)
    for reader in (backend.queue, backend.reopen().queue):
        with pytest.raises(UnknownLearning):
            reader.get(c.candidate_id, principal=VIEWER)
        assert [x.candidate_id for x in reader.list(principal=VIEWER)] == [other.candidate_id]
    again = backend.queue.propose(FACT, principal=APP)  # nothing left of it: a new candidate
    assert again.candidate_id != c.candidate_id and again.status == "pending"


@pytest.mark.parametrize("decision", ["reject", "promote"])
def test_a_decided_candidate_keeps_its_status_row_with_the_rule_blanked(backend, decision):
    q = backend.queue
    c = supported(q, FACT, ["u1"])
    q.review(c.candidate_id, decision, principal=ADMIN, reason="reviewed")
    gone = q.erase_user("u1", principal=ADMIN)
    assert gone.blanked == (c.candidate_id,) and gone.deleted == ()
    backend.reopen()
    q = backend.queue
    status = "rejected" if decision == "reject" else "promoted"
    row = q.get(c.candidate_id, principal=VIEWER)
    assert (row.status, row.text, row.supporter_count, row.rationale) == (status, "", 0, ())
    assert [x.candidate_id for x in q.list(principal=VIEWER, status=status)] == [c.candidate_id]
    assert q.list(principal=VIEWER) == []  # not pending
    if backend.kind == "sqlite":
        (body,) = (
            sqlite3.connect(backend.path).execute("SELECT body FROM learnings_queue").fetchone()
        )
        assert FACT not in body
    # the same rule proposed again comes back to its decided row, never as pending
    back = q.propose(FACT, principal=APP)
    assert back.candidate_id == c.candidate_id and back.status == status and back.text == FACT
    assert q.list(principal=VIEWER) == []


def test_a_blanked_rule_cannot_be_promoted(backend):
    q = backend.queue
    c = supported(q, FACT, ["u5"])
    q.review(c.candidate_id, "reject", principal=ADMIN, reason="no")
    q.erase_user("u5", principal=ADMIN)
    with pytest.raises(ParameterError, match="blanked by a user erasure: nothing to promote"):
        q.review(c.candidate_id, "promote", principal=ADMIN, reason="changed my mind")
    assert q.get(c.candidate_id, principal=VIEWER).status == "rejected"
    assert len(backend.memory) == 0


def test_a_bots_rule_whose_last_supporter_was_erased_answers_not_found(backend):
    q = backend.queue
    c = q.file_agent_rule(
        RULE,
        principal=APP,
        agent="triage",
        user_id="u1",
        session_id="s1",
        quotes=("refund please",),
    )
    done = q.review(c.candidate_id, "promote", principal=ADMIN, reason="good")
    q.erase_user("u1", principal=ADMIN)
    backend.reopen()
    q = backend.queue
    for call in (
        lambda: q.get(c.candidate_id, principal=VIEWER),
        lambda: q.review(c.candidate_id, "reject", principal=ADMIN, reason="x"),
        lambda: q.supporter_rows(c.candidate_id, principal=VIEWER),
    ):
        with pytest.raises(UnknownLearning, match=f"no learning '{c.candidate_id}'"):
            call()
    assert q.list(principal=VIEWER, status="promoted") == []
    (quality,) = q.quality(principal=VIEWER, source_kind="assistant_turn")
    assert quality.promoted == 1  # the decision was made; its status row is kept
    # what the promotion wrote is the rule alone (no user's words): it stays served
    (record_id,) = done.written
    assert backend.memory.get(record_id).text == RULE
    # a session that states the rule again brings the row back, still promoted
    back = q.file_agent_rule(
        RULE, principal=APP, agent="triage", user_id="u2", session_id="s2", quotes=("hello",)
    )
    assert (back.candidate_id, back.status, back.supporters) == (
        c.candidate_id,
        "promoted",
        ("u2",),
    )


def test_erasure_needs_an_admin_and_a_user(backend):
    from procmem_core.memory import AccessDenied

    c = supported(backend.queue, FACT, ["u1"])
    with pytest.raises(AccessDenied, match=r"learnings.erase_user"):
        backend.queue.erase_user("u1", principal=APP)
    with pytest.raises(ParameterError, match="user_id=''"):
        backend.queue.erase_user("", principal=ADMIN)
    assert backend.queue.get(c.candidate_id, principal=VIEWER).supporter_count == 1
