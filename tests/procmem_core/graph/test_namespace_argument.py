"""A namespace argument is a name or a list of names (``graph.keys.check_namespaces``,
shared by the procedure and memory stores). Before, ``namespace=5`` raised a bare
``TypeError`` ('int' object is not iterable) from ``match``, ``list``, packs,
``MemoryStore.search`` and ``records``, and a mapping was read as its keys."""

from __future__ import annotations

import pytest

from procmem_core.errors import ParameterError
from procmem_core.graph import ContextPacker, ProcedureStore
from procmem_core.memory import MemoryStore

BAD = [5, 2.5, b"default", {"default": "viewer"}, None.__class__]


@pytest.mark.parametrize("bad", BAD)
def test_a_namespace_that_is_no_name_or_list_is_refused_naming_it(bad) -> None:
    ps = ProcedureStore()
    ps.add("refund", "a refund request", ["look up", "issue"])
    mem = MemoryStore()
    mem.set("refunds within 30 days")
    calls = [
        lambda: ps.match("a refund request", namespace=bad),
        lambda: ps.prepare_match("a refund request", namespace=bad),
        lambda: ps.list(namespace=bad),
        lambda: ContextPacker(ps, namespace=bad).pack("a refund request"),
        lambda: mem.search("refunds", namespace=bad),
        lambda: mem.records(namespace=bad),
    ]
    for call in calls:
        with pytest.raises(ParameterError, match="a namespace name or a list") as err:
            call()
        assert err.value.field == "namespace"


def test_names_lists_tuples_and_sets_still_select() -> None:
    ps = ProcedureStore()
    ps.add("refund", "a refund request", ["look up", "issue"], namespace="team-a")
    ps.add("refund", "a refund request", ["look up", "issue"], namespace="team-b")
    for given, want in [
        ("team-a", ["team-a"]),
        (["team-b"], ["team-b"]),
        (("team-a", "team-b"), ["team-a", "team-b"]),
        ({"team-b"}, ["team-b"]),
        ([], []),
    ]:
        assert sorted(m.namespace for m in ps.match("a refund request", namespace=given)) == want
        assert [p.namespace for p in ps.list(namespace=given)] == want
