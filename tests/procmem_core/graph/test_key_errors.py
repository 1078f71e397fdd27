"""An unknown key is quoted, never echoed: ``get("x" * 10**6)`` raised an
``UnknownProcedure`` whose message held the whole million characters (``{key!r}``), as
did every method taking a key (and ``LearningsQueue.get``), where issue 25 asks for at
most a short prefix (``errors.quote``). A key that is no string is a ``ParameterError``
naming ``key`` too (it was an ``UnknownProcedure`` only), still an ``UnknownProcedure``."""

from __future__ import annotations

import pytest

from procmem_core.errors import QUOTE_LIMIT, AccessDenied, ParameterError
from procmem_core.graph import ProcedureStore, UnknownProcedure
from procmem_core.learnings import LearningsQueue, UnknownLearning
from procmem_core.memory import Principal

HUGE = "x" * 1_000_000


def _store() -> ProcedureStore:
    ps = ProcedureStore()
    ps.add("refund", "a refund request", ["look up", "issue"])
    ps.grant("vic", "default", "viewer")
    return ps


@pytest.mark.parametrize("key", [HUGE, "default/" + HUGE, "nowhere/" + HUGE])
def test_an_unknown_huge_key_is_quoted_by_a_prefix(key) -> None:
    ps = _store()
    for call in (
        lambda: ps.get(key),
        lambda: ps.get(key, principal="vic"),
        lambda: ps.record_run(key, ["n1"], ok=True),
        lambda: ps.evolve(key),
        lambda: ps.locate(key),
    ):
        with pytest.raises((UnknownProcedure, AccessDenied)) as err:
            call()
        assert len(str(err.value)) < QUOTE_LIMIT + 200
    with pytest.raises(UnknownLearning) as err:
        LearningsQueue().get(HUGE, principal=Principal("p", role="viewer"))
    assert len(str(err.value)) < QUOTE_LIMIT + 200


@pytest.mark.parametrize("key", [123, None, 1.5, b"procedure_refund", ["procedure_refund"]])
def test_a_key_that_is_no_string_is_a_parameter_error_naming_key(key) -> None:
    ps = _store()
    for call in (lambda: ps.get(key), lambda: ps.runs(key), lambda: ps.delete(key)):
        with pytest.raises(ParameterError, match="expected a procedure key string") as err:
            call()
        assert err.value.field == "key" and isinstance(err.value, UnknownProcedure)
    assert len(ps.list()) == 1
