"""Actor and auth, namespace scope, fork from readable namespaces, the strike limit setting
and fail-prone flags read as pitfalls (issue 12, the seed's missing parts)."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.graph import (
    MAX_NAMESPACE_FAN_OUT,
    STRIKE_LIMIT_ENV,
    AccessDenied,
    ContextPacker,
    ProcedureStore,
)

pytestmark = pytest.mark.store_backends("memory", "sqlite", "postgresql")

STEPS = ["look up the invoice", "check the refund policy window", "issue or decline"]
SITUATION = "a customer asks for a refund on a paid invoice"


@pytest.fixture
def team(store):
    """Alice and Bob (writers there) each wrote a refund procedure in the shared namespace
    "support"."""
    store.grant("alice", "support", "writer")
    store.grant("bob", "support", "writer")
    store.add("refund by alice", SITUATION, STEPS, namespace="support", principal="alice")
    store.add("refund by bob", SITUATION + " quickly", STEPS, namespace="support", principal="bob")
    store.add("refund unsigned", SITUATION + " today", STEPS, namespace="support")
    return store


def test_every_procedure_records_its_actor_and_every_match_carries_it(team):
    assert team.get("procedure_refund_by_alice").actor == "alice"
    assert team.get("procedure_refund_unsigned").actor is None
    by_key = {m.key: m.actor for m in team.match("customer wants a refund")}
    assert by_key == {
        "procedure_refund_by_alice": "alice",
        "procedure_refund_by_bob": "bob",
        "procedure_refund_unsigned": None,
    }


def test_auth_packs_inject_only_the_principals_own_procedures(team):
    mine = ContextPacker(team, auth=True, principal="alice").pack("customer wants a refund")
    assert mine.procedure_keys == ("support/procedure_refund_by_alice",)
    assert "refund by bob" not in mine.text
    everyone = ContextPacker(team, auth=False).pack("customer wants a refund")
    assert len(everyone.procedure_keys) == 3
    explicit = team.match("customer wants a refund", namespace="support")
    assert "bob" in {m.actor for m in explicit}  # an explicit match still returns Bob's


def test_auth_without_a_principal_is_refused(team):
    with pytest.raises(ParameterError, match="principal=None"):
        ContextPacker(team, auth=True)


def test_all_mine_searches_the_callers_namespaces_up_to_the_fan_out_cap(store):
    for ns in ("a1", "a2", "a3", "other"):
        store.grant("carol", ns, "writer")
        store.add(f"refund {ns}", SITUATION, STEPS, namespace=ns, principal="carol")
    store.add("refund stranger", SITUATION, STEPS, namespace="stranger", actor="dave")
    store.grant("carol", "shared")
    store.add("refund shared", SITUATION, STEPS, namespace="shared", actor="erin")
    assert store.namespaces_of("carol") == ("a1", "a2", "a3", "other", "shared")
    hits = store.match(SITUATION, top_k=10, namespace_scope="all_mine", principal="carol")
    assert {m.namespace for m in hits} == {"a1", "a2", "a3", "other", "shared"}
    capped = store.match(
        SITUATION, top_k=10, namespace_scope="all_mine", principal="carol", fan_out=2
    )
    assert {m.namespace for m in capped} == {"a1", "a2"}  # the first two in name order
    assert MAX_NAMESPACE_FAN_OUT == 16


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"namespace_scope": "all_mine"}, "principal=None"),
        ({"namespace_scope": "everything", "principal": "x"}, "namespace_scope='everything'"),
        ({"namespace_scope": "all_mine", "principal": "x", "namespace": "a"}, "namespace='a'"),
        ({"namespace_scope": "all_mine", "principal": "x", "fan_out": 0}, "fan_out=0"),
    ],
)
def test_namespace_scope_rejects_bad_requests(store, kwargs, fragment):
    with pytest.raises(ParameterError) as err:
        store.match(SITUATION, **kwargs)
    assert fragment in str(err.value)


def test_fork_copies_only_from_a_namespace_the_caller_can_read(team):
    with pytest.raises(AccessDenied, match="'zoe' cannot read namespace 'zoe'"):
        team.fork("support/procedure_refund_by_alice", "zoe", actor="zoe")  # no writer there
    team.grant("zoe", "zoe", "writer")
    with pytest.raises(AccessDenied, match="'zoe' cannot read namespace 'support'"):
        team.fork("support/procedure_refund_by_alice", "zoe", actor="zoe")
    team.grant("zoe", "support")
    copy = team.fork("support/procedure_refund_by_alice", "zoe", actor="zoe")
    assert (copy.actor, copy.namespace, copy.runs) == ("zoe", "zoe", 0)
    assert team.fork("support/procedure_refund_by_bob", "ops").actor is None  # auth off


def test_grants_survive_a_reopen(tmp_path):
    with ProcedureStore.open(tmp_path / "p.db") as store:
        store.grant("zoe", "support")
    with ProcedureStore.open(tmp_path / "p.db") as store:
        assert store.namespaces_of("zoe") == ("support",)


def test_the_strike_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(STRIKE_LIMIT_ENV, "2")
    store = ProcedureStore()
    key = store.add("refund", "s", STEPS).key
    for ok in (True, False, False):
        store.record_run(key, ["n1"], ok=ok)
    assert store.evolve(key).status == "quarantined"  # 2 strikes
    monkeypatch.setenv(STRIKE_LIMIT_ENV, "0")
    off = ProcedureStore()
    key = off.add("refund", "s", STEPS).key
    for _ in range(10):
        off.record_run(key, ["n1"], ok=False)
    assert off.evolve(key).status == "exercised"  # 0 = off
    assert ProcedureStore(strike_limit=5).strike_limit == 5  # the argument wins


@pytest.mark.parametrize("raw", ["three", "-1", "2.5"])
def test_a_bad_strike_limit_in_the_environment_names_the_variable(monkeypatch, raw):
    monkeypatch.setenv(STRIKE_LIMIT_ENV, raw)
    with pytest.raises(ParameterError, match=STRIKE_LIMIT_ENV):
        ProcedureStore()


def _fail_prone_store(store):
    key = store.add("refund", SITUATION, STEPS).key
    rng = np.random.default_rng(np.random.SeedSequence(4))
    for _ in range(120):  # n3 fails 60 % of the runs through it, the rest 10 %
        if rng.random() < 0.5:
            store.record_run(key, ["n1", "n2", "n3"], ok=bool(rng.random() >= 0.6))
        else:
            store.record_run(key, ["n1", "n2"], ok=bool(rng.random() >= 0.1))
    report = store.evolve(key)
    return key, report


def test_fail_prone_flags_reach_locate_and_the_pack_as_pitfalls(store):
    key, report = _fail_prone_store(store)
    flagged = {(f.src, f.dst) for f in report.fail_prone_steps + report.fail_prone_transitions}
    assert flagged == {("n3", None), ("n2", "n3")}
    loc = store.locate(key, at="n2")
    (ahead,) = loc.transitions
    assert ahead.pitfall.startswith("n2 -> n3 failed in")
    assert "PITFALL: n2 -> n3 failed in" in loc.rendered
    assert "Pitfalls (fail-prone in earlier runs):" in loc.rendered
    f = report.fail_prone_steps[0]
    line = f"step n3 failed in {f.failures} of {f.runs} runs through it"
    assert line in loc.rendered
    pack = ContextPacker(store).pack(SITUATION)
    assert f"Pitfall: {line}" in pack.text
