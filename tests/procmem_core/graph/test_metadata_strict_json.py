"""Metadata is strict JSON (``graph.keys.check_metadata``, used by the procedure and memory
stores): NaN and infinity were accepted and stored as the non-JSON tokens ``NaN`` and
``Infinity`` (``json.dumps``' default), which strict parsers refuse. Now a
``ParameterError`` names ``metadata`` and nothing is stored. Both backends."""

from __future__ import annotations

import math

import pytest

from procmem_core.errors import ParameterError
from procmem_core.graph.keys import check_metadata

BAD = [
    {"rate": math.nan},
    {"cost": math.inf},
    {"deep": {"xs": [1.0, -math.inf]}},
]


@pytest.mark.parametrize("meta", BAD)
def test_non_json_numbers_are_refused_and_nothing_is_stored(backend, meta) -> None:
    ps, mem = backend.procedures, backend.memory
    with pytest.raises(ParameterError, match="no NaN") as err:
        ps.add("refund", "a customer asks for a refund", ["look up", "issue"], metadata=meta)
    assert err.value.field == "metadata"
    with pytest.raises(ParameterError) as err:
        mem.set("refunds within 30 days", metadata=meta)
    assert err.value.field == "metadata"
    backend.reopen()
    assert (backend.procedures.list(), backend.memory.records()) == ([], [])


def test_finite_json_values_round_trip(backend) -> None:
    meta = {"rate": 0.1 + 0.2, "n": 3, "big": 1e308, "tags": ("a", "b"), "none": None}
    ps = backend.procedures
    ps.add("refund", "a customer asks for a refund", ["look up", "issue"], metadata=meta)
    want = {"rate": 0.30000000000000004, "n": 3, "big": 1e308, "tags": ["a", "b"], "none": None}
    assert backend.reopen().procedures.get("procedure_refund").metadata == want
    assert check_metadata(None) == {}
