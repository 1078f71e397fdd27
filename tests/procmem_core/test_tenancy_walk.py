"""Issue 25 item 3: every public method of the three stores (``ProcedureStore``,
``MemoryStore``, ``LearningsQueue``), called by a principal that lacks the namespace or
the role, is refused: it raises ``AccessDenied`` or returns nothing of the namespace, and
a dump of every store (and, on SQLite, of the whole file) is the same before and after.
Both backends (``backend`` fixture)."""

from __future__ import annotations

import inspect
import sqlite3

import pytest

from procmem_core.errors import AccessDenied
from procmem_core.graph import ProcedureStore
from procmem_core.learnings import STATUSES, LearningsQueue
from procmem_core.memory import MemoryStore, Principal

STEPS = ["look up the invoice", "check the refund policy window", "issue or decline"]
SITUATION = "a customer asks for a refund on a paid invoice"
TEAM, REF = "team-a", "team-a/procedure_refund"
ROOT = Principal("root", role="admin")
ALICE = Principal("alice", namespaces={TEAM: "admin"})
M_MALLORY = Principal("mallory", role="admin", namespaces={"mallory-ns": "admin"})
M_VIC = Principal("vic", namespaces={TEAM: "viewer"})
M_WALT = Principal("walt", namespaces={TEAM: "writer"})
NEW_GRAPH = {"nodes": [{"id": "a"}, {"id": "b"}], "edges": [{"src": "a", "dst": "b"}]}


def _erased(e) -> int:
    return e.supporter_rows + len(e.deleted) + len(e.blanked)


def seed(b) -> dict:
    """Team-a's procedure (with runs and a gate decision), memory rows and a candidate."""
    ps = b.procedures
    ps.grant("alice", TEAM, "admin")
    ps.grant("vic", TEAM, "viewer")
    ps.grant("walt", TEAM, "writer")
    ps.grant("mallory", "mallory-ns", "admin")
    ps.add("refund", SITUATION, STEPS, namespace=TEAM, principal="alice")
    for ok in (True, True, False, True):
        ps.record_run(REF, ["n1", "n2", "n3"], ok=ok, principal="alice")
    ps.evolve(REF, principal="alice")
    ps.revise(REF, NEW_GRAPH, "shorter", principal="alice")
    ps.record_run(REF, ["a", "b"], ok=True, principal="alice")
    ps.evolve(REF, principal="alice")
    ps.log_pack("s1", REF, False, 0.1, [REF], time=0, user_id="u1", principal="alice")
    m = b.memory
    row = m.set("refunds within 30 days", namespace=TEAM, principal=ALICE, user_id="u1")
    know = m.set("refund policy text", "knowledge", namespace=TEAM, principal=ALICE,
                 source="doc://refunds")  # fmt: skip
    c = b.queue.propose("always confirm the invoice id", principal=ALICE, namespace=TEAM)
    b.queue.support(c.candidate_id, principal=ALICE, user_id="u1", session_id="s1",
                    quotes=["confirm the invoice id"])  # fmt: skip
    return {"row": row.record_id, "know": know.record_id, "cand": c.candidate_id}


def dump(b) -> str:
    """Everything the three stores hold, read with auth off (and the SQLite file)."""
    ps = b.procedures
    procs = [(p, ps.runs(p.ref), ps.revisions(p.ref)) for p in ps.list()]
    roles = {who: ps.roles_of(who) for who in ("alice", "vic", "walt", "mallory", "zed")}
    mem = [r.to_json() for r in b.memory.records()]
    cands = [
        (c, b.queue.supporter_rows(c.candidate_id, principal=ROOT))
        for s in STATUSES
        for c in b.queue.list(principal=ROOT, status=s)
    ]
    text = repr((procs, ps.gate_decisions(), roles, mem, cands, ps.pack_log()))
    if b.path is not None:
        with sqlite3.connect(b.path) as conn:
            text += "\n".join(conn.iterdump())
    return text


# (store method, who, call, expected: "deny" raises AccessDenied, "empty" returns nothing)
PROCEDURE_CALLS = [
    (
        "log_pack",
        "mallory",
        lambda b, c: b.procedures.log_pack("s2", REF, True, 0.1, principal="mallory"),
        "deny",
    ),
    (
        "rate_session",
        "mallory",
        lambda b, c: b.procedures.rate_session("s1", 1, principal="mallory"),
        "deny",
    ),
    (
        "rate_session",
        "vic",
        lambda b, c: b.procedures.rate_session("s1", 1, principal="vic"),
        "deny",
    ),
    ("pack_log", "mallory", lambda b, c: b.procedures.pack_log(principal="mallory"), "empty"),
    (
        "add",
        "mallory",
        lambda b, c: b.procedures.add("x", SITUATION, STEPS, namespace=TEAM, principal="mallory"),
        "deny",
    ),
    (
        "add",
        "vic",
        lambda b, c: b.procedures.add("x", SITUATION, STEPS, namespace=TEAM, principal="vic"),
        "deny",
    ),
    (
        "match",
        "mallory",
        lambda b, c: b.procedures.match(SITUATION, namespace=TEAM, principal="mallory"),
        "deny",
    ),
    ("match", "mallory", lambda b, c: b.procedures.match(SITUATION, principal="mallory"), "empty"),
    (
        "match",
        "mallory",
        lambda b, c: b.procedures.match(SITUATION, namespace_scope="all_mine", principal="mallory"),
        "empty",
    ),
    (  # a request prepared for a namespace she lacks is refused when it is ranked
        "match_request",
        "mallory",
        lambda b, c: b.procedures.match_request(
            b.procedures.prepare_match(SITUATION, namespace=TEAM, principal="mallory")
        ),
        "deny",
    ),
    (
        "match_request",
        "mallory",
        lambda b, c: b.procedures.match_request(
            b.procedures.prepare_match(SITUATION, principal="mallory")
        ),
        "empty",
    ),
    (
        "match_request",
        "mallory",
        lambda b, c: b.procedures.match_request(
            b.procedures.prepare_match(SITUATION, namespace_scope="all_mine", principal="mallory")
        ),
        "empty",
    ),
    ("locate", "mallory", lambda b, c: b.procedures.locate(REF, principal="mallory"), "deny"),
    ("list", "mallory", lambda b, c: b.procedures.list(principal="mallory"), "empty"),
    (
        "list",
        "mallory",
        lambda b, c: b.procedures.list(namespace=TEAM, principal="mallory"),
        "deny",
    ),
    ("get", "mallory", lambda b, c: b.procedures.get(REF, principal="mallory"), "deny"),
    ("status", "mallory", lambda b, c: b.procedures.status(REF, principal="mallory"), "deny"),
    (
        "live_revisions",
        "mallory",
        lambda b, c: b.procedures.live_revisions(REF, principal="mallory"),
        "deny",
    ),
    ("runs", "mallory", lambda b, c: b.procedures.runs(REF, principal="mallory"), "deny"),
    ("traces", "mallory", lambda b, c: b.procedures.traces(REF, principal="mallory"), "deny"),
    ("revisions", "mallory", lambda b, c: b.procedures.revisions(REF, principal="mallory"), "deny"),
    (
        "gate_decisions",
        "mallory",
        lambda b, c: b.procedures.gate_decisions(REF, principal="mallory"),
        "deny",
    ),
    (
        "gate_decisions",
        "mallory",
        lambda b, c: b.procedures.gate_decisions(principal="mallory"),
        "empty",
    ),
    ("releases", "mallory", lambda b, c: b.procedures.releases(REF, principal="mallory"), "deny"),
    ("releases", "mallory", lambda b, c: b.procedures.releases(principal="mallory"), "empty"),
    (
        "namespaces_of",
        "mallory",
        lambda b, c: [n for n in b.procedures.namespaces_of("mallory") if n == TEAM],
        "empty",
    ),
    (
        "roles_of",
        "mallory",
        lambda b, c: {n: r for n, r in b.procedures.roles_of("mallory").items() if n == TEAM},
        "empty",
    ),
    (
        "record_run",
        "mallory",
        lambda b, c: b.procedures.record_run(REF, ["a"], ok=False, principal="mallory"),
        "deny",
    ),
    (
        "record_run",
        "vic",
        lambda b, c: b.procedures.record_run(REF, ["a"], ok=False, principal="vic"),
        "deny",
    ),
    (
        "complete_run",
        "vic",
        lambda b, c: b.procedures.complete_run([REF], ok=False, principal="vic"),
        "deny",
    ),
    ("evolve", "vic", lambda b, c: b.procedures.evolve(REF, principal="vic"), "deny"),
    (
        "revise",
        "vic",
        lambda b, c: b.procedures.revise(REF, NEW_GRAPH, "r", force=True, principal="vic"),
        "deny",
    ),
    (
        "fork",
        "mallory",
        lambda b, c: b.procedures.fork(REF, "mallory-ns", principal="mallory"),
        "deny",
    ),
    ("fork", "vic", lambda b, c: b.procedures.fork(REF, "vic-ns", principal="vic"), "deny"),
    ("delete", "vic", lambda b, c: b.procedures.delete(REF, principal="vic"), "deny"),
    ("grant", "walt", lambda b, c: b.procedures.grant("zed", TEAM, "viewer", by="walt"), "deny"),
    (
        "grant",
        "mallory",
        lambda b, c: b.procedures.grant("mallory", TEAM, "admin", by="mallory"),
        "deny",
    ),
]
MEMORY_CALLS = [
    ("set", "mallory", lambda b, c: b.memory.set("x", namespace=TEAM, principal=M_MALLORY), "deny"),
    ("set", "vic", lambda b, c: b.memory.set("x", namespace=TEAM, principal=M_VIC), "deny"),
    (
        "set_procedural",
        "vic",
        lambda b, c: b.memory.set_procedural(
            {"name": "p", "situation": "s", "steps": ["a", "b"]}, namespace=TEAM, principal=M_VIC
        ),
        "deny",
    ),
    ("delete", "vic", lambda b, c: b.memory.delete(c["row"], principal=M_VIC), "deny"),
    ("delete", "mallory", lambda b, c: b.memory.delete(c["row"], principal=M_MALLORY), "deny"),
    (
        "delete_source",
        "mallory",
        lambda b, c: b.memory.delete_source("doc://refunds", principal=M_MALLORY),
        "empty",
    ),
    (
        "delete_source",
        "vic",
        lambda b, c: b.memory.delete_source("doc://refunds", principal=M_VIC),
        "deny",
    ),
    ("erase_user", "mallory", lambda b, c: b.memory.erase_user("u1", principal=M_MALLORY), "empty"),
    ("erase_user", "walt", lambda b, c: b.memory.erase_user("u1", principal=M_WALT), "deny"),
    ("get", "mallory", lambda b, c: b.memory.get(c["row"], principal=M_MALLORY), "deny"),
    ("lineage", "mallory", lambda b, c: b.memory.lineage(c["know"], principal=M_MALLORY), "deny"),
    ("records", "mallory", lambda b, c: b.memory.records(principal=M_MALLORY), "empty"),
    (
        "records",
        "mallory",
        lambda b, c: b.memory.records(namespace=TEAM, principal=M_MALLORY),
        "deny",
    ),
    ("search", "mallory", lambda b, c: b.memory.search("refund", principal=M_MALLORY), "empty"),
    (
        "search",
        "mallory",
        lambda b, c: b.memory.search("refund", namespace=TEAM, principal=M_MALLORY),
        "deny",
    ),
    (
        "knowledge_search",
        "mallory",
        lambda b, c: b.memory.knowledge_search("refund", principal=M_MALLORY),
        "empty",
    ),
    (
        "knowledge_search",
        "mallory",
        lambda b, c: b.memory.knowledge_search("refund", namespace=TEAM, principal=M_MALLORY),
        "deny",
    ),
]
QUEUE_CALLS = [
    (
        "propose",
        "mallory",
        lambda b, c: b.queue.propose("x", principal=M_MALLORY, namespace=TEAM),
        "deny",
    ),
    ("propose", "vic", lambda b, c: b.queue.propose("x", principal=M_VIC, namespace=TEAM), "deny"),
    (
        "support",
        "vic",
        lambda b, c: b.queue.support(
            c["cand"], principal=M_VIC, user_id="u2", session_id="s2", quotes=["q"]
        ),
        "deny",
    ),
    (
        "file_agent_rule",
        "vic",
        lambda b, c: b.queue.file_agent_rule(
            "I always confirm",
            principal=M_VIC,
            agent="bot",
            user_id="u2",
            session_id="s2",
            quotes=["q"],
            namespace=TEAM,
        ),
        "deny",
    ),
    ("get", "mallory", lambda b, c: b.queue.get(c["cand"], principal=M_MALLORY), "deny"),
    (
        "supporter_rows",
        "mallory",
        lambda b, c: b.queue.supporter_rows(c["cand"], principal=M_MALLORY),
        "deny",
    ),
    ("list", "mallory", lambda b, c: b.queue.list(principal=M_MALLORY), "empty"),
    ("list", "mallory", lambda b, c: b.queue.list(principal=M_MALLORY, namespace=TEAM), "deny"),
    (
        "quality",
        "mallory",
        lambda b, c: b.queue.quality(principal=M_MALLORY, source_kind="supporters"),
        "empty",
    ),
    (
        "quality",
        "mallory",
        lambda b, c: b.queue.quality(principal=M_MALLORY, namespace=TEAM),
        "deny",
    ),
    (
        "review",
        "walt",
        lambda b, c: b.queue.review(c["cand"], "promote", principal=M_WALT, reason="ok"),
        "deny",
    ),
    (
        "review",
        "mallory",
        lambda b, c: b.queue.review(c["cand"], "reject", principal=M_MALLORY, reason="no"),
        "deny",
    ),
    (
        "erase_user",
        "mallory",
        lambda b, c: _erased(b.queue.erase_user("u1", principal=M_MALLORY)),
        "empty",
    ),
    ("erase_user", "walt", lambda b, c: b.queue.erase_user("u1", principal=M_WALT), "deny"),
]
CALLS = (
    [("ProcedureStore", *c) for c in PROCEDURE_CALLS]
    + [("MemoryStore", *c) for c in MEMORY_CALLS]
    + [("LearningsQueue", *c) for c in QUEUE_CALLS]
)
# opening and closing a file read no tenant's rows; prepare_match checks its arguments and
# embeds the situation, reading no row (the request is checked where it is ranked,
# match_request, walked above)
NOT_DATA = {"open", "close", "prepare_match"}


def _public(cls: type) -> set[str]:
    return {
        n for n, v in inspect.getmembers(cls) if not n.startswith("_") and callable(v)
    } - NOT_DATA


@pytest.mark.parametrize(
    ("cls", "calls"),
    [(ProcedureStore, PROCEDURE_CALLS), (MemoryStore, MEMORY_CALLS),
     (LearningsQueue, QUEUE_CALLS)],
)  # fmt: skip
def test_the_walk_covers_every_public_method(cls, calls):
    assert _public(cls) == {name for name, *_ in calls}


def _nothing(result) -> bool:
    if isinstance(result, tuple) and result and hasattr(result[0], "namespace"):
        return all(q.namespace != TEAM for q in result)  # quality rows of other namespaces
    return result in ((), [], {}, 0)


@pytest.mark.parametrize(
    ("store", "method", "who", "call", "expected"),
    CALLS,
    ids=[f"{s}.{m}-{w}-{e}-{i}" for i, (s, m, w, _, e) in enumerate(CALLS)],
)
def test_a_principal_lacking_the_namespace_or_role_is_refused_and_changes_nothing(
    backend, store, method, who, call, expected
):
    ids = seed(backend)
    before = dump(backend)
    if expected == "deny":
        with pytest.raises(AccessDenied) as err:
            call(backend, ids)
        assert who in str(err.value)
    else:
        assert _nothing(call(backend, ids))
    assert dump(backend) == before
    backend.reopen()
    assert dump(backend) == before
