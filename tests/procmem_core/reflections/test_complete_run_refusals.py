"""``reflections.complete_run`` checks both stores before it writes (its docstring's
promise): a lesson the memory store would refuse records no run and rates no session.
Before, the runs were recorded and the pack-log session rated, then the memory write
raised: an agent name with a newline, an evidence key over 256 characters (a 128-character
namespace), a Hindi lesson of 3,000 characters (16,384 characters of metadata as JSON),
and a session completed with no procedure key (no evidence). Both backends."""

from __future__ import annotations

import pytest

from procmem_core.errors import ParameterError
from procmem_core.reflections import complete_run, read_reflection

STEPS = ["look up the invoice", "issue the refund"]
LONG_NS = "n" * 128
LONG_KEY = "procedure_" + "a" * 200


def _state(b) -> tuple:
    ps = b.procedures
    runs = [(p.ref, ps.runs(p.ref)) for p in ps.list()]
    return runs, [r.outcome for r in ps.pack_log()], [r.to_json() for r in b.memory.records()]


def _seed(b) -> None:
    ps = b.procedures
    ps.add("refund", "a customer asks for a refund", STEPS)
    ps.add("long", "a customer asks for a refund", STEPS, namespace=LONG_NS, key=LONG_KEY)
    ps.log_pack("s1", "default/procedure_refund", False, 0.0, ["default/procedure_refund"])


@pytest.mark.parametrize(
    ("used", "lesson", "details", "field"),
    [
        (["procedure_refund"], "confirm the invoice id", {"agent": "bot\n"}, "agent"),
        (["procedure_refund"], "confirm the invoice id", {"agent": "bot "}, "agent"),
        ([f"{LONG_NS}/{LONG_KEY}"], "confirm the invoice id", {}, "lineage"),
        (["procedure_refund"], "आ" * 3000, {}, "metadata"),
        (["mem_1"], "confirm the invoice id", {}, "evidence"),
    ],
)
def test_a_lesson_memory_refuses_records_no_run(backend, used, lesson, details, field) -> None:
    _seed(backend)
    before = _state(backend)
    with pytest.raises(ParameterError) as err:
        complete_run(
            backend.procedures, used, True, lesson, memory=backend.memory, session_id="s1",
            **details,
        )  # fmt: skip
    assert err.value.field == field
    assert _state(backend) == before
    assert _state(backend.reopen()) == before


def test_a_run_agent_must_be_an_identifier(backend) -> None:
    """The run's agent is an identifier (``procmem_core.limits``): a name with a control
    character or surrounding whitespace was stored, so ``for_agent="bot"`` never found
    the runs of ``"bot "`` and the memory store refused it as an actor."""
    _seed(backend)
    ps = backend.procedures
    for bad in ("bot ", "bot\x00", "\tbot", "a\nb"):
        with pytest.raises(ParameterError) as err:
            ps.record_run("procedure_refund", ["n1", "n2"], ok=True, agent=bad)
        assert err.value.field == "agent"
        with pytest.raises(ParameterError):
            ps.complete_run(["procedure_refund"], ok=True, agent=bad)
    assert ps.runs("procedure_refund") == ()
    run = ps.record_run("procedure_refund", ["n1", "n2"], ok=True, agent="bot's ../x;")
    assert run.agent == "bot's ../x;"  # quotes and metacharacters: inert text


def test_a_lesson_memory_takes_is_written_once_with_its_evidence(backend) -> None:
    """The check adds no refusal for a lesson that fits: both keys of one procedure give one
    run, the session is rated, and the lesson cites that run and procedure."""
    _seed(backend)
    runs = complete_run(
        backend.procedures, ["procedure_refund", "default/procedure_refund", "mem_9"], False,
        "आ" * 2000, memory=backend.memory, session_id="s1", agent="bot",
    )  # fmt: skip
    assert [f"{r.namespace}/{r.key}" for r in runs] == ["default/procedure_refund"]
    assert [r.outcome for r in backend.procedures.pack_log()] == [0]
    (record,) = backend.memory.records("reflection")
    assert (record.namespace, record.actor) == ("default", "bot")
    assert read_reflection(record).evidence == (
        f"run:{runs[0].run_id}",
        "default/procedure_refund",
    )
    assert read_reflection(record).lessons == ("आ" * 2000,)
