"""The checks of one record's fields before ``MemoryStore.set`` writes it: every text
capped and every identifier inert (``procmem_core.limits``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from procmem_core.errors import ParameterError, check_text
from procmem_core.graph.keys import check_metadata, check_namespace, check_tags
from procmem_core.limits import MAX_RECORD_TEXT, check_identifier


def check_record_fields(
    text: Any,
    key: Any,
    namespace: Any,
    tags: Any,
    actor: Any,
    user_id: Any,
    source: Any,
    lineage: Any,
) -> dict[str, Any]:
    """The record's fields, checked (the text <= ``MAX_RECORD_TEXT`` characters; key, actor,
    user id, source and every lineage key identifiers), as ``MemoryRecord`` keywords."""
    check_text("text", text, MAX_RECORD_TEXT)
    for name, value in (("key", key), ("actor", actor), ("user_id", user_id), ("source", source)):
        if value is not None:
            check_identifier(name, value)
    if isinstance(lineage, str) or not isinstance(lineage, Sequence):
        raise ParameterError("lineage", lineage, "expected a list of keys")
    for item in lineage:
        check_identifier("lineage", item)
    return {
        "text": text,
        "key": key,
        "namespace": check_namespace(namespace),
        "tags": check_tags(tags),
        "actor": actor,
        "user_id": user_id,
        "source": source,
        "lineage": tuple(lineage),
    }


def check_record(
    text: Any,
    *,
    namespace: Any = "default",
    tags: Any = (),
    actor: Any = None,
    lineage: Any = (),
    metadata: Any = None,
) -> None:
    """Raise what ``MemoryStore.set`` would raise for these fields (no key, user or
    source) before it writes: ``check_record_fields`` and ``check_metadata``."""
    check_record_fields(text, None, namespace, tags, actor, None, None, lineage)
    check_metadata(metadata)
