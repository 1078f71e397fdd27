"""Reflections: lessons about runs, stored as reflection memories (seed: loom-procedures.txt).

"A reflection is a lesson about a run (what_worked, what_failed, lessons, with evidence
keys), stored as a reflection memory. It is embedded but left out of unfiltered recall,
because it is a hypothesis about process, not a fact." ``write_reflection`` stores one
in a ``MemoryStore`` as a ``reflection`` record: its text is what is embedded, its
evidence keys are the record's lineage, and its fields ride in the metadata so
``read_reflection`` gives the ``Reflection`` back. ``MemoryStore.search`` leaves it out
unless asked for ``memory_type="reflection"``.

Evidence keys name what the lesson cites: ``run_key(run_id)`` (``run:<id>``),
``session_key(id)`` (``session:<id>``) or a procedure key (``procedure_<slug>``, or
``namespace/procedure_<slug>``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from procmem_core.errors import ParameterError, check_choice, check_text
from procmem_core.memory import MemoryRecord, MemoryStore, Principal
from procmem_core.memory.fields import check_record

REFLECTION_SOURCES = ("agent", "distill")
"""Who wrote it: the agent itself (``run.complete(reflection=...)``) or the distill worker."""


def run_key(run_id: int) -> str:
    """The evidence key of a ledger run."""
    return f"run:{int(run_id)}"


def session_key(session_id: str) -> str:
    """The evidence key of a session."""
    return f"session:{check_text('session_id', session_id)}"


@dataclass(frozen=True, kw_only=True)
class Reflection:
    """What worked, what failed, the lessons, and the evidence keys they rest on."""

    what_worked: str = ""
    what_failed: str = ""
    lessons: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()
    source: str = "agent"

    def __post_init__(self) -> None:
        for name in ("what_worked", "what_failed"):
            if not isinstance(getattr(self, name), str):
                raise ParameterError(name, getattr(self, name), "expected a string")
        lessons = self.lessons
        if isinstance(lessons, str) or not isinstance(lessons, Sequence):
            raise ParameterError("lessons", lessons, "expected a list of non-empty strings")
        for lesson in lessons:
            check_text("lessons", lesson)
        object.__setattr__(self, "lessons", tuple(lessons))
        if not (self.what_worked.strip() or self.what_failed.strip() or self.lessons):
            raise ParameterError(
                "reflection", "", "expected what_worked, what_failed or at least one lesson"
            )
        ev = self.evidence
        if isinstance(ev, str) or not isinstance(ev, Sequence) or not ev:
            raise ParameterError("evidence", ev, "expected at least one run or procedure key")
        for key in ev:
            check_text("evidence", key)
        object.__setattr__(self, "evidence", tuple(dict.fromkeys(ev)))
        check_choice("source", self.source, REFLECTION_SOURCES)

    @classmethod
    def coerce(cls, value: Any, evidence: Sequence[str], source: str = "agent") -> Reflection:
        """A reflection from what a caller passes: a ``Reflection`` (its evidence extended),
        a mapping of the fields, or plain text (one lesson)."""
        if isinstance(value, Reflection):
            return replace(value, evidence=(*value.evidence, *evidence))
        if isinstance(value, str):
            return cls(
                lessons=(check_text("reflection", value),), evidence=tuple(evidence), source=source
            )
        if isinstance(value, Mapping):
            allowed = ("what_worked", "what_failed", "lessons", "evidence")
            extra = sorted(set(value) - set(allowed))
            if extra:
                raise ParameterError(f"reflection.{extra[0]}", value[extra[0]], f"one of {allowed}")
            lessons = value.get("lessons", ())
            return cls(
                what_worked=value.get("what_worked", ""),
                what_failed=value.get("what_failed", ""),
                lessons=(lessons,) if isinstance(lessons, str) else tuple(lessons),
                evidence=(*value.get("evidence", ()), *evidence),
                source=source,
            )
        raise ParameterError("reflection", value, "expected text, a mapping or a Reflection")

    def text(self) -> str:
        """The text stored and embedded: the three parts, labelled."""
        lines = []
        if self.what_worked.strip():
            lines.append(f"What worked: {self.what_worked.strip()}")
        if self.what_failed.strip():
            lines.append(f"What failed: {self.what_failed.strip()}")
        if self.lessons:
            lines.append("Lessons:")
            lines += [f"- {lesson.strip()}" for lesson in self.lessons]
        return "\n".join(lines)

    def to_metadata(self) -> dict[str, Any]:
        return {
            "what_worked": self.what_worked,
            "what_failed": self.what_failed,
            "lessons": list(self.lessons),
            "evidence": list(self.evidence),
            "source": self.source,
        }


def write_reflection(
    memory: MemoryStore,
    reflection: Reflection,
    *,
    namespace: str = "default",
    actor: str | None = None,
    principal: Principal | None = None,
) -> MemoryRecord:
    """Store ``reflection`` as a reflection memory (lineage: its evidence keys)."""
    fields = reflection_fields(reflection, namespace, actor)
    return memory.set(reflection.text(), "reflection", **fields, principal=principal)


def reflection_fields(
    reflection: Reflection, namespace: str = "default", actor: str | None = None
) -> dict[str, Any]:
    """The keywords ``write_reflection`` gives ``MemoryStore.set`` besides the text and type
    (namespace, tags, actor, lineage: the evidence, metadata: the fields), checked as
    ``set`` checks them (``check_record``), so a caller can refuse before other writes."""
    if not isinstance(reflection, Reflection):
        raise ParameterError("reflection", reflection, "expected a Reflection")
    fields = {
        "namespace": namespace,
        "tags": (f"reflection:{reflection.source}",),
        "actor": actor,
        "lineage": reflection.evidence,
        "metadata": reflection.to_metadata(),
    }
    check_record(reflection.text(), **fields)
    return fields


def record_reflection(
    memory: MemoryStore,
    *,
    evidence: Sequence[str],
    what_worked: str = "",
    what_failed: str = "",
    lessons: Sequence[str] | str = (),
    namespace: str = "default",
    actor: str | None = None,
    principal: Principal | None = None,
) -> MemoryRecord:
    """The agent's own lesson (``run.complete(..., reflection=...)``): evidence keys (runs,
    procedures) and the three parts, stored by ``write_reflection``."""
    reflection = Reflection(
        what_worked=what_worked,
        what_failed=what_failed,
        lessons=(lessons,) if isinstance(lessons, str) else tuple(lessons),
        evidence=tuple(evidence),
    )
    return write_reflection(
        memory, reflection, namespace=namespace, actor=actor, principal=principal
    )


def read_reflection(record: MemoryRecord) -> Reflection:
    """The ``Reflection`` a reflection record holds."""
    if record.memory_type != "reflection":
        raise ParameterError("record", record.record_id, "expected a reflection record")
    m = record.metadata
    return Reflection(
        what_worked=m["what_worked"],
        what_failed=m["what_failed"],
        lessons=tuple(m["lessons"]),
        evidence=tuple(m["evidence"]),
        source=m["source"],
    )


def reflections_citing(memory: MemoryStore, key: str) -> list[MemoryRecord]:
    """Every reflection record whose evidence includes ``key``, oldest first. A key with no
    ``/`` reads as the record's namespace's (``procedure_x`` in namespace ``default`` is
    ``default/procedure_x``, the form ``complete_run`` cites), on either side."""
    check_text("key", key)
    return [r for r in memory.records("reflection") if _cites(r, key)]


def _cites(record: MemoryRecord, key: str) -> bool:
    def full(k: str) -> str:
        return k if "/" in k else f"{record.namespace}/{k}"

    return any(e == key or full(e) == full(key) for e in record.lineage)
