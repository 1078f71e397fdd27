"""Procedure keys, namespaces, tags and metadata: how the store names and checks them.

A procedure is stored under ``procedure_<slug of name>`` within its namespace;
``namespace/key`` names it unambiguously when forks share a key across namespaces.
Every non-empty name has a slug (``slugify``): letters of any script, their marks and
digits are kept, so ``आपातकालीन निधि`` keys as itself; a name with none of them keys by a
stable hash. Two names can share a slug ("the worst case" / "the worst-case!"): the
store refuses the second, and callers that mean a different procedure pick another key
(``learn.candidates`` counts such collisions and suffixes ``_2``, ``_3``, ...).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from procmem_core.errors import ParameterError, ProcmemError, check_text
from procmem_core.limits import MAX_IDENTIFIER, MAX_METADATA, MAX_NAMESPACE, check_identifier

_NAMESPACE = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.:-]{{0,{MAX_NAMESPACE - 1}}}")


class UnknownProcedure(ProcmemError, KeyError):
    """No procedure under this key (or the bare key is held by several namespaces)."""

    def __str__(self) -> str:
        return str(self.args[0])


class KeyNotText(UnknownProcedure, ParameterError):
    """A key that is not a string: an ``UnknownProcedure`` (no procedure has it) and a
    ``ParameterError`` naming ``key``."""

    def __init__(self, key: object) -> None:
        ParameterError.__init__(self, "key", key, "expected a procedure key string")


KEY_PREFIX = "procedure_"
SLUG_LIMIT = 120
"""Longer slugs are cut and end in ``_`` + 10 hex digits of the name's SHA-256."""


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:10]


def slugify(name: str) -> str:
    """The slug of a non-empty name: NFKC-normalised and case-folded; letters (any script),
    combining marks and digits kept; every run of anything else one ``_``. A name with no
    letter or digit slugs to ``h`` + 10 hex digits of its SHA-256 (stable everywhere)."""
    check_text("name", name)
    parts, word = [], []
    for ch in unicodedata.normalize("NFKC", name).casefold():
        if unicodedata.category(ch)[0] in "LMN" and (word or unicodedata.category(ch)[0] != "M"):
            word.append(ch)
        elif word:
            parts.append("".join(word))
            word = []
    if word:
        parts.append("".join(word))
    slug = "_".join(parts)
    if not slug:
        return "h" + _digest(name)
    if len(slug) > SLUG_LIMIT:
        slug = slug[: SLUG_LIMIT - 11].rstrip("_") + "_" + _digest(name)
    return slug


def procedure_key(name: str) -> str:
    """``procedure_<slug of name>``, the key ``add`` gives a procedure (a string's key is
    kept: the slug is a pure function of the name, and a simulation adds the same names to
    every replication's store)."""
    if type(name) is str:
        return _key_of(name)
    return KEY_PREFIX + slugify(name)  # raises, naming the field


@functools.lru_cache(maxsize=4096)
def _key_of(name: str) -> str:
    return KEY_PREFIX + slugify(name)


def check_key(key: object) -> str:
    """An explicit key for ``add``: ``procedure_`` then words of letters, marks or digits
    joined by single ``_`` (the shape ``procedure_key`` produces)."""
    body = key[len(KEY_PREFIX) :] if isinstance(key, str) and len(key) <= MAX_IDENTIFIER else ""
    words = body.split("_")
    if not (
        isinstance(key, str)
        and key.startswith(KEY_PREFIX)
        and all(w and all(unicodedata.category(c)[0] in "LMN" for c in w) for w in words)
    ):
        raise ParameterError(
            "key",
            key,
            "expected 'procedure_' then letters or digits joined by single '_' "
            f"(at most {MAX_IDENTIFIER} characters)",
        )
    return key


def check_tags(tags: Any) -> tuple[str, ...]:
    if isinstance(tags, str) or not isinstance(tags, Sequence):
        raise ParameterError("tags", tags, "expected a list of non-empty strings")
    for t in tags:
        check_identifier("tags", t)
    return tuple(tags)


def check_namespace(namespace: Any) -> str:
    if not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace):
        raise ParameterError(
            "namespace", namespace, f"expected a name matching {_NAMESPACE.pattern}"
        )
    return namespace


def check_namespaces(namespace: Any) -> list[str]:
    """A namespace argument that names one or several: a name, or a list (tuple, set) of
    names, each ``check_namespace``ed; anything else (a number, bytes, a mapping) raises
    a ``ParameterError`` naming ``namespace``."""
    if isinstance(namespace, str):
        return [check_namespace(namespace)]
    if isinstance(namespace, bytes | Mapping) or not isinstance(namespace, Sequence | AbstractSet):
        raise ParameterError(
            "namespace", namespace, "expected a namespace name or a list of namespace names"
        )
    return [check_namespace(ns) for ns in namespace]


def check_metadata(metadata: Any) -> dict[str, Any]:
    """A copy of ``metadata`` as plain JSON values (tuples become lists; NaN and infinity,
    which strict JSON parsers refuse, are refused); None is ``{}``."""
    if metadata is None:  # what the JSON round trip of {} gives: a new empty dict
        return {}
    meta = metadata
    if not isinstance(meta, Mapping):
        raise ParameterError("metadata", metadata, "expected a mapping or None")
    try:  # strict JSON (RFC 8259): NaN and infinity are not JSON numbers
        text = json.dumps(dict(meta), allow_nan=False)
    except (TypeError, ValueError):
        raise ParameterError(
            "metadata", metadata, "expected JSON values (strings, finite numbers, ...; no NaN)"
        ) from None
    if len(text) > MAX_METADATA:
        raise ParameterError(
            "metadata", metadata, f"expected at most {MAX_METADATA} characters as JSON"
        )
    return json.loads(text)
