"""Extracted flat procedures into a ``ProcedureStore`` as candidate graph procedures."""

from __future__ import annotations

import re
from collections.abc import Sequence

from procmem_core.flat import Procedure
from procmem_core.graph import ProcedureStore, StoredProcedure, slugify

CHECK_STEP = "Check the situation: "


def _steps(proc: Procedure) -> list[str]:
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", proc.description) if s.strip()]
    steps = [CHECK_STEP + proc.trigger, *sentences]
    return steps[:64]


def to_candidates(
    store: ProcedureStore,
    procedures: Sequence[Procedure],
    namespace: str = "default",
    tags: Sequence[str] = ("learned",),
) -> list[StoredProcedure]:
    """Add extracted flat procedures to a ``ProcedureStore`` as candidates.

    Mapping: name <- title; situation <- trigger; steps <- ``"Check the situation:
    <trigger>"`` followed by the description's sentences (so always 2..64 steps);
    tags <- ``tags``; metadata <- {"source": "learn", "model", "confidence": the stated
    confidence, "description"}; ``candidate=True`` (machine-mined: status "candidate",
    listed last in matches until it has runs). A title whose key already exists in
    ``namespace`` is not added again: its stored snapshot is returned unchanged, so
    learning the same rule twice never duplicates it. Returns one snapshot per procedure.
    """
    out = []
    for proc in procedures:
        ref = f"{namespace}/procedure_{slugify(proc.title)}"
        existing = [p for p in store.list(prefix=ref.split("/", 1)[1]) if p.ref == ref]
        if existing:
            out.append(existing[0])
            continue
        metadata = {
            **proc.metadata,
            "source": "learn",
            "confidence": proc.confidence,
            "description": proc.description,
        }
        out.append(
            store.add(
                proc.title,
                proc.trigger,
                steps=_steps(proc),
                tags=tuple(tags),
                metadata=metadata,
                namespace=namespace,
                candidate=True,
            )
        )
    return out
