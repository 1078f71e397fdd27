"""A procedure's key is kept per name (``keys.procedure_key``) and metadata None is a fresh
empty dict: the same keys, metadata and refusals as computing them anew each time."""

from __future__ import annotations

import pytest

from procmem_core.errors import ParameterError
from procmem_core.graph import ProcedureStore
from procmem_core.graph.keys import KEY_PREFIX, check_metadata, procedure_key, slugify

NAMES = ["Refund an invoice", "refund   AN invoice!", "Ünïcode Straße", "!!!", "x" * 300]


@pytest.mark.parametrize("name", NAMES)
def test_a_kept_key_is_the_computed_one(name):
    assert procedure_key(name) == KEY_PREFIX + slugify(name)
    assert procedure_key(name) == procedure_key(str(name))  # asked again: the same


@pytest.mark.parametrize("bad", [None, 3, "", ["a"]])
def test_a_bad_name_is_still_refused_naming_the_field(bad):
    with pytest.raises(ParameterError, match="name"):
        procedure_key(bad)


def test_no_metadata_is_a_new_empty_dict_each_time():
    a, b = check_metadata(None), check_metadata(None)
    assert a == b == {} and a is not b
    store = ProcedureStore()
    one = store.add("one", "situation one", steps=["a", "b"])
    two = store.add("two", "situation two", steps=["a", "b"])
    one.metadata["x"] = 1
    assert store.get(one.ref).metadata == {} and two.metadata == {}
    assert check_metadata({"k": (1, 2)}) == {"k": [1, 2]}  # the JSON round trip stays
