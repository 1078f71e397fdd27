"""The pack log a ``ProcedureStore`` keeps (``graph.packlog``): rows written by
``ContextPacker.pack(session_id=...)`` and ``rate_session``, the same on both backends (the
``store`` fixture), kept across a reopen, and added to a store written before it existed
(tests/data/procedure_store_v2.sql, written by the schema-2 code)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.graph import ContextPacker, ProcedureStore
from procmem_core.graph.packlog import PackRecord

pytestmark = pytest.mark.store_backends("memory", "sqlite", "postgresql")

REPO = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
STEPS = ["read the invoice", "check the refund policy", "issue the refund"]


def _packs(store: ProcedureStore, n: int, rate: float, seed: int = 5) -> list:
    store.add("refund", "a refund on an invoice", STEPS)
    store.add("close month", "close the month's books", ["sum the ledger", "lock it"])
    packer = ContextPacker(store, explore_rate=rate, rng=np.random.default_rng(seed))
    out = []
    for i in range(n):
        situation = "a refund on an invoice" if i % 3 else "close the month's books"
        pack = packer.pack(situation, session_id=f"s{i}", time=i, user_id=f"u{i % 4}")
        out.append(pack)
    return out


def test_each_pack_logs_its_top_key_withholding_and_shown_keys(store):
    packs = _packs(store, 40, rate=0.3)
    log = store.pack_log()
    assert [r.session_id for r in log] == [f"s{i}" for i in range(40)]
    for r, p in zip(log, packs, strict=True):
        assert r.withheld == bool(p.procedure_keys_withheld)
        top = p.procedure_keys_withheld[0] if r.withheld else p.procedure_keys[0]
        assert r.top_key == top == p.matches[0].ref
        assert r.shown_keys == p.procedure_keys and r.explore_rate == 0.3
        assert r.outcome is None and r.rated_at is None
    assert 0 < sum(r.withheld for r in log) < 40  # both arms at rate 0.3
    rated = store.rate_session("s3", True, rated_at=45)
    assert (rated.outcome, rated.rated_at) == (1, 45)
    assert store.pack_log()[3] == rated and store.pack_log()[4].outcome is None


def test_the_pack_log_survives_a_reopen(tmp_path):
    path = tmp_path / "p.db"
    with ProcedureStore.open(path) as s:
        _packs(s, 6, rate=0.5)
        s.rate_session("s0", 0)
        before = s.pack_log()
    with ProcedureStore.open(path) as s:
        assert s.pack_log() == before
        assert s.pack_log()[0].outcome == 0


def test_timestamps_default_to_now_and_rated_at_follows_them(store):
    r = store.log_pack("a", "", False, 0.1)
    assert isinstance(r.time, str) and abs(
        datetime.fromisoformat(r.time) - datetime.now(UTC).replace(tzinfo=None)
    ) < timedelta(minutes=5)  # now, in UTC
    assert isinstance(store.rate_session("a", 1).rated_at, str)


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda s: s.log_pack("s0", "default/procedure_refund", False, 0.1), "session_id"),
        (lambda s: s.log_pack("x", "", True, 0.1), "top_key"),
        (lambda s: s.log_pack("x", "k", False, 1.0), "explore_rate"),
        (lambda s: s.log_pack("x", "k", False, 0.1, time="yesterday"), "time"),
        (lambda s: s.log_pack("x", "k", False, 0.1, shown_keys="k"), "shown_keys"),
        (lambda s: s.rate_session("nope", 1), "session_id"),
        (lambda s: s.rate_session("s0", 2), "outcome"),
    ],
)
def test_bad_pack_log_calls_are_refused_naming_the_field(store, call, field):
    store.log_pack("s0", "default/procedure_refund", False, 0.1, time=1)
    with pytest.raises(ParameterError, match=field):
        call(store)
    assert len(store.pack_log()) == 1 and store.pack_log()[0].outcome is None


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda s, v: s.log_pack("x", v, False, 0.1), "top_key"),
        (
            lambda s, v: s.log_pack("x", "", False, 0.1, ["default/procedure_refund", v]),
            "shown_keys",
        ),
    ],
)
def test_a_ref_over_its_cap_is_refused_and_nothing_is_logged(store, call, field):
    """A ref is a namespace (at most 128 characters) / a key (at most 256): a
    100,000-character top_key or shown key was stored in the pack log whole (every other
    text a store keeps has a cap, procmem_core.limits); now a ParameterError naming the
    field, quoting a short prefix."""
    store.log_pack("s0", "default/procedure_refund", False, 0.1, time=1)
    with pytest.raises(ParameterError, match=field) as err:
        call(store, "team-a/procedure_" + "x" * 100_000)
    assert len(str(err.value)) < 400
    assert [r.session_id for r in store.pack_log()] == ["s0"]
    longest = "n" * 128 + "/procedure_" + "k" * 246  # 385 characters: at the cap
    assert store.log_pack("s1", longest, False, 0.1, [longest], time=2).top_key == longest


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda s: s.log_pack("s\x00", "", False, 0.1), "session_id"),
        (lambda s: s.log_pack("s\n1", "", False, 0.1), "session_id"),
        (lambda s: s.log_pack(" s1", "", False, 0.1), "session_id"),
        (lambda s: s.log_pack("s1", "default/procedure_refund\x00", False, 0.1), "top_key"),
        (lambda s: s.log_pack("s1", "", False, 0.1, ["default/k\x00"]), "shown_keys"),
        (lambda s: s.log_pack("s1", "", False, 0.1, user_id="u1\x00"), "user_id"),
        (lambda s: s.log_pack("s1", "", False, 0.1, agent="bot\r"), "agent"),
        (lambda s: ContextPacker(s).pack("a refund", session_id="s1\x00"), "session_id"),
    ],
)
def test_pack_log_identifiers_are_inert_on_every_backend(store, call, field):
    """A session id, user id and agent are identifiers (procmem_core.limits: no control
    character, no surrounding whitespace), as everywhere else in the stores, and a ref
    holds no NUL: a NUL, a newline or a leading space was logged in memory and on
    SQLite, and a NUL raised psycopg's DataError on PostgreSQL; now a ParameterError
    naming the field on every backend, and nothing is logged."""
    store.add("refund", "a refund on an invoice", STEPS)
    with pytest.raises(ParameterError, match=field):
        call(store)
    assert store.pack_log() == ()


def test_a_session_is_rated_once(store):
    store.log_pack("s0", "", False, 0.0, time=1)
    store.rate_session("s0", 1)
    with pytest.raises(ParameterError, match="not rated yet"):
        store.rate_session("s0", 0)


def test_a_version_2_store_gains_the_pack_log_on_open(tmp_path):
    path = tmp_path / "v2.db"
    con = sqlite3.connect(path)
    con.executescript((REPO / "tests" / "data" / "procedure_store_v2.sql").read_text())
    con.close()
    with ProcedureStore.open(path) as store:
        assert [r.run_id for r in store.runs("procedure_refund")] == list(range(1, 10))
        assert store.revisions("procedure_refund")[-1].proposed_at is None  # not kept then
        assert store.pack_log() == ()
        store.log_pack("s1", "default/procedure_refund", True, 0.2, time=3)
        assert store.pack_log() == (PackRecord("s1", 3, "default/procedure_refund", True, 0.2),)
    con = sqlite3.connect(path)
    assert con.execute("SELECT version FROM schema_version").fetchall() == [(3,)]
    con.close()


def test_revisions_keep_when_they_were_proposed_and_decided(store):
    from procmem_core.graph import ProcedureGraph

    k = store.add("refund", "a refund on an invoice", STEPS).key
    for _ in range(5):
        store.record_run(k, [], ok=True)
    store.revise(k, ProcedureGraph.from_steps([*STEPS, "log it"]), "log")
    for _ in range(30):
        store.record_run(k, [], ok=False)
        if store.evolve(k).revision_outcome == "reverted":
            break
    last = store.runs(k)[-1].run_id
    h = store.revisions(k)
    assert (h[0].outcome, h[0].proposed_at) == ("original", None)
    assert (h[1].outcome, h[1].proposed_at, h[1].decided_at) == ("reverted", 5, last)


def test_complete_run_rates_the_session_in_the_same_write(store):
    k = store.add("refund", "a refund on an invoice", STEPS).ref
    store.log_pack("s0", k, False, 0.1, [k], time=1)
    runs = store.complete_run([k], ok=True, session_id="s0")
    assert len(runs) == 1 and store.pack_log()[0].outcome == 1
    with pytest.raises(ParameterError, match="session_id"):
        store.complete_run([k], ok=False, session_id="nope")
    assert len(store.runs(k)) == 1  # refused before any run was written
    with pytest.raises(ParameterError, match="not rated yet"):
        store.complete_run([k], ok=False, session_id="s0")
    assert len(store.runs(k)) == 1 and store.pack_log()[0].outcome == 1


def test_the_reflections_complete_run_passes_the_session_on(store):
    from procmem_core.reflections import complete_run

    k = store.add("refund", "a refund on an invoice", STEPS).ref
    store.log_pack("s0", k, False, 0.1, [k], time=1)
    complete_run(store, [k], False, session_id="s0")
    assert store.pack_log()[0].outcome == 0 and not store.runs(k)[0].ok


def test_a_bad_session_field_is_refused_before_the_pack_draws(store):
    store.add("refund", "a refund on an invoice", STEPS)
    rng = np.random.default_rng(1)
    packer = ContextPacker(store, explore_rate=0.5, rng=rng)
    state = rng.bit_generator.state
    for kwargs, field in (({"session_id": ""}, "session_id"),
                          ({"session_id": "a", "time": 1.5}, "time"),
                          ({"session_id": "a", "user_id": 7}, "user_id")):  # fmt: skip
        with pytest.raises(ParameterError, match=field):
            packer.pack("a refund on an invoice", **kwargs)
    assert rng.bit_generator.state == state and store.pack_log() == ()


def test_with_auth_each_principal_logs_rates_and_reads_only_its_namespaces_rows(store):
    """A row is the business of the namespaces it names; a row naming none (nothing
    matched) belongs to the principal that logged it (its agent)."""
    from procmem_core.errors import AccessDenied

    steps = ["look up the invoice", "check the policy", "answer"]
    store.grant("alice", "team-a", "writer")
    store.grant("bob", "team-b", "writer")
    store.grant("vera", "team-a", "viewer")
    a = store.add("refund", "a refund request", steps, namespace="team-a", principal="alice")
    b = store.add("refund", "a refund request", steps, namespace="team-b", principal="bob")
    store.log_pack("s1", a.ref, False, 0.1, [a.ref], time=0, principal="vera")
    store.log_pack("s2", "", False, 0.1, [], time=1, principal="bob")
    store.log_pack("s3", a.ref, True, 0.1, [b.ref], time=2)  # auth off: both namespaces
    with pytest.raises(AccessDenied, match="alice"):
        store.log_pack("s4", b.ref, False, 0.1, [b.ref], time=3, principal="alice")
    assert [r.session_id for r in store.pack_log(principal="alice")] == ["s1"]
    assert [r.session_id for r in store.pack_log(principal="bob")] == ["s2"]
    assert [r.session_id for r in store.pack_log()] == ["s1", "s2", "s3"]
    assert store.pack_log()[0].agent == "vera"  # the principal is the row's agent
    with pytest.raises(AccessDenied, match="vera"):  # a viewer may log, not rate
        store.rate_session("s1", 1, principal="vera")
    with pytest.raises(AccessDenied, match="that principal 'alice' can read"):
        store.rate_session("s2", 1, principal="alice")  # not who logged it: HiddenSession
    with pytest.raises(AccessDenied, match="alice"):  # s3 names team-b too
        store.rate_session("s3", 1, principal="alice")
    assert store.rate_session("s1", 1, principal="alice").outcome == 1
    assert [r.outcome for r in store.pack_log()] == [1, None, None]


def test_another_tenants_session_looks_like_one_never_logged(store) -> None:
    """Session ids are the caller's and shared by every tenant. Before, rating (or
    completing) team-a's session as mallory raised AccessDenied naming team-a, while an
    id never logged raised ParameterError: mallory learnt that team-a logged "s1" and the
    namespace's name. Now both raise the same ``HiddenSession`` (a ParameterError and an
    AccessDenied) naming neither, and nothing changes; a reader of the row lacking the
    writer role is still told its role."""
    from procmem_core.errors import AccessDenied, ParameterError
    from procmem_core.graph.packlog import HiddenSession

    ps = store
    ps.grant("alice", "team-a", "admin")
    ps.grant("mallory", "mallory-ns", "admin")
    ps.grant("vic", "team-a", "viewer")
    ps.add("refund", "a refund", ["look up", "issue"], namespace="team-a", principal="alice")
    ref = "team-a/procedure_refund"
    ps.log_pack("s1", ref, False, 0.0, [ref], time=0, principal="alice")
    ps.log_pack("own", "", False, 0.0, time=1, principal="alice")
    before = ps.pack_log()
    texts = []
    for sid in ("s1", "own", "never"):
        for call in (
            lambda sid=sid: ps.rate_session(sid, 1, principal="mallory"),
            lambda sid=sid: ps.complete_run([], True, principal="mallory", session_id=sid),
        ):
            with pytest.raises(HiddenSession) as err:
                call()
            assert isinstance(err.value, ParameterError) and isinstance(err.value, AccessDenied)
            assert err.value.field == "session_id" and "team-a" not in str(err.value)
            texts.append(str(err.value).replace(repr(sid), "ID"))
    assert set(texts) == {
        "session_id=ID is not allowed: a session the pack log holds that principal "
        "'mallory' can read"
    }
    with pytest.raises(AccessDenied, match="holds only the viewer role in namespace 'team-a'"):
        ps.rate_session("s1", 1, principal="vic")
    assert ps.pack_log() == before
    assert ps.rate_session("s1", 1, principal="alice").outcome == 1
