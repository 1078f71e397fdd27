"""The graph seed's async SDK shape over procmem's stores: ``procmem_core.Agent``.

The seed's agents write ``async with Agent(org=..., namespace=..., agent=...) as bot:
added = await bot.procedure.add(...)``. ``Agent`` gives procmem's engine that facade:

- ``bot.procedure``: ``add`` (steps only, as the SDK's add; returns a dict with
  ``memory_key``), ``match``, ``locate``, ``record_run``, ``evolve``, ``revise``,
  ``fork`` and ``list``, each a coroutine over a ``ProcedureStore``;
- ``bot.learnings``: ``list`` and ``review`` over a ``LearningsQueue``.

A bare key names the procedure in the agent's namespace (``namespace/key`` another), so
an agent's calls stay unambiguous when forks share a key across namespaces; ``match`` and
``list`` search and list the agent's namespace (``namespace=`` another).

Every call runs the store's own method in a worker thread (``asyncio.to_thread``), one at
a time per ``Agent`` (a thread lock taken in the worker, so calls from other threads,
each with its own event loop, wait too; a call waits its turn among its own loop's calls
in order, on that loop's ``asyncio.Lock``), so the event loop is never blocked and the
store sees the same calls a synchronous caller makes. The SDK's defaults hold:
``evolve`` sends ``gate_min_runs=5`` and ``gate_margin=0.05`` unless told otherwise, with
the server's default ``gate_mode="sprt"`` (so the SPRT decides from run 5 on; the margin
applies with ``gate_mode="margin"``); the other gate parameters are the seed's
(``procmem_core.gates.defaults``). ``org`` names the store's owner: one store holds one
org, and it is kept on the agent for the caller's logs.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from procmem_core.errors import ParameterError, check_choice, check_text
from procmem_core.gates import MarginGate, SPRTGate
from procmem_core.gates.defaults import ALPHA, BETA, MAX_RUNS, MIN_DROP
from procmem_core.graph import ProcedureStore
from procmem_core.graph.keys import KeyNotText
from procmem_core.learnings import LearningsQueue
from procmem_core.limits import check_identifier
from procmem_core.memory.access import Principal

T = TypeVar("T")

SDK_GATE_MIN_RUNS = 5
SDK_GATE_MARGIN = 0.05
"""What the seed's SDK ``evolve`` sends unless told otherwise."""
GATE_MODES = ("sprt", "margin")


def _added(stored: Any) -> dict[str, Any]:
    """The SDK's answer to ``add`` and ``fork``: the key and what was stored."""
    return {
        "memory_key": stored.key,
        "namespace": stored.namespace,
        "name": stored.name,
        "revision": stored.revision,
        "status": stored.status,
        "procedure": stored,
    }


class _Calls:
    """Runs a store's method in a thread, one call at a time per agent."""

    def __init__(self, owner: Agent) -> None:
        self._owner = owner

    def _ref(self, key: str) -> str:
        """A bare key means the agent's namespace (``namespace/key`` names another); a key
        that is not a string is refused as the store refuses it (``KeyNotText``)."""
        if not isinstance(key, str):
            raise KeyNotText(key)
        return key if "/" in key else f"{self._owner.namespace}/{key}"

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        owner = self._owner
        async with owner.loop_lock():  # this loop's calls in the order they were made
            return await asyncio.to_thread(owner.locked, functools.partial(fn, *args, **kwargs))


class ProcedureAPI(_Calls):
    """``bot.procedure``: the seed's procedure operations as coroutines."""

    async def add(
        self,
        name: str,
        situation: str,
        steps: Sequence[str],
        tags: Sequence[str] = (),
        metadata: dict[str, Any] | None = None,
        candidate: bool = False,
    ) -> dict[str, Any]:
        """Register a procedure from its steps (a linear graph n1 -> n2 -> ...), written
        by this agent (its ``actor``: what an auth-on pack for the agent injects)."""
        a = self._owner
        stored = await self._run(
            a.store.add, name, situation, steps=steps, tags=tags, metadata=metadata,
            namespace=a.namespace, candidate=candidate, actor=a.agent,
        )  # fmt: skip
        return _added(stored)

    async def match(self, situation: str, goal: str | None = None, **options: Any) -> list:
        """Top procedures for a situation in the agent's namespace (``store.match``)."""
        a = self._owner
        options.setdefault("namespace", a.namespace)
        options.setdefault("for_agent", a.agent)
        return await self._run(a.store.match, situation, goal=goal, **options)

    async def locate(self, key: str, at: str | None = None, **options: Any) -> Any:
        """The active node and the transitions ahead (``store.locate``)."""
        return await self._run(self._owner.store.locate, self._ref(key), at=at, **options)

    async def record_run(self, key: str, path: Sequence[str], ok: bool, **fields: Any) -> Any:
        """One ledger row, carrying this agent's name (``store.record_run``)."""
        fields.setdefault("agent", self._owner.agent)
        store = self._owner.store
        return await self._run(store.record_run, self._ref(key), list(path), ok, **fields)

    async def evolve(
        self,
        key: str,
        gate_mode: str = "sprt",
        gate_min_runs: int = SDK_GATE_MIN_RUNS,
        gate_margin: float = SDK_GATE_MARGIN,
        gate_min_drop: float = MIN_DROP,
        gate_alpha: float = ALPHA,
        gate_beta: float = BETA,
        gate_max_runs: int = MAX_RUNS,
        **options: Any,
    ) -> Any:
        """Fold the new runs and ask the gate about a pending revision (``store.evolve``),
        with the SDK's ``gate_min_runs=5`` and ``gate_margin=0.05`` by default."""
        check_choice("gate_mode", gate_mode, GATE_MODES)
        try:
            if gate_mode == "sprt":
                gate = SPRTGate(
                    min_drop=gate_min_drop, alpha=gate_alpha, beta=gate_beta,
                    max_runs=gate_max_runs, min_runs=gate_min_runs,
                )  # fmt: skip
            else:
                gate = MarginGate(
                    margin=gate_margin, min_runs=gate_min_runs, max_runs=gate_max_runs
                )
        except ParameterError as exc:  # name the argument the caller passed: gate_<field>
            raise ParameterError(f"gate_{exc.field}", exc.value, exc.allowed) from None
        return await self._run(self._owner.store.evolve, self._ref(key), gate=gate, **options)

    async def revise(self, key: str, graph: Any, reason: str, force: bool = False) -> Any:
        """Propose a new graph (``store.revise``)."""
        return await self._run(self._owner.store.revise, self._ref(key), graph, reason, force)

    async def fork(self, key: str, namespace: str) -> dict[str, Any]:
        """Copy a procedure's shape into ``namespace`` without its evidence."""
        return _added(await self._run(self._owner.store.fork, self._ref(key), namespace))

    async def list(
        self, prefix: str | None = None, tags: Sequence[str] = (), **options: Any
    ) -> list:
        """The inventory of the agent's namespace (``namespace=`` another), by key prefix
        and tags (``store.list``), as ``match`` searches the agent's namespace."""
        a = self._owner
        options.setdefault("namespace", a.namespace)
        return await self._run(a.store.list, prefix, tags, **options)


class LearningsAPI(_Calls):
    """``bot.learnings``: the review queue's list and review as coroutines."""

    async def list(self, status: str = "pending", **filters: Any) -> list:
        """Candidates by status (pending by default) in the agent's namespace."""
        a = self._owner
        filters.setdefault("namespace", a.namespace)
        return await self._run(a.queue.list, principal=a.principal, status=status, **filters)

    async def review(
        self, candidate_id: str, decision: str, reason: str, destination: str | None = None
    ) -> Any:
        """Promote or reject a candidate (needs an admin principal)."""
        a = self._owner
        return await self._run(
            a.queue.review, candidate_id, decision, principal=a.principal, reason=reason,
            destination=destination,
        )  # fmt: skip


class Agent:
    """``async with Agent(org=..., namespace=..., agent=...) as bot``: see the module doc.

    ``store`` and ``queue``: the stores to use (default: new in-memory ones, closed on
    exit); ``principal``: who calls ``learnings`` (default: an admin named after the
    agent)."""

    def __init__(
        self,
        org: str,
        namespace: str = "default",
        agent: str | None = None,
        *,
        store: ProcedureStore | None = None,
        queue: LearningsQueue | None = None,
        principal: Principal | None = None,
    ) -> None:
        self.org = check_text("org", org)
        self.namespace = check_text("namespace", namespace)
        self.agent = None if agent is None else check_text("agent", agent)
        if store is not None and not isinstance(store, ProcedureStore):
            raise ParameterError("store", store, "a ProcedureStore or None")
        if principal is None:  # the default principal is named after the agent, else the org
            check_identifier(*(("agent", agent) if agent is not None else ("org", org)))
        self._owns = store is None, queue is None
        self.store = ProcedureStore() if store is None else store
        self.queue = LearningsQueue() if queue is None else queue
        self.principal = principal or Principal(agent or org, role="admin", agent=agent)
        self.lock = threading.Lock()  # one call at a time, whichever thread or loop
        self._loop_locks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._guard = threading.Lock()
        self.procedure = ProcedureAPI(self)
        self.learnings = LearningsAPI(self)

    def loop_lock(self) -> asyncio.Lock:
        """The running event loop's own ``asyncio.Lock`` (an ``asyncio.Lock`` binds to
        one loop): a loop's calls wait their turn in order without blocking it."""
        loop = asyncio.get_running_loop()
        with self._guard:
            lock = self._loop_locks.get(loop)
            if lock is None:
                lock = self._loop_locks[loop] = asyncio.Lock()
            return lock

    def locked(self, call: Callable[[], T]) -> T:
        """``call()`` under the agent's thread lock (in the worker thread): calls from
        other threads and their event loops wait for it."""
        with self.lock:
            return call()

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the stores this agent made itself."""
        owns_store, owns_queue = self._owns
        if owns_store:
            self.store.close()
        if owns_queue:
            self.queue.close()
