"""The graph memory the live loop drives, through ``procmem_core.Agent`` (the seed's SDK).

Same interface as ``memory.FlatMemory``, over a ``ProcedureStore``:

- ``pack(task, index)``: ``ContextPacker.pack`` on the task's situation, with the loop's
  explore rate and the session's own generator (``default_rng([seed, index, 1])``), so
  the pack itself withholds its top match; the system prompt is the base prompt and the
  pack's text. ``top_key`` is the top match's key, ``shown_keys`` the keys shown;
- ``record(pack, record)``: ``bot.procedure.record_run`` for the procedure followed
  (the first shown), on the revision the pack served, its path every node of that graph
  in reading order (the agent followed its steps); then ``bot.procedure.evolve`` for a
  procedure with ``evolve_every`` new runs (the loop scenario's schedule, 10 runs, with
  the SDK's gate defaults). A run on a revision the gate decided after the round's packs
  were made (an evolve applied for an earlier session of the round reverted it, or
  accepted the revision after the prior it was served) has no ledger to go to: it is
  left out and kept in ``unrecorded``;
- ``apply_outcome(record)``: the session's row in the store's pack log (``log_pack``,
  rated at once), its run, and at the end of every ``revise_every``-th session a revision
  proposal (``revisions.RevisionLog``, its new step from ``steps``: the model's
  reflection or the checker's lesson, ``reflect``) through ``bot.procedure.revise``;
- ``add_learned(procedures)``: new candidates through ``bot.procedure.add`` (steps: the
  situation check then the description's sentences, as ``learn.to_candidates`` builds
  them); a title whose key is already stored is not added again, and one the store
  refuses (a trigger or a sentence past its 2,000 characters, say) is left out with the
  reason in ``refused`` rather than ending the run.

Every store write goes through the ``Agent`` facade's coroutines, run on one event loop
in a thread of its own; packs read the store (no write runs while a round runs).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from experiments.live.memory import Pack
from experiments.live.reflect import CheckerStep
from experiments.live.revisions import REVISE_EVERY, RevisionLog
from procmem_core import Agent
from procmem_core.errors import ParameterError
from procmem_core.flat import BASE_PROMPT, Procedure
from procmem_core.graph import ContextPacker, ProcedureGraph
from procmem_core.graph.graph import GraphError
from procmem_core.graph.keys import procedure_key
from procmem_core.graph.revision import RevisionError
from procmem_core.learn.candidates import _steps as candidate_steps

EVOLVE_EVERY = 10
"""Runs on a procedure between two evolves: the loop scenario's (conf/scenario/loop.yaml)."""


class GraphMemory:
    """Graph procedures in a ``ProcedureStore`` behind an ``Agent``; see the module doc."""

    kind = "graph"  # live.memory, written in each journal record

    def __init__(
        self,
        explore_rate: float,
        seed: int,
        max_procedures: int = 3,
        namespace: str = "default",
        agent: str = "fincoach",
        base_prompt: str = BASE_PROMPT,
        evolve_every: int = EVOLVE_EVERY,
        revise_every: int = REVISE_EVERY,
    ) -> None:
        self.explore_rate = explore_rate
        self.seed = seed
        self.max_procedures = max_procedures
        self.base_prompt = base_prompt
        self.evolve_every = evolve_every
        self.agent = agent
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.bot = self._call(self._make(namespace, agent))
        self.fresh: dict[str, int] = {}
        self.runs: list[dict[str, Any]] = []
        self.evolves: list[dict[str, Any]] = []
        self.revisions = RevisionLog(revise_every)
        self.refused: list[dict[str, Any]] = []  # learned procedures the store refused
        self.unrecorded: list[dict[str, Any]] = []  # runs on a revision decided meanwhile
        self.steps: Any = CheckerStep()  # the loop's job sets live.revision_step's
        self.now = 0
        self._read = threading.Lock()

    @staticmethod
    async def _make(namespace: str, agent: str) -> Agent:
        return Agent(org="procmem", namespace=namespace, agent=agent)

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        self._call(self.bot.aclose())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def pack(self, task: Any, index: int) -> tuple[Pack, Any]:
        """The session's prompt from ``ContextPacker.pack`` (module doc); the pack too."""
        packer = ContextPacker(
            self.bot.store, explore_rate=self.explore_rate,
            max_procedures=self.max_procedures,
            rng=np.random.default_rng([self.seed, index, 1]), namespace=self.bot.namespace,
        )  # fmt: skip
        with self._read:
            packed = packer.pack(task.situation)
        prompt = self.base_prompt + ("\n\n" + packed.text if packed.text else "")
        top = packed.matches[0].key if packed.matches else ""
        shown = tuple(ref.rsplit("/", 1)[-1] for ref in packed.procedure_keys)
        return Pack(prompt, top, shown, bool(packed.procedure_keys_withheld)), packed

    def pack_session(self, plan: Any) -> tuple[Pack, tuple[int, ...]]:
        """The loop's call: the pack for ``plan`` and the revisions it served."""
        pack, packed = self.pack(plan.task, plan.index)
        return pack, tuple(packed.procedure_revisions)

    def apply_outcome(self, record: dict[str, Any]) -> None:
        """The loop's call: a finished session's run (``record``), then a revision
        proposal when the session ends a revision step (``revisions``)."""
        self.now = int(record["index"])
        self.log_pack(record)
        self.record(record, record.get("served", ()))
        if self.revisions.due(self.now):
            self.propose(record)

    def log_pack(self, record: dict[str, Any]) -> None:
        """The session's row in the store's pack log, rated with its outcome (time: the
        session index). Logged here, in session order as the round is applied, not by
        ``pack`` while the round runs: the log then holds exactly the applied sessions,
        in order, and a resume that re-applies the journal rebuilds it as it was."""
        store, ns = self.bot.store, self.bot.namespace
        store.log_pack(
            record["session_id"], f"{ns}/{record['top_key']}" if record["top_key"] else "",
            bool(record["withheld"]), self.explore_rate,
            [f"{ns}/{k}" for k in record["shown_keys"]], self.now, agent=self.agent,
        )  # fmt: skip
        store.rate_session(record["session_id"], int(record["outcome"]), self.now)

    def propose(self, record: dict[str, Any]) -> None:
        """Propose a revision for the first of ``RevisionLog.proposals`` that gets a new
        step from ``steps`` (``experiments.live.reflect``; ``record``, the session ending
        the step, keeps a reflection's answer) not already among its steps, and that the
        store takes (a graph reverted before is refused, as the seed's ``revise``
        without ``force``; so is a step past the graph's limits)."""
        for found in self.revisions.proposals(self.bot.store.list()):
            step = self.steps.step(found, record)
            if not step or step in found.steps:
                continue
            reason = f"its failed runs failed the check {found.check!r} most often"
            if self.steps.mode == "reflection":
                reason = f"the reflection on its failed runs (most often failing {found.check!r})"
            try:  # a step past the store's limits (2,000 characters, 64 steps) is refused too
                graph = ProcedureGraph.from_steps([*found.steps, step])
                after = self._call(self.bot.procedure.revise(found.key, graph, reason))
            except (RevisionError, GraphError):
                continue
            self.revisions.proposed(found.key, after.revision, found.revision, self.now)
            return

    def record(self, record: dict[str, Any], served: Sequence[int]) -> None:
        """The session's run for the procedure followed, then any evolve that is due."""
        if not record["shown_keys"]:
            return
        key = record["shown_keys"][0]
        revision = int(served[0])
        if revision not in self.bot.store.live_revisions(f"{self.bot.namespace}/{key}"):
            # an evolve applied earlier in this round decided the revision served (reverted:
            # its graph is rejected; accepted: the served prior is gone): no ledger holds it
            self.unrecorded.append({"time": self.now, "key": key, "revision": revision})
            return
        stored = self.bot.store.get(f"{self.bot.namespace}/{key}")
        # the graph the session followed: the current one, or the prior it was served
        # before a revision proposed later in its round (a concurrent run of the prior)
        graph = stored.graph if revision == stored.revision else stored.pending_revision.prior_graph
        path = list(graph.reading_order())
        run = self._call(
            self.bot.procedure.record_run(
                key, path, bool(record["outcome"]), revision=revision, tokens=record["tokens"]
            )
        )
        self.runs.append({
            "key": key, "revision": run.revision, "ok": bool(run.ok),
            "time": int(record["index"]), "path": json.dumps(list(run.path)),
            "session_id": record["session_id"], "agent": run.agent,
        })  # fmt: skip
        messages = record.get("messages") or [{"content": ""}]
        self.revisions.ran(
            key, run.revision, bool(run.ok), record.get("checks", []), record["session_id"],
            str(messages[-1]["content"]),
        )  # fmt: skip
        self.fresh[key] = self.fresh.get(key, 0) + 1
        if self.fresh[key] >= self.evolve_every:
            self.fresh[key] = 0
            report = self._call(self.bot.procedure.evolve(key))
            self.evolves.append({"time": self.now, "key": key, "status": report.status})
            if report.revision_outcome in ("accepted", "reverted"):
                self.revisions.decided(key, report.revision_outcome, self.now)

    def _revision(self, key: str) -> int:
        return self.bot.store.get(f"{self.bot.namespace}/{key}").revision

    def add_learned(self, procedures: Sequence[dict]) -> list[str]:
        """New candidates for the extracted procedures not already held; their keys."""
        held = {p.key for p in self.bot.store.list()}
        added = []
        for p in procedures:
            key = procedure_key(p["title"])
            if key in held:
                continue
            proc = Procedure(p["title"], p["trigger"], p["description"], float(p["confidence"]))
            meta = {"source": "learn", "confidence": proc.confidence}
            try:
                self._call(
                    self.bot.procedure.add(
                        proc.title, proc.trigger, candidate_steps(proc), metadata=meta,
                        candidate=True,
                    )
                )  # fmt: skip
            except (ParameterError, GraphError) as exc:  # the model's text, not the config
                self.refused.append({"time": self.now, "key": key, "reason": str(exc)[:300]})
                continue
            held.add(key)
            added.append(key)
            self.revisions.added(key, self.now)
        return added

    def confidences(self) -> dict[str, float]:
        """Each procedure's smoothed success rate ``(s + 1) / (n + 2)`` over its runs."""
        return {
            p.key: (p.successes + 1) / (p.runs + 2) for p in self.bot.store.list()
        }  # fmt: skip

    def snapshot(self) -> list[dict]:
        """Every stored procedure as a plain dict (``procedures.json``)."""
        return [
            {
                "key": p.key, "title": p.name, "situation": p.situation, "steps": list(p.steps),
                "status": p.status, "revision": p.revision, "runs": p.runs,
                "successes": p.successes, "metadata": p.metadata,
            }
            for p in self.bot.store.list()
        ]  # fmt: skip
