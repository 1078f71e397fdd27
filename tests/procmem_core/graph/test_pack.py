"""Context packs: explore-rate withholding for the graph store and the flat design, one rule
(``withhold_top``) for the object path and the vectorized path."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.explore import withhold_top
from procmem_core.flat import Procedure, build_system_prompt, pack_flat, prompt_order
from procmem_core.graph import ContextPacker, ProcedureStore

STEPS = ["look up the invoice", "check the refund policy window", "issue or decline"]


def rng(seed=0):
    return np.random.default_rng(np.random.SeedSequence(seed))


@pytest.fixture
def store(store):
    """conftest's memory/sqlite store with three procedures and one candidate."""
    store.add("refund full", "a customer asks for a refund on a paid invoice", STEPS)
    store.add("refund partial", "a customer asks for a partial refund on an invoice", STEPS)
    store.add("invoice copy", "a customer asks for an invoice copy", STEPS)
    store.add("mined refund", "customer refund invoice", STEPS, candidate=True)
    return store


def test_withhold_top_scalar_and_vector_agree():
    u = rng(1).random(1000)
    vec = withhold_top(u, 0.3)
    assert vec.tolist() == [withhold_top(float(x), 0.3) for x in u]
    assert withhold_top(0.0, 0.0) is False and withhold_top(0.999, 1.0) is True


def test_no_explore_shows_the_top_matches(store):
    pack = ContextPacker(store, max_procedures=3).pack("customer wants a refund for an invoice")
    top = [m.ref for m in store.match("customer wants a refund for an invoice", top_k=3)]
    assert list(pack.procedure_keys) == top and pack.procedure_keys_withheld == ()
    assert pack.text.startswith("PROCEDURES TO FOLLOW") and "1) look up the invoice" in pack.text


def test_explore_rate_one_withholds_the_top_without_backfill(store):
    packer = ContextPacker(store, explore_rate=1.0, max_procedures=2, rng=rng())
    pack = packer.pack("customer wants a refund for an invoice")
    top = store.match("customer wants a refund for an invoice", top_k=2)
    assert pack.procedure_keys_withheld == (top[0].ref,) and pack.procedure_keys == (top[1].ref,)
    assert top[0].key not in pack.text


def test_withholding_rate_matches_the_explore_rate_within_4_se(store):
    eps, n = 0.2, 2000
    packer = ContextPacker(store, explore_rate=eps, rng=rng(5))
    withheld = sum(bool(packer.pack("refund an invoice").procedure_keys_withheld) for _ in range(n))
    se = np.sqrt(eps * (1 - eps) / n)
    assert abs(withheld / n - eps) < 4 * se
    again = ContextPacker(store, explore_rate=eps, rng=rng(5))
    decisions = [bool(again.pack("refund an invoice").procedure_keys_withheld) for _ in range(50)]
    assert decisions == withhold_top(rng(5).random(50), eps).tolist()  # same rule, same stream


def test_candidates_are_labelled_unproven(store):
    text = ContextPacker(store, max_procedures=4).pack("customer refund invoice").text
    line = next(x for x in text.splitlines() if "mined refund" in x)
    assert "(unproven)" in line
    assert "(unproven)" not in next(x for x in text.splitlines() if "refund full" in x)


def test_no_match_gives_an_empty_pack(store):
    empty = ContextPacker(ProcedureStore(), explore_rate=0.5, rng=rng()).pack("anything")
    assert (empty.text, empty.procedure_keys, empty.procedure_keys_withheld) == ("", (), ())


PACKER_ERRORS = [
    ({"explore_rate": -0.1}, "explore_rate=-0.1"),
    ({"explore_rate": 1.5}, "explore_rate=1.5"),
    ({"explore_rate": 0.1}, "rng=None"),
    ({"rng": 42}, "rng=42"),
    ({"max_procedures": 0}, "max_procedures=0"),
    ({"store": "store"}, "store='store'"),
]


@pytest.mark.parametrize(("kwargs", "fragment"), PACKER_ERRORS)
def test_packer_rejects_bad_parameters(store, kwargs, fragment):
    with pytest.raises(ParameterError) as err:
        ContextPacker(**{"store": store, **kwargs})
    assert fragment in str(err.value)


# -- the flat design ---------------------------------------------------------------------


def flat_procedures():
    confidences = [0.9, 0.6, 0.95, 0.5, 0.7, 0.8, 0.65, 0.75]
    return [
        Procedure(f"P{i}", f"when {i}", f"do {i}", confidence=c) for i, c in enumerate(confidences)
    ]


def test_flat_without_explore_is_the_seed_prompt():
    procs = flat_procedures()
    pack = pack_flat(procs)
    assert pack.text == build_system_prompt(procs)
    assert (
        list(pack.shown_titles) == [p.title for p in prompt_order(procs)]
        and pack.withheld_titles == ()
    )


def test_flat_withholds_the_highest_confidence_shown_procedure_without_backfill():
    procs = flat_procedures()
    shown = [p.title for p in prompt_order(procs)]  # 6 of the 7 above the threshold
    pack = pack_flat(procs, explore_rate=1.0, rng=rng())
    assert pack.withheld_titles == ("P2",) and list(pack.shown_titles) == shown[1:]
    assert "P2" not in pack.text and "P1." not in pack.text  # P1 (0.6) was cut by the limit
    for title in shown[1:]:
        assert f"{title}\n" in pack.text
    assert pack_flat(procs[:1], explore_rate=1.0, rng=rng()).text == build_system_prompt([])


def test_flat_withholding_removes_one_listing_of_a_procedure_listed_twice():
    """The seed's prompt shows a procedure listed twice twice; withholding the top one
    removes that listing only. Before, every listing of the same object was removed: the
    text showed B alone while shown_titles said ('A', 'B')."""
    a, b = Procedure("A", "t", "d", confidence=0.9), Procedure("B", "t", "d", confidence=0.7)
    for procs in ([a, a, b], [b, a, a]):
        pack = pack_flat(procs, explore_rate=1.0, rng=rng())
        assert pack.withheld_titles == ("A",) and pack.shown_titles == ("A", "B")
        assert pack.text == build_system_prompt([a, b])
        assert pack.text.count("A\n") == 1


def test_flat_withholding_follows_the_same_rule_and_stream():
    procs = flat_procedures()
    r = rng(9)
    got = [bool(pack_flat(procs, 0.3, r).withheld_titles) for _ in range(200)]
    assert got == withhold_top(rng(9).random(200), 0.3).tolist()


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"explore_rate": 2.0}, "explore_rate=2.0"),
        ({"explore_rate": 0.5}, "rng=None"),
        ({"limit": -1}, "limit=-1"),
    ],
)
def test_flat_pack_rejects_bad_parameters(kwargs, fragment):
    with pytest.raises(ParameterError) as err:
        pack_flat(flat_procedures(), **kwargs)
    assert fragment in str(err.value)


def test_pack_keys_name_the_exact_procedure_across_namespaces(store):
    """After a fork the bare key is ambiguous: packs report namespace/key (issue 12, bug 3)."""
    store.fork("procedure_refund_full", "team")
    packer = ContextPacker(store, explore_rate=1.0, max_procedures=5, rng=rng())
    pack = packer.pack("a customer asks for a refund on a paid invoice")
    assert set(pack.procedure_keys + pack.procedure_keys_withheld) >= {
        "default/procedure_refund_full",
        "team/procedure_refund_full",
    }
    assert len(set(pack.procedure_keys + pack.procedure_keys_withheld)) == 5
    for ref in pack.procedure_keys_withheld + pack.procedure_keys:
        run = store.record_run(ref, ["n1"], ok=True)  # every session can be attributed
        assert f"{run.namespace}/{run.key}" == ref
    assert pack.procedure_revisions == (1,) * len(pack.procedure_keys)
