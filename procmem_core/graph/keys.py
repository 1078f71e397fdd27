"""Procedure keys, namespaces, tags and metadata: how the store names and checks them.

A procedure is stored under ``procedure_<slug of name>`` within its namespace;
``namespace/key`` names it unambiguously when forks share a key across namespaces.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from procmem_core.errors import ParameterError, ProcmemError, check_text

_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")


class UnknownProcedure(ProcmemError, KeyError):
    """No procedure under this key (or the bare key is held by several namespaces)."""

    def __str__(self) -> str:
        return str(self.args[0])


def slugify(name: str) -> str:
    """Lower-case ASCII letters and digits, runs of anything else as one ``_``."""
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    if not slug:
        raise ParameterError("name", name, "expected a name with at least one letter or digit")
    return slug


def check_tags(tags: Any) -> tuple[str, ...]:
    if isinstance(tags, str) or not isinstance(tags, Sequence):
        raise ParameterError("tags", tags, "expected a list of non-empty strings")
    for t in tags:
        check_text("tags", t)
    return tuple(tags)


def check_namespace(namespace: Any) -> str:
    if not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace):
        raise ParameterError(
            "namespace", namespace, f"expected a name matching {_NAMESPACE.pattern}"
        )
    return namespace


def check_metadata(metadata: Any) -> dict[str, Any]:
    """A copy of ``metadata`` as plain JSON values (tuples become lists); None is ``{}``."""
    meta = {} if metadata is None else metadata
    if not isinstance(meta, Mapping):
        raise ParameterError("metadata", metadata, "expected a mapping or None")
    try:
        return json.loads(json.dumps(dict(meta)))
    except (TypeError, ValueError):
        raise ParameterError("metadata", metadata, "expected JSON-serialisable values") from None
