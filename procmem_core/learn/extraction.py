"""Validation of an extraction reply: pydantic models and the drop-or-reject policy.

A reply must be one JSON object ``{"procedures": [entry, ...]}``. Each entry must have
a non-empty ``title``, ``trigger`` and ``description`` (strings, surrounding white space
stripped) and a ``confidence`` in [0, 1]; other keys are ignored. Nothing reaches a
``Procedure`` or a store without passing ``ExtractedProcedure``.

Policies (``VALIDATION_POLICIES``):

- ``"drop"`` (default): an invalid entry is dropped and counted with its reason; so is a
  second entry with the same title (case-insensitive) and every valid entry past
  ``max_procedures`` (the first ones, in the model's order, are kept). The reply as a
  whole is accepted.
- ``"reject"``: any invalid entry, a repeated title or more than ``max_procedures``
  entries rejects the whole reply with an ``ExtractionError``.

A reply wrapped in one Markdown code fence (```json ... ```), as models without a JSON
mode often send, is read as the JSON inside it. Under both policies a reply that is not
JSON, or JSON of another shape (no ``procedures`` list), is an ``ExtractionError``;
``learn`` retries the first kind once.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from procmem_core.errors import ParameterError

VALIDATION_POLICIES = ("drop", "reject")


class ExtractedProcedure(BaseModel):
    """One procedure as the model stated it, validated."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True, frozen=True)

    title: str = Field(min_length=1, max_length=200)
    trigger: str = Field(min_length=1)
    description: str = Field(min_length=1)
    confidence: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)

    @field_validator("title", "trigger", "description")
    @classmethod
    def _visible(cls, v: str) -> str:
        """Blank by Python's ``str.strip`` (which also strips separators such as
        ``\x1f`` that pydantic keeps) is blank: ``Procedure`` would refuse it."""
        if not v.strip():
            raise ValueError("blank after stripping white space")
        return v.strip()


class LearnError(RuntimeError):
    """Base class of the errors raised while learning from a transcript."""


class ExtractionError(LearnError):
    """The model's extraction reply could not be used. Keeps every raw reply.

    ``reason``: ``"truncated"``, ``"invalid_json"``, ``"shape"``, ``"invalid_entry"``,
    ``"duplicate_title"`` or ``"too_many"``. ``raw``: the last reply's text; ``attempts``:
    the text of every attempt; ``calls``: the call records (tokens, latency) of all of them.
    """

    def __init__(
        self,
        reason: str,
        message: str,
        raw: str,
        attempts: list[str] | None = None,
        errors: list[str] | None = None,
        calls: list | None = None,
    ) -> None:
        self.reason = reason
        self.raw = raw
        self.attempts = list(attempts) if attempts is not None else [raw]
        self.errors = list(errors or [])
        self.calls = list(calls or [])
        shown = raw if len(raw) <= 200 else raw[:200] + "..."
        super().__init__(f"extraction failed ({reason}): {message}; raw reply: {shown!r}")


class InvalidJSONReply(ExtractionError):
    """The reply is not JSON (or was cut off): the one kind ``learn`` retries."""


@dataclass(frozen=True)
class DroppedEntry:
    """An entry the ``drop`` policy left out, with its position and the reason."""

    index: int
    reason: str
    entry: Any = field(repr=False)


@dataclass(frozen=True)
class ValidatedReply:
    """The entries that passed and those that were dropped."""

    procedures: list[ExtractedProcedure]
    dropped: list[DroppedEntry]


def _entry_errors(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'entry'}: {e['msg']}" for e in error.errors()
    )


_FENCE = re.compile(r"^\s*```[A-Za-z]*\s*\n(.*?)\n?\s*```\s*$", re.DOTALL)


def _unfenced(raw: str) -> str:
    """The JSON inside a Markdown code fence (models without JSON mode add one), else raw."""
    found = _FENCE.match(raw) if isinstance(raw, str) else None
    return found.group(1) if found else raw


def reply_json(raw: str) -> Any:
    """The JSON value of a model reply, a Markdown fence allowed around it: the one parse
    of every model reply (``reply_field``; the live judge). ``InvalidJSONReply`` when it
    is not JSON."""
    try:
        return json.loads(_unfenced(raw))
    except (json.JSONDecodeError, TypeError) as exc:
        raise InvalidJSONReply("invalid_json", f"not JSON ({exc})", raw or "") from None


def reply_field(raw: str, key: str, kind: type[dict] | type[list]) -> Any:
    """``data[key]`` of a JSON-mode reply ``{"<key>": {...}}`` (``kind`` dict) or
    ``{"<key>": [...]}`` (``kind`` list), a Markdown fence allowed around it (``reply_json``):
    extraction, bot rules, distill, live revisions. ``InvalidJSONReply`` when it is not
    JSON (retried), ``ExtractionError("shape")`` when the key is missing or of another
    kind."""
    data = reply_json(raw)
    if not isinstance(data, dict) or not isinstance(data.get(key), kind):
        inner = "{...}" if kind is dict else "[...]"
        raise ExtractionError("shape", f'expected an object {{"{key}": {inner}}}', raw)
    return data[key]


def validate_reply(raw: str, policy: str = "drop", max_procedures: int = 3) -> ValidatedReply:
    """Parse and validate one extraction reply under ``policy`` (see the module docstring)."""
    if policy not in VALIDATION_POLICIES:
        raise ParameterError("policy", policy, f"expected one of {list(VALIDATION_POLICIES)}")
    entries = reply_field(raw, "procedures", list)
    if policy == "reject" and len(entries) > max_procedures:
        raise ExtractionError(
            "too_many", f"{len(entries)} procedures, at most {max_procedures} allowed", raw
        )
    kept: list[ExtractedProcedure] = []
    dropped: list[DroppedEntry] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        try:
            proc = ExtractedProcedure.model_validate(entry)
        except ValidationError as exc:
            reason = f"invalid entry: {_entry_errors(exc)}"
            if policy == "reject":
                raise ExtractionError(
                    "invalid_entry", f"procedures[{i}] {reason}", raw, errors=[reason]
                ) from None
            dropped.append(DroppedEntry(i, reason, entry))
            continue
        key = proc.title.casefold()
        if key in seen:
            if policy == "reject":
                raise ExtractionError(
                    "duplicate_title", f"procedures[{i}] repeats title {proc.title!r}", raw
                )
            dropped.append(DroppedEntry(i, f"duplicate title {proc.title!r}", entry))
            continue
        if len(kept) >= max_procedures:
            dropped.append(DroppedEntry(i, f"over the limit of {max_procedures}", entry))
            continue
        seen.add(key)
        kept.append(proc)
    return ValidatedReply(kept, dropped)
