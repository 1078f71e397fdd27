"""Issue 25 items 3 and 7 on the memory store: a pinned token reads only its user's
knowledge rows, namespaces bound every read, the actor is the principal, caps and hostile
keys, and a procedural row that is not a procedure is retyped by ``set`` too (both
backends: the ``backend`` fixture)."""

from __future__ import annotations

import pytest

from procmem_core.errors import AccessDenied, ParameterError, ProcmemError
from procmem_core.limits import MAX_RECORD_TEXT
from procmem_core.memory import RETYPED_TAG, Principal

WRITER = Principal("svc", role="writer")
U1 = Principal("u1-token", role="viewer", read_user_id="u1")


def test_a_token_pinned_to_u1_reads_no_knowledge_row_of_u2(backend):
    m = backend.memory
    m.set("u2's salary is 90k", "knowledge", user_id="u2", principal=WRITER)
    m.set("u1 likes tea", "knowledge", user_id="u1", principal=WRITER)
    m.set("the office opens at 9", "knowledge", principal=WRITER)
    texts = {h.record.text for h in m.knowledge_search("salary tea office", principal=U1)}
    assert texts == {"u1 likes tea", "the office opens at 9"}
    everyone = {h.record.text for h in m.knowledge_search("salary tea office")}
    assert "u2's salary is 90k" in everyone  # auth off: the operator sees every row


def test_a_scoped_principal_reads_only_its_namespaces(backend):
    m = backend.memory
    a = Principal("a", namespaces={"team-a": "writer"})
    b = Principal("b", namespaces={"team-b": "writer"})
    mine = m.set("team a's refund rule", namespace="team-a", principal=a)
    m.set("team b's refund rule", namespace="team-b", principal=b)
    assert [h.record.text for h in m.search("refund rule", principal=a)] == [mine.text]
    assert [r.record_id for r in m.records(principal=a)] == [mine.record_id]
    with pytest.raises(AccessDenied, match="in namespace 'team-b'"):
        m.search("refund rule", namespace="team-b", principal=a)
    with pytest.raises(AccessDenied):
        m.get(mine.record_id, principal=b)
    with pytest.raises(AccessDenied):
        m.delete(mine.record_id, principal=b)
    assert m.get(mine.record_id).text == mine.text  # b changed nothing
    backend.reopen()
    assert [r.text for r in backend.memory.records(principal=a)] == [mine.text]


def test_with_auth_on_the_actor_is_the_principal(backend):
    m = backend.memory
    with pytest.raises(AccessDenied, match="actor 'svc'"):
        m.set("posing as alice", actor="alice", principal=WRITER)
    assert m.set("mine", principal=WRITER).actor == "svc"
    assert m.set("labelled", actor="importer").actor == "importer"  # auth off: a label
    assert len(m) == 2


def test_set_with_procedural_type_retypes_a_text_to_semantic(backend):
    record = backend.memory.set("always check the invoice first", "procedural",
                                tags=["billing"], principal=WRITER)  # fmt: skip
    assert record.memory_type == "semantic"
    assert record.tags == ("billing", RETYPED_TAG)
    assert record.metadata["procedural_body"] == "always check the invoice first"
    backend.reopen()
    assert backend.memory.get(record.record_id).tags == ("billing", RETYPED_TAG)


HOSTILE_KEYS = ["../../etc/passwd", "x'; DROP TABLE memory_records; --", 'a "quoted" key']


@pytest.mark.parametrize("bad", HOSTILE_KEYS)
def test_hostile_keys_are_stored_as_inert_text(backend, bad):
    m = backend.memory
    other = m.set("the other row", key="other", user_id="u9")
    row = m.set("hostile", key=bad, source=bad, user_id=bad, tags=[bad])
    assert (row.key, row.source, row.user_id, row.tags) == (bad, bad, bad, (bad,))
    assert m.delete_source(bad) == 1
    backend.reopen()
    assert [r.to_json() for r in backend.memory.records()] == [other.to_json()]


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("key", {"key": "a\x00b"}),
        ("user_id", {"user_id": "u" * 513}),
        ("actor", {"actor": "line\nbreak"}),
        ("text", {"text": "t" * (MAX_RECORD_TEXT + 1)}),
        ("metadata", {"metadata": {"blob": "m" * 100_000}}),
    ],
)
def test_bad_keys_and_oversized_texts_are_refused_naming_the_field(backend, field, kwargs):
    m = backend.memory
    m.set("kept")
    before = [r.to_json() for r in m.records()]
    call = {"text": "fine", **kwargs}
    with pytest.raises(ParameterError) as err:
        m.set(call.pop("text"), **call)
    assert str(err.value).startswith(field)
    assert len(str(err.value)) < 400
    assert [r.to_json() for r in m.records()] == before


def test_a_queue_candidate_text_is_capped(backend):
    with pytest.raises(ProcmemError, match="text=") as err:
        backend.queue.propose("r" * (MAX_RECORD_TEXT + 1), principal=WRITER)
    assert len(str(err.value)) < 400


@pytest.mark.parametrize(
    "namespaces",
    [("team-a",), (("team-a", "viewer", "x"),), (("team-a", "viewer"), ("team-a", "admin"))],
)
def test_principal_namespaces_as_pairs_must_be_pairs_each_namespace_once(namespaces):
    """``namespaces`` may come as the pairs a ``Principal`` keeps (``dataclasses.replace``
    passes them back): a bare name or a triple raised a bare ValueError (too many values
    to unpack), and a namespace listed twice with two roles was kept, its last role
    winning (``role_in`` gave admin); now a ParameterError naming namespaces."""
    with pytest.raises(ParameterError, match="namespaces"):
        Principal("svc", namespaces=namespaces)


def test_principal_namespaces_as_pairs_are_kept_sorted_as_a_mapping_is():
    """The class keeps a sorted tuple of pairs: the same grants given as unsorted pairs
    are the same principal (they compared unequal and hashed apart)."""
    mapping = Principal("svc", namespaces={"b": "viewer", "a": "admin"})
    pairs = Principal("svc", namespaces=(("b", "viewer"), ("a", "admin")))
    assert pairs == mapping and hash(pairs) == hash(mapping)
    assert pairs.namespaces == (("a", "admin"), ("b", "viewer"))
