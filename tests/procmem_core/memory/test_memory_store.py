"""The record store on real inputs, in memory and on SQLite (``backend``): typed records,
search (reflections only when asked for), keyed writes, per-agent serving, user scope,
roles, pins, lineage, knowledge.delete, erasure, reopening, and bad input."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.graph import HashingEmbedder
from procmem_core.memory import (
    AccessDenied,
    MemoryStore,
    Principal,
    UnknownRecord,
    serves_agent,
)

FACTS = (
    "The customer's invoices are paid by bank transfer on the first of the month",
    "Refunds for annual plans are prorated by the number of unused months",
    "The finance team closes the books on the fifth working day",
)


def ids(hits):
    return [h.record.record_id for h in hits]


def test_search_ranks_by_cosine_similarity_and_reopens_alike(backend):
    written = [backend.memory.set(t, namespace="billing") for t in FACTS]
    query = "how are refunds of an annual plan prorated"
    hits = backend.memory.search(query)
    assert ids(hits)[0] == written[1].record_id
    emb = HashingEmbedder()
    q = emb.embed([query])[0]
    want = [float(emb.embed([t])[0] @ q) for t in FACTS]  # the reference: plain cosines
    got = {h.record.record_id: h.score for h in hits}
    for record, score in zip(written, want, strict=True):
        if score > 0:
            assert got[record.record_id] == pytest.approx(score, abs=1e-6)
    assert ids(backend.memory.search(query, top_k=1)) == [written[1].record_id]
    before = [(h.record, h.score) for h in hits]
    backend.reopen()
    assert [(h.record, h.score) for h in backend.memory.search(query)] == before
    assert backend.memory.get(written[2].record_id).text == FACTS[2]


def test_unfiltered_search_never_returns_a_reflection(backend):
    m = backend.memory
    fact = m.set("Refund requests need the invoice number first")
    lesson = m.set("What failed: the refund was issued before the invoice number", "reflection")
    query = "refund invoice number"
    assert ids(m.search(query, top_k=10)) == [fact.record_id]
    assert ids(m.search(query, "reflection")) == [lesson.record_id]
    assert ids(m.search(query, "semantic")) == [fact.record_id]
    assert m.search(query, "reflection")[0].score > 0.3  # embedded like any record
    backend.reopen()
    assert ids(backend.memory.search(query, top_k=10)) == [fact.record_id]
    assert ids(backend.memory.search(query, "reflection")) == [lesson.record_id]


def test_equal_scores_return_the_oldest_first(backend):
    a = backend.memory.set("the same words")
    b = backend.memory.set("the same words")
    assert ids(backend.memory.search("the same words")) == [a.record_id, b.record_id]


def test_a_key_is_written_in_place_per_user(backend):
    m = backend.memory
    first = m.set("prefers email", key="contact", user_id="u1")
    other = m.set("prefers phone", key="contact", user_id="u2")
    again = m.set("prefers chat", key="contact", user_id="u1")
    assert again.record_id == first.record_id and again.seq == first.seq
    assert len(m) == 2 and other.record_id != first.record_id
    backend.reopen()
    assert backend.memory.get(first.record_id).text == "prefers chat"
    assert backend.memory.search("prefers chat")[0].record.text == "prefers chat"


def test_user_rows_are_read_by_their_user_shared_and_agent_rows_by_everyone(backend):
    m = backend.memory
    mine = m.set("u1 is on the annual plan", user_id="u1")
    shared = m.set("the annual plan renews in March")
    agent_row = m.set("the annual plan bot answers in bullet points", user_id="-")
    query = "annual plan"
    assert set(ids(m.search(query, user_id="u1"))) == {
        mine.record_id,
        shared.record_id,
        agent_row.record_id,
    }
    assert set(ids(m.search(query, user_id="u2"))) == {shared.record_id, agent_row.record_id}
    assert len(m.search(query)) == 3  # a read naming no user (an admin's view)
    pinned = Principal("mobile-u2", "viewer", read_user_id="u2")
    assert set(ids(m.search(query, principal=pinned, user_id="u1"))) == {
        shared.record_id,
        agent_row.record_id,
    }  # a pinned token reads as its user, whatever the body says


SERVING = [  # record tags, reader agent, served
    ((), "triage", True),
    ((), None, True),
    (("agent:*",), "-", True),
    (("agent:*",), "billing", True),
    (("agent:triage",), "triage", True),
    (("agent:triage",), "*", True),
    (("agent:triage",), "billing", False),
    (("agent:triage",), "-", False),
    (("agent:triage",), None, False),
]


@pytest.mark.parametrize(("tags", "reader", "served"), SERVING)
def test_serves_agent_table(tags, reader, served):
    assert serves_agent(tags, reader) is served


def test_rules_tagged_for_an_agent_are_served_to_that_agent_only(backend):
    m = backend.memory
    rule = m.set("always confirm the refund amount", "knowledge", tags=["agent:triage"])
    everyone = m.set("always confirm the refund window", "knowledge", tags=["agent:*"])
    q = "always confirm the refund"
    assert set(ids(m.search(q, agent="triage"))) == {rule.record_id, everyone.record_id}
    assert ids(m.search(q, agent="billing")) == [everyone.record_id]
    assert ids(m.search(q, agent="-")) == [everyone.record_id]
    assert set(ids(m.search(q, agent="*"))) == {rule.record_id, everyone.record_id}
    assert set(ids(m.knowledge_search(q))) == {rule.record_id, everyone.record_id}
    # a pinned token acts as the agent it names, never the body's agent
    token = Principal("triage-u1", "viewer", read_user_id="u1", agent="triage")
    assert rule.record_id in ids(m.search(q, agent="billing", principal=token))
    minted = Principal("minted-u1", "viewer", read_user_id="u1")  # a pin naming no agent
    assert ids(m.search(q, agent="triage", principal=minted)) == [everyone.record_id]
    unpinned = Principal("service", "viewer")  # acts as the body's agent
    assert ids(m.search(q, agent="billing", principal=unpinned)) == [everyone.record_id]
    assert set(ids(m.knowledge_search(q, principal=minted))) == {
        rule.record_id,
        everyone.record_id,
    }  # knowledge.search is not filtered by agent


def test_roles_are_checked_with_a_clear_error(backend):
    viewer = Principal("reader", "viewer")
    with pytest.raises(
        AccessDenied,
        match=r"memory.set is refused for principal 'reader'.*"
        r"needs role 'writer' or higher.*role 'viewer'",
    ):
        backend.memory.set("anything", principal=viewer)
    writer = Principal("app", "writer")
    record = backend.memory.set("a fact", principal=writer)
    assert record.actor == "app"
    with pytest.raises(AccessDenied, match="needs role 'admin'"):
        backend.memory.erase_user("u1", principal=writer)
    assert len(backend.memory.search("a fact", principal=viewer)) == 1
    assert len(backend.memory) == 1


def test_lineage_delete_source_and_erasure(backend):
    m = backend.memory
    doc = m.set("rule", "knowledge", source="learning://lrn_1", lineage=["learning:lrn_1"])
    copy = m.set("rule copy", "knowledge", source="learning://lrn_1")
    keep = m.set("another rule", "knowledge", source="learning://lrn_2")
    assert m.lineage(doc.record_id) == ("learning:lrn_1",)
    assert m.delete_source("learning://lrn_1") == 2
    with pytest.raises(UnknownRecord, match=doc.record_id):
        m.get(doc.record_id)
    u = m.set("u7 lives in Pune", user_id="u7")
    assert m.erase_user("u7") == 1
    backend.reopen()
    m = backend.memory
    assert [r.record_id for r in m.records()] == [keep.record_id]
    for gone in (doc, copy, u):
        with pytest.raises(UnknownRecord):
            m.get(gone.record_id)
    fresh = m.set("after reopening")
    assert fresh.record_id not in {doc.record_id, copy.record_id, keep.record_id, u.record_id}


def test_one_sqlite_file_holds_procedures_and_memory_in_their_own_tables(backend):
    if backend.kind != "sqlite":
        pytest.skip("the shared file is the SQLite backend")
    proc = backend.procedures.add("refund", "a customer asks for a refund", ["look up", "pay"])
    rec = backend.memory.set("refunds take five days")
    backend.reopen()
    assert backend.procedures.get(proc.key).situation == "a customer asks for a refund"
    assert backend.memory.get(rec.record_id).text == "refunds take five days"
    tables = {
        r[0]
        for r in sqlite3.connect(backend.path).execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
        )
    }
    assert {"procedures", "runs", "memory_records", "learnings_queue"} <= tables


class Wide:
    """An embedder returning the wrong width: refused with the shape it returned."""

    dim = 16

    def embed(self, texts):
        return np.ones((len(texts), 3))


BAD = [
    (lambda m: m.set(""), "text=''"),
    (lambda m: m.set("x", "opinion"), "memory_type='opinion'"),
    (lambda m: m.set("x", namespace="has space"), "namespace='has space'"),
    (lambda m: m.set("x", tags="one"), "tags='one'"),
    (lambda m: m.set("x", lineage="run:1"), "lineage='run:1'"),
    (lambda m: m.set("x", metadata={"f": object()}), "metadata="),
    (lambda m: m.search(""), "query=''"),
    (lambda m: m.search("x", top_k=0), "top_k=0"),
    (lambda m: m.search("x", "opinion"), "memory_type='opinion'"),
    (lambda m: m.set("x", principal="root"), "principal='root'"),
]


@pytest.mark.parametrize(("call", "message"), BAD)
def test_bad_input_is_refused_naming_field_and_value(backend, call, message):
    with pytest.raises(ParameterError, match=message.replace("(", r"\(")):
        call(backend.memory)
    assert len(backend.memory) == 0


def test_bad_stores_and_principals_are_refused():
    with pytest.raises(ParameterError, match="embedder"):
        MemoryStore(embedder="words")
    with pytest.raises(ParameterError, match=r"embed\(\) returned shape \(1, 3\)"):
        MemoryStore(embedder=Wide()).set("x")
    with pytest.raises(ParameterError, match="role='root'"):
        Principal("x", "root")
    with pytest.raises(ParameterError, match="name=''"):
        Principal("")
