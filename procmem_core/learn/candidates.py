"""Extracted flat procedures into a ``ProcedureStore`` as candidate graph procedures.

Keys: a title's key is ``procedure_<slug>`` (``graph.keys.slugify``: any non-empty title
has one, in any script). A title already stored in the namespace (the same title, case
aside) is the same rule learned again: its snapshot is returned unchanged. A different
title with the same slug ("Quantify the worst case" / "Quantify the worst-case!") is a
collision: it is stored under the first free ``<key>_2``, ``<key>_3``, ... and counted,
never merged into the other. A procedure the store refuses (``ProcmemError``) is kept
in ``failures`` with the reason, and the others are still added.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from procmem_core.errors import ProcmemError
from procmem_core.flat import Procedure
from procmem_core.graph import ProcedureStore, StoredProcedure, procedure_key

CHECK_STEP = "Check the situation: "
MAX_SUFFIX = 999


@dataclass(frozen=True, kw_only=True)
class KeyCollision:
    """A title whose key another title in the namespace already held."""

    title: str
    taken_by: str
    key: str


@dataclass(frozen=True, kw_only=True)
class CandidateFailure:
    """A procedure the store refused, and why."""

    title: str
    error: str


@dataclass(frozen=True, kw_only=True)
class CandidateBatch:
    """What ``to_candidates`` did: one snapshot per procedure stored or found (in order),
    how many were new, the key collisions resolved and the procedures refused."""

    stored: tuple[StoredProcedure, ...]
    added: int
    existing: int
    collisions: tuple[KeyCollision, ...]
    failures: tuple[CandidateFailure, ...]


def _steps(proc: Procedure) -> list[str]:
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", proc.description) if s.strip()]
    steps = [CHECK_STEP + proc.trigger, *sentences]
    return steps[:64]


def _free_key(
    store: ProcedureStore, namespace: str, title: str
) -> tuple[str, StoredProcedure | None]:
    """The key for ``title``: its own, or the first free suffixed one; and the stored
    snapshot when the same title is already there."""
    base = procedure_key(title)
    held = {p.key: p for p in store.list(prefix=base) if p.namespace == namespace}
    for n in range(1, MAX_SUFFIX + 1):
        key = base if n == 1 else f"{base}_{n}"
        other = held.get(key)
        if other is None:
            return key, None
        if other.name.casefold() == title.casefold():
            return key, other
    raise ProcmemError(f"{MAX_SUFFIX} procedures already share the key {base!r}")


def to_candidates(
    store: ProcedureStore,
    procedures: Sequence[Procedure],
    namespace: str = "default",
    tags: Sequence[str] = ("learned",),
    actor: str | None = None,
) -> CandidateBatch:
    """Add extracted flat procedures to ``store`` as candidates (see the module doc).

    Mapping: name <- title; situation <- trigger; steps <- ``"Check the situation:
    <trigger>"`` followed by the description's sentences (so always 2..64 steps);
    tags <- ``tags``; metadata <- {"source": "learn", "model", "confidence": the stated
    confidence, "description"}; actor <- ``actor``; ``candidate=True`` (machine-mined:
    status "candidate", listed last in matches until it has runs).
    """
    stored, collisions, failures, added, existing = [], [], [], 0, 0
    for proc in procedures:
        try:
            key, same = _free_key(store, namespace, proc.title)
            if same is not None:
                stored.append(same)
                existing += 1
                continue
            if key != procedure_key(proc.title):
                taken = store.get(f"{namespace}/{procedure_key(proc.title)}").name
                collisions.append(KeyCollision(title=proc.title, taken_by=taken, key=key))
            metadata = {
                **proc.metadata,
                "source": "learn",
                "confidence": proc.confidence,
                "description": proc.description,
            }
            snap = store.add(
                proc.title, proc.trigger, steps=_steps(proc), tags=tuple(tags),
                metadata=metadata, namespace=namespace, candidate=True, actor=actor, key=key,
            )  # fmt: skip
            stored.append(snap)
            added += 1
        except ProcmemError as exc:
            failures.append(CandidateFailure(title=proc.title, error=str(exc)))
    return CandidateBatch(
        stored=tuple(stored),
        added=added,
        existing=existing,
        collisions=tuple(collisions),
        failures=tuple(failures),
    )
