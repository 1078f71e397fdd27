"""Extracted procedures become candidate graph procedures in a ProcedureStore."""

from __future__ import annotations

import pytest

from procmem_core.flat import Procedure
from procmem_core.graph import ProcedureStore
from procmem_core.learn import LLMConfig, learn, make_client
from procmem_core.learn.candidates import CHECK_STEP, to_candidates
from simulators.llm_server import OfflineServer

SESSION = [
    {"role": "user", "content": "What's the worst case? Give me a clear list of what to do next."},
    {"role": "assistant", "content": "Keep an emergency fund first. Then a liquid fund."},
]


@pytest.fixture
def learned():
    with OfflineServer() as server:
        config = LLMConfig(base_url=server.base_url, model="procmem-offline")
        return learn(SESSION, make_client(config), config).procedures


def test_learned_procedures_are_stored_as_candidates_with_a_documented_mapping(learned):
    store = ProcedureStore()
    batch = to_candidates(store, learned, namespace="fincoach")
    stored = batch.stored
    assert len(stored) == len(store) == 3 and batch.added == 3
    assert batch.collisions == () and batch.failures == ()
    for proc, snap in zip(learned, stored, strict=True):
        assert (snap.name, snap.situation, snap.namespace) == (proc.title, proc.trigger, "fincoach")
        assert snap.status == "candidate" and snap.runs == 0
        assert snap.steps[0] == CHECK_STEP + proc.trigger
        assert " ".join(snap.steps[1:]) == proc.description
        assert snap.metadata["confidence"] == proc.confidence
        assert snap.metadata["source"] == "learn" and snap.metadata["model"] == "procmem-offline"
        assert snap.tags == ("learned",)


def test_learning_the_same_rule_twice_does_not_duplicate_it(learned):
    store = ProcedureStore()
    first = to_candidates(store, learned)
    again = to_candidates(store, learned)
    assert len(store) == 3 and (again.added, again.existing) == (0, 3)
    assert [s.ref for s in again.stored] == [s.ref for s in first.stored]
    other = to_candidates(store, learned[:1], namespace="another_agent")
    assert len(store) == 4 and other.stored[0].namespace == "another_agent"


def test_candidates_rank_after_authored_procedures_in_matches():
    store = ProcedureStore()
    store.add(
        "Worst case for debt funds",
        "the user asks about the worst case of a debt fund",
        steps=["Find the fund's worst year", "State the loss in rupees"],
    )
    mined = Procedure(
        "Quantify the worst case",
        "the user asks about the worst case of a debt fund investment",
        "Always quantify the worst case. Say it in rupees.",
        confidence=0.85,
    )
    (candidate,) = to_candidates(store, [mined]).stored
    assert len(candidate.steps) == 3
    matches = store.match("the user asks about the worst case of a debt fund investment")
    assert [m.status for m in matches] == ["authored", "candidate"]


def _proc(title, trigger="the user asks about a debt fund"):
    return Procedure(title, trigger, "Always quantify the worst case.", confidence=0.7)


def test_any_non_empty_title_gets_a_key():
    store = ProcedureStore()
    titles = ["आपातकालीन निधि", "緊急資金を確認する", "!!!", "Ünïcode title"]
    batch = to_candidates(store, [_proc(t) for t in titles])
    assert batch.failures == () and batch.added == 4
    keys = [s.key for s in batch.stored]
    assert keys[:2] == ["procedure_आपातकालीन_निधि", "procedure_緊急資金を確認する"]
    assert keys[2].startswith("procedure_h") and len(keys[2]) == len("procedure_h") + 10
    assert keys[3] == "procedure_ünïcode_title"
    assert [s.name for s in batch.stored] == titles


def test_titles_that_share_a_key_are_kept_apart_and_counted():
    store = ProcedureStore()
    titles = ["Quantify the worst case", "Quantify the worst-case!", "quantify THE worst case"]
    batch = to_candidates(store, [_proc(t) for t in titles])
    assert [s.key for s in batch.stored] == [
        "procedure_quantify_the_worst_case",
        "procedure_quantify_the_worst_case_2",
        "procedure_quantify_the_worst_case",  # the same title, case aside: the same rule
    ]
    assert (batch.added, batch.existing, len(store)) == (2, 1, 2)
    (collision,) = batch.collisions
    assert (collision.title, collision.taken_by, collision.key) == (
        "Quantify the worst-case!",
        "Quantify the worst case",
        "procedure_quantify_the_worst_case_2",
    )
    again = to_candidates(store, [_proc("Quantify the worst-case!")])
    assert again.existing == 1 and again.stored[0].key.endswith("_2")


def test_a_procedure_the_store_refuses_is_a_recorded_failure_and_the_rest_go_in():
    store = ProcedureStore()
    bad = Procedure("x" * 10, " ", "One.", confidence=0.7)  # no validated extraction sends it
    batch = to_candidates(store, [bad, _proc("Keep a list")])
    assert batch.added == 1 and [s.name for s in batch.stored] == ["Keep a list"]
    (failure,) = batch.failures
    assert failure.title == "x" * 10 and "situation" in failure.error
