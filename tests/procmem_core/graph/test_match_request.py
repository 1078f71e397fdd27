"""A prepared match (``prepare_match`` / ``match_request``, ``ContextPacker.prepare`` /
``pack_request``) answers exactly as ``match`` and ``pack`` do, against the store as it is
at each call, and checks its arguments when prepared."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.graph import ContextPacker, MatchRequest, ProcedureStore
from procmem_core.quarantine import ProbationPolicy

SITUATIONS = ("customer wants a refund", "reset a locked account", "close the monthly books")


def _store(policy=None) -> ProcedureStore:
    store = (
        ProcedureStore(strike_limit=2)
        if policy is None
        else ProcedureStore(strike_limit=2, quarantine=policy)
    )
    for i, s in enumerate(SITUATIONS * 2):
        store.add(f"p{i}", f"{s} approach {i}", steps=["look up", "act", "confirm"])
    return store


def _refs(store: ProcedureStore) -> list[str]:
    return [
        m.ref for m in store.match("x", top_k=99, min_similarity=-1.0, include_quarantined=True)
    ]


def _runs(store: ProcedureStore, rng: np.random.Generator, n: int) -> None:
    refs = sorted(_refs(store))
    for _ in range(n):
        ref = refs[int(rng.integers(len(refs)))]
        store.record_run(ref, [], bool(rng.random() < 0.5))
        store.evolve(ref, min_runs=2)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"top_k": 3, "utility_weight": 0.5},
        {"goal": "refund", "recent_tools": ["mail"], "include_quarantined": True},
        {"min_similarity": 0.2, "include_candidates": False, "top_k": 6},
    ],
)
def test_a_prepared_match_equals_match_as_the_store_changes(kwargs):
    store, rng = _store(), np.random.default_rng(1)
    requests = {s: store.prepare_match(s, **kwargs) for s in SITUATIONS}
    for _ in range(6):  # ranks, counts and statuses move between the calls
        for s in SITUATIONS:
            assert store.match_request(requests[s]) == store.match(s, **kwargs)
        _runs(store, rng, 8)
    assert any(store.status(ref) == "quarantined" for ref in _refs(store))


@pytest.mark.parametrize("policy", [None, ProbationPolicy(floor=0.2, candidates=2)])
def test_a_prepared_pack_equals_pack_draw_for_draw(policy):
    a, b = _store(policy), _store(policy)
    pa = ContextPacker(a, 0.3, 2, np.random.default_rng(5), concurrent_share=0.5)
    pb = ContextPacker(b, 0.3, 2, np.random.default_rng(5), concurrent_share=0.5)
    requests = [pb.prepare(s) for s in SITUATIONS]
    rng_a, rng_b = np.random.default_rng(2), np.random.default_rng(2)
    for i in range(30):
        got, want = pb.pack_request(requests[i % 3]), pa.pack(SITUATIONS[i % 3])
        for name in ("procedure_keys", "procedure_keys_withheld", "procedure_revisions",
                     "matches", "text"):  # fmt: skip
            assert getattr(got, name) == getattr(want, name), (i, name)
        _runs(a, rng_a, 2)
        _runs(b, rng_b, 2)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"situation": ""}, "situation"),
        ({"situation": "x", "top_k": 0}, "top_k"),
        ({"situation": "x", "utility_weight": -1.0}, "utility_weight"),
        ({"situation": "x", "min_similarity": 2.0}, "min_similarity"),
    ],
)
def test_bad_arguments_are_refused_when_prepared(kwargs, field):
    with pytest.raises(ParameterError, match=field):
        _store().prepare_match(**kwargs)


def test_the_request_keeps_the_checked_arguments_and_read_only_vectors():
    store = _store()
    r = store.prepare_match("refund", goal="invoice", recent_tools=["mail"], top_k=2)
    assert isinstance(r, MatchRequest)
    assert (r.situation, r.goal, r.recent_tools, r.top_k) == ("refund", "invoice", ("mail",), 2)
    assert np.array_equal(r.query, store.embedder.embed(["refund"])[0])
    assert not r.query.flags.writeable and not r.goal_query.flags.writeable


def test_match_and_prepare_match_take_the_same_arguments_with_the_same_defaults():
    """``match`` spells out ``prepare_match``'s parameters (its public signature) and passes
    them on by position: a parameter or default changed in one must change in the other."""
    match = inspect.signature(ProcedureStore.match).parameters
    prepare = inspect.signature(ProcedureStore.prepare_match).parameters
    assert list(match) == list(prepare)
    assert [(p.default, p.annotation) for p in match.values()] == [
        (p.default, p.annotation) for p in prepare.values()
    ]
