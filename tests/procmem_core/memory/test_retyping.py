"""The retyping rule (seed: "A procedural row written with memory.set that is not a
procedure body (a non-empty situation and at least two steps) is stored as semantic,
tagged retyped_from:procedural"), in memory and on SQLite."""

from __future__ import annotations

import pytest

from procmem_core.errors import ParameterError, ProcmemError
from procmem_core.memory import RETYPED_TAG, MemoryStore, Principal, procedure_body

BODY = {
    "name": "refund request",
    "situation": "a customer asks for a refund on a paid invoice",
    "steps": ["look up the invoice", "check the refund policy window", "issue or decline"],
}

NOT_BODIES = [  # (row, the text it is stored with)
    ("always look up the invoice first", "always look up the invoice first"),
    (
        {"name": "refund", "situation": "a refund", "steps": ["look up the invoice"]},
        "refund. a refund. look up the invoice",
    ),
    ({"name": "refund", "situation": "", "steps": ["look up", "pay"]}, "refund. look up. pay"),
    ({"name": "refund", "situation": "   ", "steps": ["look up", "pay"]}, "refund. look up. pay"),
    ({"name": "refund", "steps": ["look up", "pay"]}, "refund. look up. pay"),
    ({"situation": "a refund", "steps": "look up, then pay"}, "a refund. look up, then pay"),
    ({"situation": "a refund", "steps": ["look up", ""]}, "a refund. look up"),
    ({"situation": "a refund"}, "a refund"),
]


def test_a_procedure_body_becomes_a_procedure_not_a_record(backend):
    written = backend.memory.set_procedural(BODY, tags=["billing"], actor="triage-bot")
    assert written.kind == "procedure" and written.record is None
    key = written.procedure.key
    assert key == "procedure_refund_request"
    assert len(backend.memory) == 0
    backend.reopen()
    stored = backend.procedures.get(key)
    assert stored.steps == tuple(BODY["steps"])
    assert stored.situation == BODY["situation"]
    assert stored.tags == ("billing",)
    assert stored.actor == "triage-bot"
    assert stored.graph.node_ids == ("n1", "n2", "n3")
    assert backend.procedures.match("customer wants a refund for an invoice")[0].key == key


@pytest.mark.parametrize(("row", "text"), NOT_BODIES)
def test_a_row_that_is_not_a_procedure_body_is_stored_as_semantic(backend, row, text):
    written = backend.memory.set_procedural(row, tags=["billing"], user_id="u1")
    assert written.kind == "memory" and written.procedure is None
    record = written.record
    assert record.memory_type == "semantic"
    assert record.tags == ("billing", RETYPED_TAG)
    assert record.text == text
    assert len(backend.procedures) == 0
    backend.reopen()
    again = backend.memory.get(record.record_id)
    assert again.tags == ("billing", RETYPED_TAG)
    assert again.metadata["procedural_body"] == (row if isinstance(row, str) else dict(row))
    assert backend.memory.search(text, tags=[RETYPED_TAG])[0].record.record_id == record.record_id


def test_procedure_body_is_the_rule_in_one_place():
    assert procedure_body(BODY) == (BODY["situation"], tuple(BODY["steps"]))
    for row, _ in NOT_BODIES:
        assert procedure_body(row) is None


def test_a_body_needs_a_procedure_store_and_a_name():
    with pytest.raises(ParameterError, match=r"procedures=None.*ProcedureStore"):
        MemoryStore().set_procedural(BODY)
    from procmem_core.graph import ProcedureStore

    m = MemoryStore(procedures=ProcedureStore())
    nameless = {k: v for k, v in BODY.items() if k != "name"}
    with pytest.raises(ParameterError, match="name=None"):
        m.set_procedural(nameless)
    assert m.set_procedural(nameless, name="refund").procedure.key == "procedure_refund"
    with pytest.raises(ParameterError, match="value=''"):
        m.set_procedural("")
    with pytest.raises(ProcmemError, match=r"65 steps, allowed 2..64"):  # the store's own rule
        m.set_procedural({**BODY, "name": "long", "steps": [f"step {i}" for i in range(65)]})


def test_set_procedural_needs_a_writer(backend):
    from procmem_core.memory import AccessDenied

    with pytest.raises(AccessDenied, match=r"memory.set"):
        backend.memory.set_procedural(BODY, principal=Principal("v", "viewer"))
    assert len(backend.procedures) == 0
