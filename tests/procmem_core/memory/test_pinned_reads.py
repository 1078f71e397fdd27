"""Record ids are global (``mem_1``, ``mem_2``, ...), so a read by id must not tell a
principal what it cannot read. Before, a token pinned to end user u1 read u2's private
row with ``get``, ``lineage`` and ``records`` (``search`` already read as u1), deleted it
with ``delete``, and a pinned admin erased u2; and a principal with no role in team-a got
``AccessDenied`` naming team-a for a row there but ``UnknownRecord`` for a missing id, so
it learnt which ids exist and in which namespace. Now ``HiddenRecord`` (both an
``UnknownRecord`` and an ``AccessDenied``) answers all of these alike. Both backends."""

from __future__ import annotations

import pytest

from procmem_core.errors import AccessDenied
from procmem_core.memory import HiddenRecord, Principal, UnknownRecord

ROOT = Principal("root", role="admin")
PIN_U1 = Principal("tok-u1", role="writer", read_user_id="u1")
PIN_ADMIN_U1 = Principal("adm-u1", role="admin", read_user_id="u1")
MALLORY = Principal("mallory", role="admin", namespaces={"mallory-ns": "admin"})


def _seed(b) -> dict:
    m = b.memory
    return {
        "u2": m.set("u2 salary 90k", namespace="team-a", principal=ROOT, user_id="u2").record_id,
        "u1": m.set("u1 note", namespace="team-a", principal=ROOT, user_id="u1").record_id,
        "shared": m.set(
            "refund policy", "knowledge", namespace="team-a", principal=ROOT, source="doc://r"
        ).record_id,
        "u2doc": m.set(
            "u2's upload", "knowledge", namespace="team-a", principal=ROOT, user_id="u2",
            source="doc://r",
        ).record_id,
    }  # fmt: skip


def _texts(records) -> list[str]:
    return [r.text for r in records]


def test_a_pinned_token_reads_and_removes_only_its_users_rows(backend) -> None:
    ids = _seed(backend)
    m = backend.memory
    assert _texts(m.records(principal=PIN_U1)) == ["u1 note", "refund policy"]
    assert m.get(ids["u1"], principal=PIN_U1).text == "u1 note"
    assert m.get(ids["shared"], principal=PIN_U1).text == "refund policy"
    for call in (m.get, m.lineage, m.delete):
        with pytest.raises(HiddenRecord, match="tok-u1"):
            call(ids["u2"], principal=PIN_U1)
    with pytest.raises(AccessDenied, match="its pin"):
        m.erase_user("u2", principal=PIN_ADMIN_U1)
    assert m.delete_source("doc://r", principal=PIN_U1) == 1  # the shared row, not u2's
    backend.reopen()
    m = backend.memory
    assert _texts(m.records()) == ["u2 salary 90k", "u1 note", "u2's upload"]
    assert m.erase_user("u1", principal=PIN_ADMIN_U1) == 1
    assert _texts(backend.reopen().memory.records()) == ["u2 salary 90k", "u2's upload"]


def test_a_missing_id_and_an_unreadable_one_look_alike(backend) -> None:
    ids = _seed(backend)
    m = backend.memory
    errors = []
    for record_id in (ids["u2"], "mem_999"):
        with pytest.raises(HiddenRecord) as err:
            m.get(record_id, principal=MALLORY)
        errors.append(str(err.value).replace(record_id, "ID"))
        assert isinstance(err.value, UnknownRecord) and isinstance(err.value, AccessDenied)
        assert "team-a" not in str(err.value)
    assert errors[0] == errors[1] == "no memory record 'ID' that principal 'mallory' can read"
    with pytest.raises(UnknownRecord) as err:  # auth off: the plain error
        m.get("mem_999")
    assert type(err.value) is UnknownRecord


def test_a_pinned_token_writes_no_other_users_row(backend) -> None:
    """A token pinned to u1 speaks for u1 only: before, ``set(..., key=, user_id="u2")``
    replaced u2's private keyed row in place (its text became the token's) and a row under
    u2 was created for u2's reads. Now both are refused and nothing changes; its own user,
    the shared zone and the agent's row (what it reads and may delete) are still written."""
    m = backend.memory
    held = m.set("u2 salary 90k", key="profile", namespace="team-a", principal=ROOT, user_id="u2")
    for key in ("profile", None):
        with pytest.raises(AccessDenied, match="its pin"):
            m.set("rewritten by u1's token", key=key, namespace="team-a", user_id="u2",
                  principal=PIN_U1)  # fmt: skip
        with pytest.raises(AccessDenied, match="its pin"):
            m.set_procedural("not a body", namespace="team-a", user_id="u2", principal=PIN_U1)
    assert [(r.record_id, r.user_id, r.text) for r in backend.reopen().memory.records()] == [
        (held.record_id, "u2", "u2 salary 90k")
    ]
    m = backend.memory
    written = [m.set(f"as {u}", namespace="team-a", user_id=u, principal=PIN_U1).user_id
               for u in ("u1", None, "-")]  # fmt: skip
    assert written == ["u1", None, "-"]
