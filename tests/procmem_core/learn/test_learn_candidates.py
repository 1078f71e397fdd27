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
    stored = to_candidates(store, learned, namespace="fincoach")
    assert len(stored) == len(store) == 3
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
    assert len(store) == 3
    assert [s.ref for s in again] == [s.ref for s in first]
    other = to_candidates(store, learned[:1], namespace="another_agent")
    assert len(store) == 4 and other[0].namespace == "another_agent"


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
    (candidate,) = to_candidates(store, [mined])
    assert len(candidate.steps) == 3
    matches = store.match("the user asks about the worst case of a debt fund investment")
    assert [m.status for m in matches] == ["authored", "candidate"]
