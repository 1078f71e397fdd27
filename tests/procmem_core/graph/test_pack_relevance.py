"""Issue 25 item 4: packs inject only what is relevant (a relevance floor,
``min_similarity``, default ``PACK_MIN_SIMILARITY``) and take the match's
``include_quarantined`` and ``include_candidates`` switches."""

from __future__ import annotations

import pytest

from procmem_core.errors import ParameterError
from procmem_core.graph import PACK_MIN_SIMILARITY, ContextPacker, HashingEmbedder, ProcedureStore

STEPS = ["first step", "second step"]
UNRELATED = [
    "a customer asks for a refund on a paid invoice",
    "reset a user's password after a lockout",
    "deploy a hotfix to production",
    "cash flow forecast for the next quarter",
    "book a meeting room for the team",
    "the user wants to save for an emergency fund",
    "a customer disputes a charge on their card",
]


@pytest.fixture
def seven(store: ProcedureStore) -> ProcedureStore:
    for i, situation in enumerate(UNRELATED):
        store.add(f"procedure {i}", situation, STEPS)
    return store


def test_an_unrelated_question_injects_nothing(seven):
    question = "what is the capital of France"
    pack = ContextPacker(seven).pack(question)
    assert (pack.text, pack.procedure_keys, pack.matches) == ("", (), ())
    loose = ContextPacker(seven, min_similarity=None).pack(question)
    assert len(loose.procedure_keys) == 3  # no floor: the top 3 of seven unrelated ones
    best = max(m.similarity for m in loose.matches)
    assert best == pytest.approx(0.2546, abs=1e-3)  # below the 0.3 floor
    assert PACK_MIN_SIMILARITY == 0.3


def test_the_floor_is_on_the_similarity_the_match_reports(seven):
    sims = {m.ref: m.similarity for m in seven.match("a customer wants a refund", top_k=7)}
    above = {ref for ref, s in sims.items() if s >= 0.3}
    assert above == {f"default/procedure_procedure_{i}" for i in (0, 1, 4, 6)}  # 0.725 .. 0.303
    pack = ContextPacker(seven, max_procedures=7).pack("a customer wants a refund")
    assert set(pack.procedure_keys) == above
    assert all(m.similarity >= 0.3 for m in pack.matches)
    strict = ContextPacker(seven, max_procedures=7, min_similarity=0.6)
    top = ("default/procedure_procedure_0",)
    assert strict.pack("a customer wants a refund").procedure_keys == top


def test_a_relevant_candidate_beats_irrelevant_procedures_under_the_floor(store):
    for i, situation in enumerate([UNRELATED[2], UNRELATED[3], UNRELATED[5]]):
        store.add(f"proven {i}", situation, STEPS)
    store.add("mined", "a customer asks for a refund on a paid invoice", STEPS, candidate=True)
    pack = ContextPacker(store, max_procedures=1).pack("a customer wants a refund")
    assert pack.procedure_keys == ("default/procedure_mined",)  # the floor is in the match
    loose = ContextPacker(store, max_procedures=1, min_similarity=None)
    assert loose.pack("a customer wants a refund").procedure_keys != pack.procedure_keys
    no_cand = ContextPacker(store, max_procedures=1, include_candidates=False)
    assert no_cand.pack("a customer wants a refund").procedure_keys == ()


def test_include_quarantined_on_packs(store):
    key = store.add("refund", UNRELATED[0], STEPS).key
    for _ in range(3):
        store.record_run(key, ["n1"], ok=False)
    assert store.evolve(key, strike_limit=3).status == "quarantined"
    situation = "a customer asks for a refund"
    assert ContextPacker(store).pack(situation).procedure_keys == ()
    shown = ContextPacker(store, include_quarantined=True).pack(situation)
    assert shown.procedure_keys == ("default/procedure_refund",)
    assert "quarantined" in shown.text


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"min_similarity": 1.5}, "min_similarity=1.5"),
        ({"min_similarity": "high"}, "min_similarity='high'"),
        ({"include_quarantined": "yes"}, "include_quarantined='yes'"),
        ({"include_candidates": 1}, "include_candidates=1"),
    ],
)
def test_bad_switches_are_refused(store, kwargs, fragment):
    with pytest.raises(ParameterError, match=fragment):
        ContextPacker(store, **kwargs)


def test_the_measured_similarities_behind_the_default():
    """The numbers docs/graph.md states for the default floor (``HashingEmbedder``)."""
    e = HashingEmbedder()
    procs = e.embed(UNRELATED)
    france = procs @ e.embed(["what is the capital of France"])[0]
    assert float(france.max()) == pytest.approx(0.2546, abs=1e-3)
    password = procs @ e.embed(["the user is locked out and needs a new password"])[0]
    assert int(password.argmax()) == 1
    assert float(password.max()) == pytest.approx(0.333, abs=1e-3)
    paraphrase = procs @ e.embed(["customer wants money back for last month's invoice"])[0]
    assert float(paraphrase[0]) == pytest.approx(0.263, abs=1e-3)  # dropped by the floor
