"""Issue 25 item 3 on the procedure store: a principal bounds what it reads, the seed's role
table, the actor is the principal, granting needs admin, caps on every text, and hostile
keys and names change nothing (both backends: the ``store`` fixture)."""

from __future__ import annotations

import sqlite3

import pytest

from procmem_core.errors import AccessDenied, ParameterError, ProcmemError
from procmem_core.graph import ContextPacker, ProcedureStore, UnknownProcedure
from procmem_core.limits import MAX_IDENTIFIER, MAX_SITUATION

pytestmark = pytest.mark.store_backends("memory", "sqlite", "postgresql")

STEPS = ["look up the invoice", "check the refund policy window", "issue or decline"]
SITUATION = "a customer asks for a refund on a paid invoice"
GRAPH = {"nodes": [{"id": "a"}, {"id": "b"}], "edges": [{"src": "a", "dst": "b"}]}


@pytest.fixture
def tenants(store: ProcedureStore) -> ProcedureStore:
    """Alice is admin of alice-ns, Bob of bob-ns; each wrote one refund procedure there;
    Vic views bob-ns and Walt writes there."""
    store.grant("alice", "alice-ns", "admin")
    store.grant("bob", "bob-ns", "admin")
    store.grant("vic", "bob-ns", "viewer")
    store.grant("walt", "bob-ns", "writer")
    store.add("refund alice", SITUATION, STEPS, namespace="alice-ns", principal="alice")
    store.add("refund bob", SITUATION, STEPS, namespace="bob-ns", principal="bob")
    return store


def test_a_principal_reads_only_its_own_namespaces(tenants):
    refs = {m.ref for m in tenants.match(SITUATION, principal="alice")}
    assert refs == {"alice-ns/procedure_refund_alice"}  # bob's is in bob-ns
    assert {p.ref for p in tenants.list(principal="alice")} == refs
    assert len(tenants.match(SITUATION)) == 2  # auth off: every namespace
    with pytest.raises(AccessDenied, match="'alice' cannot read namespace 'bob-ns'"):
        tenants.match(SITUATION, namespace="bob-ns", principal="alice")
    for read in ("get", "runs", "locate", "status", "traces", "revisions"):
        with pytest.raises(AccessDenied):
            getattr(tenants, read)("bob-ns/procedure_refund_bob", principal="alice")
    with pytest.raises(UnknownProcedure, match="not in a namespace principal 'alice' can read"):
        tenants.get("procedure_refund_bob", principal="alice")  # a bare key: no leak
    pack = ContextPacker(tenants, principal="alice").pack(SITUATION)
    assert pack.procedure_keys == ("alice-ns/procedure_refund_alice",)


def test_the_seed_role_table(tenants):
    ref = "bob-ns/procedure_refund_bob"
    # viewer: match, locate, list; nothing that writes
    assert [m.ref for m in tenants.match(SITUATION, principal="vic")] == [ref]
    assert tenants.locate(ref, principal="vic").key == "procedure_refund_bob"
    assert [p.ref for p in tenants.list(principal="vic")] == [ref]
    refused = [
        lambda: tenants.add("v", SITUATION, STEPS, namespace="bob-ns", principal="vic"),
        lambda: tenants.record_run(ref, ["n1"], ok=True, principal="vic"),
        lambda: tenants.evolve(ref, principal="vic"),
        lambda: tenants.revise(ref, GRAPH, "shorter", principal="vic"),
        lambda: tenants.fork(ref, "bob-ns", principal="vic"),
        lambda: tenants.grant("zed", "bob-ns", by="vic"),
    ]
    for call in refused:
        with pytest.raises(AccessDenied, match="holds only the viewer role in namespace 'bob-ns'"):
            call()
    # writer: add, record_run, evolve, revise, fork; not grant
    tenants.add("w", SITUATION, STEPS, namespace="bob-ns", principal="walt")
    run = tenants.record_run(ref, ["n1", "n2"], ok=True, principal="walt")
    assert run.run_id >= 1
    assert tenants.evolve(ref, principal="walt").runs == 1
    assert tenants.revise(ref, GRAPH, "shorter", principal="walt").pending_revision is not None
    tenants.grant("walt", "walt-ns", "writer")
    assert tenants.fork(ref, "walt-ns", principal="walt").actor == "walt"
    with pytest.raises(AccessDenied, match="grant needs the admin role"):
        tenants.grant("zed", "bob-ns", "viewer", by="walt")
    # admin: grant
    tenants.grant("zed", "bob-ns", "viewer", by="bob")
    assert tenants.roles_of("zed") == {"bob-ns": "viewer"}


def test_writing_somewhere_grants_no_read(tenants):
    # auth off, an actor label: the operator wrote it; mallory gains nothing
    tenants.add("m", SITUATION, STEPS, namespace="bob-ns", actor="mallory")
    assert tenants.namespaces_of("mallory") == ()
    with pytest.raises(AccessDenied, match="'mallory' cannot read namespace 'bob-ns'"):
        tenants.add("m2", SITUATION, STEPS, namespace="bob-ns", principal="mallory")
    tenants.grant("mallory", "mallory-ns", "admin")
    with pytest.raises(AccessDenied, match="'mallory' cannot read namespace 'bob-ns'"):
        tenants.fork("bob-ns/procedure_refund_bob", "mallory-ns", principal="mallory")
    pack = ContextPacker(tenants, auth=True, principal="mallory").pack(SITUATION)
    assert pack.procedure_keys == ()


def test_with_auth_on_the_actor_is_the_calling_principal(tenants):
    tenants.grant("walt", "alice-ns", "writer")
    with pytest.raises(AccessDenied, match="actor 'alice' refused"):
        tenants.add("fake", SITUATION, STEPS, namespace="alice-ns", actor="alice",
                    principal="walt")  # fmt: skip
    mine = tenants.add("real", SITUATION, STEPS, namespace="alice-ns", principal="walt")
    assert mine.actor == "walt"
    pack = ContextPacker(tenants, auth=True, principal="alice", max_procedures=5).pack(SITUATION)
    assert pack.procedure_keys == ("alice-ns/procedure_refund_alice",)


def test_roles_and_grants_survive_a_reopen(tmp_path):
    with ProcedureStore.open(tmp_path / "p.db") as store:
        store.grant("zoe", "support", "admin")
        store.grant("zoe", "ops", "writer")
    with ProcedureStore.open(tmp_path / "p.db") as store:
        assert store.roles_of("zoe") == {"ops": "writer", "support": "admin"}
        store.grant("ann", "support", "viewer", by="zoe")
        assert store.roles_of("ann") == {"support": "viewer"}


def test_a_version_2_grants_table_reads_as_viewer_grants(tmp_path):
    path = tmp_path / "p.db"
    with ProcedureStore.open(path) as store:
        store.add("refund", SITUATION, STEPS, namespace="support")
    with sqlite3.connect(path) as conn:  # a grant written before roles: no role column
        conn.execute("INSERT INTO grants (principal, namespace) VALUES ('old', 'support')")
    with ProcedureStore.open(path) as store:
        assert store.roles_of("old") == {"support": "viewer"}
        assert [m.key for m in store.match(SITUATION, principal="old")] == ["procedure_refund"]
        with pytest.raises(AccessDenied):
            store.record_run("support/procedure_refund", ["n1"], ok=True, principal="old")


# -- caps --------------------------------------------------------------------------------

BIG = "x" * 10_000_000


@pytest.mark.parametrize(
    ("field", "call"),
    [
        ("situation", lambda s: s.add("big", BIG, STEPS)),
        ("name", lambda s: s.add(BIG, SITUATION, STEPS)),
        ("steps[0]", lambda s: s.add("big", SITUATION, [BIG, "b"])),
        ("situation", lambda s: s.match(BIG)),
        ("tags", lambda s: s.add("big", SITUATION, STEPS, tags=[BIG])),
        ("metadata", lambda s: s.add("big", SITUATION, STEPS, metadata={"k": BIG})),
        ("principal", lambda s: s.grant(BIG, "ns")),
        ("note", lambda s: s.record_run("procedure_seed", ["n1"], ok=True, note=BIG)),
        ("reason", lambda s: s.revise("procedure_seed", GRAPH, BIG)),
    ],
)
def test_a_10_mb_text_is_refused_quoting_a_short_prefix(store, field, call):
    store.add("seed", SITUATION, STEPS)
    before = store.list()
    with pytest.raises(ProcmemError) as err:
        call(store)
    message = str(err.value)
    assert field in message
    assert len(message) < 400  # never the value back
    assert store.list() == before


def test_the_caps_are_stated_limits(store):
    store.add("at the cap", "s" * MAX_SITUATION, STEPS)  # the cap itself is allowed
    with pytest.raises(ParameterError, match=f"at most {MAX_SITUATION} characters"):
        store.add("over the cap", "s" * (MAX_SITUATION + 1), STEPS)
    store.grant("p" * MAX_IDENTIFIER, "ns")
    with pytest.raises(ParameterError, match=f"at most {MAX_IDENTIFIER} characters"):
        store.grant("p" * (MAX_IDENTIFIER + 1), "ns")


# -- hostile keys and names --------------------------------------------------------------

HOSTILE = [
    "../../etc/passwd",
    "a\x00b",
    "x'; DROP TABLE procedures; --",
    'say "hi" \\ `now`',
    "k" * 513,
    "robert'); DELETE FROM grants WHERE ('1'='1",
]


def _snapshot(store: ProcedureStore) -> tuple:
    procs = [(p, store.runs(p.ref)) for p in store.list()]
    return procs, store.roles_of("alice"), store.gate_decisions()


@pytest.mark.parametrize("bad", HOSTILE)
def test_hostile_namespaces_and_keys_are_refused(store, bad):
    store.grant("alice", "team", "admin")
    store.add("refund", SITUATION, STEPS, namespace="team", principal="alice")
    before = _snapshot(store)
    for call in (
        lambda: store.add("n", SITUATION, STEPS, namespace=bad),
        lambda: store.add("n", SITUATION, STEPS, key=bad),
        lambda: store.grant("alice", bad),
        lambda: store.match(SITUATION, namespace=bad, principal="alice"),
        lambda: store.fork("team/procedure_refund", bad),
    ):
        with pytest.raises(ProcmemError) as err:
            call()
        assert len(str(err.value)) < 600
    for call in (lambda: store.get(bad), lambda: store.runs(f"team/{bad}")):
        with pytest.raises(ProcmemError):
            call()
    assert _snapshot(store) == before


@pytest.mark.parametrize("bad", HOSTILE)
def test_hostile_principals_and_names_are_refused_or_stored_inert(store, bad):
    store.grant("alice", "team", "admin")
    store.add("refund", SITUATION, STEPS, namespace="team", principal="alice")
    before = _snapshot(store)
    inert = "\x00" not in bad and len(bad) <= MAX_IDENTIFIER
    if inert:
        store.grant(bad, "other", "writer")
        assert store.roles_of(bad) == {"other": "writer"}
        made = store.add(bad, SITUATION, STEPS, namespace="other", principal=bad)
        assert (made.name, made.actor, made.namespace) == (bad, bad, "other")
        assert store.get(made.ref, principal=bad).name == bad
        store.delete(made.ref, principal=bad)
    else:
        for call in (
            lambda: store.grant(bad, "other"),
            lambda: store.match(SITUATION, principal=bad),
            lambda: store.add("n", SITUATION, STEPS, namespace="other", actor=bad),
        ):
            with pytest.raises(ParameterError, match=r"principal|actor") as err:
                call()
            assert len(str(err.value)) < 400
    assert _snapshot(store) == before  # no other row changed
