"""``complete_run``: the seed's ``run.complete`` with the agent's lesson (seed:
loom-procedures.txt, "Reflections"), a service above both stores.

The procedure store records the runs (``ProcedureStore.complete_run``: one run with an
empty path per procedure key used, each carrying the lesson on its record) and knows
nothing of memory; this function then, holding no store lock, writes the lesson to the
memory store as a reflection record whose evidence is the runs and the procedures
(``write_reflection``). So no store calls another while holding its lock
(``procmem_core.locking``) and ``graph`` does not import ``reflections`` or ``memory``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Unpack

from procmem_core.errors import ParameterError
from procmem_core.graph import ProcedureStore, RunRecord
from procmem_core.graph.ledger import RunDetails
from procmem_core.graph.recording import procedure_keys_used
from procmem_core.limits import check_identifier
from procmem_core.memory import MemoryStore
from procmem_core.reflections.records import (
    Reflection,
    reflection_fields,
    run_key,
    write_reflection,
)


def complete_run(
    procedures: ProcedureStore,
    memories_used: Sequence[str],
    ok: bool,
    reflection: str | None = None,
    *,
    memory: MemoryStore | None = None,
    principal: str | None = None,
    session_id: str | None = None,
    revisions: Mapping[str, int] | None = None,
    **details: Unpack[RunDetails],
) -> tuple[RunRecord, ...]:
    """Record the session's runs in ``procedures`` (``session_id``: also rate that session
    of the store's pack log, in the same write) and, with a ``memory`` store and a
    ``reflection``, store the lesson there (evidence: ``run:<id>`` of each run and
    ``<namespace>/<key>`` of each procedure; namespace: the first run's, else
    "default"). ``revisions``: the graph revision each procedure was served at (see
    ``ProcedureStore.complete_run``). Both stores are checked before anything is written.
    ``principal`` (auth on) needs the writer role in every listed procedure's namespace,
    and is the lesson's actor (else the ``agent``). ``details``: the run's ``note``,
    ``cost``, ``duration_ms``, ``tokens`` and ``agent``, passed to
    ``ProcedureStore.complete_run`` as given."""
    if not isinstance(procedures, ProcedureStore):
        raise ParameterError("procedures", procedures, "expected a ProcedureStore")
    if memory is not None and not isinstance(memory, MemoryStore):
        raise ParameterError("memory", memory, "expected a MemoryStore or None")
    if memory is not None and reflection is not None:  # refused before any write
        _check_lesson(procedures, memories_used, reflection, principal, details.get("agent"))
    runs = procedures.complete_run(
        memories_used,
        ok,
        reflection=reflection,
        principal=principal,
        session_id=session_id,
        revisions=revisions,
        **details,
    )
    if memory is not None and reflection is not None:
        refs = [f"{r.namespace}/{r.key}" for r in runs]
        lesson = _lesson(reflection, [run_key(r.run_id) for r in runs], refs)
        actor = principal if principal is not None else details.get("agent")
        write_reflection(memory, lesson, namespace=_namespace(refs), actor=actor)
    return runs


def _lesson(reflection: object, run_keys: list[str], refs: list[str]) -> Reflection:
    return Reflection.coerce(reflection, [*run_keys, *refs])


def _namespace(refs: list[str]) -> str:
    """The lesson's namespace: the first run's procedure's, else "default"."""
    return refs[0].split("/", 1)[0] if refs else "default"


def _check_lesson(
    procedures: ProcedureStore,
    memories_used: object,
    reflection: object,
    principal: str | None,
    agent: object,
) -> None:
    """Raise what writing the lesson to memory would raise, before the runs are recorded:
    the procedures resolved as ``complete_run`` resolves them (one run per procedure),
    each run's key at the widest run id (19 digits, an SQLite integer), so a lesson whose
    record the memory store would refuse (an evidence key over 256 characters, metadata
    over its cap, an agent that is no identifier, no evidence at all) records nothing."""
    if principal is None and agent is not None:
        check_identifier("agent", agent)  # named as the caller named it, not as the actor
    keys = procedure_keys_used(memories_used)
    refs = list(dict.fromkeys(procedures.get(k, principal=principal).ref for k in keys))
    widest = [run_key(10**18 + i) for i in range(len(refs))]
    actor = principal if principal is not None else agent
    reflection_fields(_lesson(reflection, widest, refs), _namespace(refs), actor)
