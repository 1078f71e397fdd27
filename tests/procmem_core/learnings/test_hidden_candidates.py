"""Candidate ids are global (``lrn_1``, ``lrn_2``, ...). Before, a principal with no role
in team-a got ``AccessDenied`` naming team-a for team-a's candidate and
``UnknownLearning`` for an id never issued, from ``get``, ``supporter_rows``, ``support``
and ``review``: it learnt which candidates other tenants hold and where. Now
``HiddenLearning`` (an ``UnknownLearning`` and an ``AccessDenied``, one message) answers
both, and nothing changes. Both backends."""

from __future__ import annotations

import pytest

from procmem_core.errors import AccessDenied
from procmem_core.learnings import HiddenLearning, UnknownLearning
from procmem_core.memory import Principal

ALICE = Principal("alice", namespaces={"team-a": "admin"})
MALLORY = Principal("mallory", role="admin", namespaces={"mallory-ns": "admin"})
VIC = Principal("vic", namespaces={"team-a": "viewer"})


def _calls(q, cid):
    return [
        lambda: q.get(cid, principal=MALLORY),
        lambda: q.supporter_rows(cid, principal=MALLORY),
        lambda: q.support(
            cid, principal=MALLORY, user_id="u9", session_id="s9", quotes=["confirm the id"]
        ),
        lambda: q.review(cid, "reject", principal=MALLORY, reason="no"),
    ]


def test_another_tenants_candidate_looks_like_a_missing_one(backend) -> None:
    q = backend.queue
    c = q.propose("always confirm the invoice id", principal=ALICE, namespace="team-a")
    q.support(c.candidate_id, principal=ALICE, user_id="u1", session_id="s1",
              quotes=["confirm the invoice id"])  # fmt: skip
    before = (q.get(c.candidate_id, principal=ALICE), q.supporter_rows(c.candidate_id,
              principal=ALICE))  # fmt: skip
    texts = []
    for cid in (c.candidate_id, "lrn_999"):
        for call in _calls(q, cid):
            with pytest.raises(HiddenLearning) as err:
                call()
            assert isinstance(err.value, UnknownLearning) and isinstance(err.value, AccessDenied)
            assert "team-a" not in str(err.value)
            texts.append(str(err.value).replace(repr(cid), "ID"))
    assert set(texts) == {"no learning ID that principal 'mallory' can read"}
    with pytest.raises(AccessDenied, match="needs role 'admin'"):  # it reads: told its role
        q.review(c.candidate_id, "reject", principal=VIC, reason="no")
    q = backend.reopen().queue
    after = (q.get(c.candidate_id, principal=ALICE), q.supporter_rows(c.candidate_id,
             principal=ALICE))  # fmt: skip
    assert after == before
    with pytest.raises(UnknownLearning) as err:
        q.get("lrn_999", principal=ALICE)
    assert "alice" in str(err.value)


def test_a_pinned_admin_erases_only_its_own_user(backend) -> None:
    """Before, an admin token pinned to u1 erased u2's supporter rows (and u2's pending
    candidate with them); the memory store's erasure refused it likewise now."""
    q = backend.queue
    pinned = Principal("adm-u1", role="admin", read_user_id="u1")
    c = q.propose("always confirm the invoice id", principal=ALICE, namespace="team-a")
    q.support(c.candidate_id, principal=ALICE, user_id="u2", session_id="s2",
              quotes=["confirm the invoice id"])  # fmt: skip
    with pytest.raises(AccessDenied, match="its pin"):
        q.erase_user("u2", principal=pinned)
    assert [r.user_id for r in q.supporter_rows(c.candidate_id, principal=ALICE)] == ["u2"]
    assert q.erase_user("u1", principal=pinned).supporter_rows == 0
