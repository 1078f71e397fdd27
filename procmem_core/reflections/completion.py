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

from collections.abc import Sequence
from typing import Unpack

from procmem_core.errors import ParameterError
from procmem_core.graph import ProcedureStore, RunRecord
from procmem_core.graph.ledger import RunDetails
from procmem_core.memory import MemoryStore
from procmem_core.reflections.records import Reflection, run_key, write_reflection


def complete_run(
    procedures: ProcedureStore,
    memories_used: Sequence[str],
    ok: bool,
    reflection: str | None = None,
    *,
    memory: MemoryStore | None = None,
    principal: str | None = None,
    session_id: str | None = None,
    **details: Unpack[RunDetails],
) -> tuple[RunRecord, ...]:
    """Record the session's runs in ``procedures`` (``session_id``: also rate that session
    of the store's pack log, in the same write) and, with a ``memory`` store and a
    ``reflection``, store the lesson there (evidence: ``run:<id>`` of each run and
    ``<namespace>/<key>`` of each procedure; namespace: the first run's, else
    "default"). Both stores are checked before anything is written. ``principal`` (auth on)
    needs the writer role in every listed procedure's namespace, and is the lesson's actor
    (else the ``agent``). ``details``: the run's ``note``, ``cost``, ``duration_ms``,
    ``tokens`` and ``agent``, passed to ``ProcedureStore.complete_run`` as given."""
    if not isinstance(procedures, ProcedureStore):
        raise ParameterError("procedures", procedures, "expected a ProcedureStore")
    if memory is not None and not isinstance(memory, MemoryStore):
        raise ParameterError("memory", memory, "expected a MemoryStore or None")
    runs = procedures.complete_run(
        memories_used,
        ok,
        reflection=reflection,
        principal=principal,
        session_id=session_id,
        **details,
    )
    if memory is not None and reflection is not None:
        evidence = [run_key(r.run_id) for r in runs] + [f"{r.namespace}/{r.key}" for r in runs]
        namespace = runs[0].namespace if runs else "default"
        lesson = Reflection.coerce(reflection, evidence)
        actor = principal if principal is not None else details.get("agent")
        write_reflection(memory, lesson, namespace=namespace, actor=actor)
    return runs
