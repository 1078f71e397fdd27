"""Size caps on every text the stores accept, and the check for names that identify a row.

The seed caps one kind of text: "512 characters per edge attribute" (``graph.MAX_EDGE_TEXT``;
256 nodes, 1,024 edges, 2..64 steps). Every other cap here is procmem's choice, made so
that no single call can make a store hold megabytes (a 10 MB situation was accepted
before) while leaving room far above what the seed's examples use:

- ``MAX_IDENTIFIER`` = 256: a principal, actor, agent, user id, session id, tag, memory
  key, source, record or candidate id, procedure key or explicit key, recent tool name;
- ``MAX_NAMESPACE`` = 128: a namespace (``graph.keys.check_namespace``), so a ref
  ``namespace/key`` (a pack log's top and shown procedures) is at most ``MAX_REF`` = 385;
- ``MAX_NAME`` = 256: a procedure's name (its slug is cut at 120, ``graph.keys``);
- ``MAX_SITUATION`` = 2,000: a situation, goal, match query or memory search query;
- ``MAX_STEP_TEXT`` = 2,000: a step's text (a node's text, tool or ref);
- ``MAX_NOTE`` = 4,000: a run note, revision reason, reflection, review reason, quote
  (``graph.ledger.NOTE_LIMIT``, the same number, read from here);
- ``MAX_RECORD_TEXT`` = 20,000: a memory record's or learning candidate's text;
- ``MAX_METADATA`` = 16,384: characters of a metadata mapping as JSON.

An identifier must also be inert wherever it is shown or stored: no control character
(NUL, newline, escape, ...), no surrounding whitespace. Quotes, ``../``, ``;`` and other
SQL or path metacharacters are allowed in identifiers and stored as plain text (every
SQL statement binds its values; no identifier becomes a path); namespaces are stricter
(``graph.keys.check_namespace``: a letter or digit, then ``[A-Za-z0-9_.:-]``, <= 128).
Errors quote at most ``errors.QUOTE_LIMIT`` characters of the bad value.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from procmem_core.errors import ParameterError, check_text

MAX_IDENTIFIER = 256
MAX_NAMESPACE = 128
MAX_REF = MAX_NAMESPACE + 1 + MAX_IDENTIFIER
MAX_NAME = 256
MAX_SITUATION = 2_000
MAX_STEP_TEXT = 2_000
MAX_NOTE = 4_000
MAX_RECORD_TEXT = 20_000
MAX_METADATA = 16_384


def check_identifier(field: str, value: Any, limit: int = MAX_IDENTIFIER) -> str:
    """``value`` if it is a non-empty string of at most ``limit`` (``MAX_IDENTIFIER``)
    characters with no control character and no leading or trailing whitespace."""
    check_text(field, value, limit)
    if value != value.strip():
        raise ParameterError(field, value, "expected no leading or trailing whitespace")
    if any(unicodedata.category(ch) == "Cc" for ch in value):
        raise ParameterError(field, value, "expected no control characters (NUL, newline, ...)")
    return value


def check_capped(field: str, value: Any, limit: int) -> str:
    """``value`` if it is a non-empty string of at most ``limit`` characters."""
    return check_text(field, value, limit)


def check_optional(field: str, value: Any, limit: int) -> str | None:
    """None, or ``check_capped(field, value, limit)``."""
    return None if value is None else check_capped(field, value, limit)
