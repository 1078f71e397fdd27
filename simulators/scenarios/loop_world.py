"""The world of ``LoopScenario``: a ``ProcedureStore`` driven session by session.

One ``LoopWorld`` is one replication. It registers ``tasks x procedures_per_task`` linear
graph procedures whose step nodes fail with known probabilities, then for each session:

1. a task arrives; ``ContextPacker.pack`` (the engine's explore-rate withholding) picks
   the procedure to show for the task's situation; with ``concurrent_share`` q > 0 a
   procedure whose revision is pending is served at its prior graph with probability q
   (the concurrent-control design), and the run is recorded against that revision;
2. the simulated agent follows the shown procedure if it belongs to the task: it walks
   the graph and stops at the first step that fails (path = the steps visited), else it
   works without a procedure and succeeds at ``base_rate``;
3. the signal (``Feedback``: flips, a judge, missing ratings, ratings whose chance
   depends on the outcome) is recorded with
   ``record_run`` when it arrives (``delay`` sessions later; a report that arrives after
   the procedure was revised is about a graph that is gone, so it is dropped and counted
   in ``stale_reports``; so is one about a prior graph that is no longer pending);
4. a procedure is evolved after every ``evolve_every`` runs recorded on it (quarantine,
   templates, pending revisions gated: Loom's "call evolve after runs land"); every
   ``revise_every`` sessions one procedure in use (run since the last such step), neither
   quarantined nor waiting on a pending revision, gets a revision whose true effect is
   known (harmful: success rate down by ``harmful_drop``; neutral: a renamed step;
   helpful: up by ``helpful_gain``).

Everything the world decides is logged beside the store, so the bookkeeping can be
checked: each recorded run is one ledger row, each gate record one the store made.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from procmem_core.graph import ContextPacker, ProcedureGraph, ProcedureStore
from procmem_core.graph.embedding import HashingEmbedder
from simulators.draws import IntegersDraw
from simulators.feedback import ArrivalLine
from simulators.scenarios.loop_records import RevisionTruth, SessionColumns, SessionLog

TASKS = (
    "customer asks for a refund on a paid invoice",
    "user is locked out and needs a password reset",
    "customer wants to change the shipping address after dispatch",
    "subscriber wants to cancel before the renewal date",
    "finance needs the monthly book closing",
    "runway forecast shows the cash buffer is low",
    "customer reports a duplicate card charge",
    "new employee needs accounts and laptop provisioning",
)
KINDS = ("harmful", "neutral", "helpful")
EMBEDDER = HashingEmbedder()
"""The store's default embedder, one for every world: it is deterministic, so the worlds
share the rows it keeps of the task texts instead of each embedding them again."""


@dataclass
class LoopWorld:
    """One replication: the store, the true node failure rates and every logged event."""

    scenario: object
    rng: np.random.Generator
    store: ProcedureStore = field(init=False)
    node_success: dict = field(default_factory=dict)  # (key, revision) -> {node: q}
    task_of: dict = field(default_factory=dict)  # ref (namespace/key) -> task index
    rows: list = field(default_factory=list)  # a tuple per session (``SESSION_FIELDS``)
    runs: list = field(default_factory=list)  # (key, path, ok) as recorded
    revisions: list = field(default_factory=list)
    events: list = field(default_factory=list)  # (session, key, "quarantined" | "template")
    status_by_window: list = field(default_factory=list)
    fresh: dict = field(default_factory=dict)  # key -> runs recorded since its last evolve
    recent: set = field(default_factory=set)  # keys run since the last revision step
    stale_reports: int = 0  # delayed reports that arrived after their graph was revised
    _columns: tuple = field(default=(), init=False, repr=False, compare=False)  # (n, it)
    _records: list = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        sc = self.scenario
        self.line = ArrivalLine(sc.feedback.delay)
        self.noiseless = sc.feedback.noiseless  # the signal is the outcome: nothing to draw
        # the ratings of sessions that followed no procedure (withheld, off task) draw from
        # their own spawned child, so the engine's stream is the same with or without them
        self.rating_rng = self.rng.spawn(1)[0]
        self.p_of: dict[tuple[str, int], float] = {}  # p_true by (key, revision), once each
        self.kind_cdf = _choice_cdf(sc.revision_mix)
        self.integers = IntegersDraw(self.rng)  # ``int(rng.integers(n))``, the same stream
        self.store = ProcedureStore(
            EMBEDDER, strike_limit=sc.strike_limit, quarantine=sc.quarantine
        )
        # min_similarity=None: the world's pack has no relevance floor (the engine's default
        # since issue 25 is 0.3), so a task whose procedures are all quarantined is still
        # shown another task's procedure, as the recorded decisions and published loop
        # figures assume (test_loop_decisions).
        self.packer = ContextPacker(
            self.store, sc.explore_rate, 1, self.rng, concurrent_share=sc.concurrent_share,
            utility_weight=sc.utility_weight, min_similarity=None,
        )  # fmt: skip
        # each task's match, checked and embedded once: every pack ranks it anew
        self.requests = [self.packer.prepare(TASKS[t]) for t in range(sc.tasks)]
        for t in range(sc.tasks):
            for j in range(sc.procedures_per_task):
                p = float(self.rng.uniform(sc.p_low, sc.p_high))
                q = p ** (1.0 / sc.steps)
                nodes = [f"s{i}" for i in range(1, sc.steps + 1)]
                graph = _linear_graph(nodes, t)
                snap = self.store.add(f"task {t} approach {j}", f"{TASKS[t]} (approach {j})",
                                      graph=graph)  # fmt: skip
                self.node_success[(snap.ref, snap.revision)] = dict.fromkeys(nodes, q)
                self.task_of[snap.ref] = t
        self.keys_of_task = [
            [k for k, t in self.task_of.items() if t == i] for i in range(sc.tasks)
        ]
        self.seen: dict[str, tuple[str, int, int | None]] = {}
        self.by_task: dict[int, tuple[int, float]] = {}  # task -> (available, oracle)
        for key in self.task_of:
            self._saw(key)
        # the fixed oracle: the best each task offered at the start, which no revision moves
        self.start_oracle = [self.oracle(t) for t in range(sc.tasks)]

    def _saw(self, key: str, run: bool = False) -> None:
        """Read ``key``'s status and live revisions after the world wrote it: the store is
        in memory and only this world writes it, one procedure per write, so between its
        writes a procedure reads the same (``seen``). After a recorded ``run`` only the
        status can have moved (a run changes no revision: ``record_run``)."""
        status, old = self.store.status(key), self.seen.get(key)
        if run:  # only the status can differ
            if old[0] != status:
                self.seen[key] = (status, old[1], old[2])
                self.by_task.pop(self.task_of[key], None)  # read again from ``seen`` when asked
            return
        seen = (status, *self.store.live_revisions(key))
        if old != seen:
            self.seen[key] = seen
            self.by_task.pop(self.task_of[key], None)

    def task_now(self, task: int) -> tuple[int, float]:
        """The task's procedures not quarantined, and ``oracle(task)``: both read only
        ``seen``, so they are computed again only after a procedure of the task changed."""
        now = self.by_task.get(task)
        if now is None:
            keys = self.keys_of_task[task]
            available = sum(self.seen[k][0] != "quarantined" for k in keys)
            now = self.by_task[task] = (available, self.oracle(task))
        return now

    @property
    def sessions(self) -> list[SessionLog]:
        """The session log as records (``SessionLog(*row)``), made when first read: a
        session is kept as a tuple (``rows``), which the metrics and tables read as
        columns (``columns``)."""
        made = self._records
        if len(made) != len(self.rows):
            made += [SessionLog(*row) for row in self.rows[len(made) :]]
        return made

    def columns(self) -> SessionColumns:
        """The session log as arrays, built once per length of the log (the metrics and
        the tables all read them)."""
        n = len(self.rows)
        if not self._columns or self._columns[0] != n:
            self._columns = (n, SessionColumns.of_rows(self.rows, list(self.task_of)))
        return self._columns[1]

    # -- truth ------------------------------------------------------------------------

    def p_true(self, key: str, revision: int | None = None) -> float:
        rev = self.seen[key][1] if revision is None else revision
        p = self.p_of.get((key, rev))
        if p is None:  # a graph's node rates never change: its product once
            p = self.p_of[(key, rev)] = chain_success(self.node_success[(key, rev)].values())
        return p

    def oracle(self, task: int) -> float:
        """The best success rate any graph of the task's procedures offers now: the current
        ones and the priors of pending revisions (the store holds both), or no procedure."""
        best = self.scenario.base_rate
        for key in self.keys_of_task[task]:
            _, revision, prior = self.seen[key]
            best = max(best, self.p_true(key, revision))
            if prior is not None:
                best = max(best, self.p_true(key, prior))
        return best

    # -- one session ------------------------------------------------------------------

    def session(self, t: int) -> None:
        sc = self.scenario
        task = self.integers(sc.tasks)
        available = self.task_now(task)[0]
        pack = self.packer.pack_request(self.requests[task])
        shown = pack.procedure_keys[0] if pack.procedure_keys else None
        withheld = pack.procedure_keys_withheld[0] if pack.procedure_keys_withheld else None
        followed = shown is not None and self.task_of[shown] == task
        report, prior_served, on_trial = None, False, False
        if followed:
            # the store as the pack saw it: the shown match follows the withheld one
            m = pack.matches[len(pack.procedure_keys_withheld)]
            revision = pack.procedure_revisions[0]
            prior_served = revision != m.revision
            on_trial = m.pending_revision is not None and not prior_served
            graph = m.pending_revision.prior_graph if prior_served else m.graph
            q = self.node_success[(shown, revision)]
            path, ok = self._walk(graph.reading_order(), q)
            p = self.p_true(shown, revision)
            rated, rating = self._rate(self.rng, ok)
            if rated:
                report = (shown, revision, tuple(path), rating)
        else:
            p = sc.base_rate
            ok = bool(self.rng.random() < p)
            rated, rating = self._rate(self.rating_rng, ok)
        arrived = self.line.push(report)
        recorded = self._record(arrived)
        self.rows.append(
            (task, shown if followed else None, withheld, followed, ok, p,
             self.task_now(task)[1], recorded, shown, prior_served, on_trial, available,
             rated, rating)
        )  # fmt: skip
        # only the procedure whose run was recorded now can have become due: every due
        # procedure is evolved in the session it becomes due (``fresh`` forgets it)
        if recorded and self.fresh[arrived[0]] >= sc.evolve_every:
            self._evolve(t, [arrived[0]])
        if (t + 1) % sc.revise_every == 0:
            self._revise_one(t)

    def _rate(self, rng: np.random.Generator, ok: bool) -> tuple[bool, bool]:
        """Whether the session is rated and what the rating says (``Feedback.transmit``;
        nothing drawn when the signal is the outcome)."""
        if self.noiseless:
            return True, ok
        sig = self.scenario.feedback.transmit(rng, np.array([ok]), self.scenario.base_rate)
        return sig.observed is None or bool(sig.observed[0]), bool(sig.label[0])

    def _record(self, report: tuple | None) -> bool:
        """Record a report that arrived now (None: nothing arrived); False if none was."""
        if report is None:
            return False
        key, revision, path, signal = report
        _, current, prior = self.seen[key]
        if revision != current and (prior is None or prior != revision):
            self.stale_reports += 1
            return False
        self.store.record_run(key, path, signal, revision=revision)
        self._saw(key, run=True)
        self.runs.append((key, path, signal))
        self.fresh[key] = self.fresh.get(key, 0) + 1
        self.recent.add(key)
        return True

    def _walk(self, order: tuple[str, ...], q: dict[str, float]) -> tuple[list[str], bool]:
        path = []
        for node in order:
            path.append(node)
            if self.rng.random() >= q[node]:
                return path, False
        return path, True

    def _evolve(self, t: int, keys: list[str]) -> None:
        sc = self.scenario
        for key in keys:
            del self.fresh[key]
            report = self.store.evolve(
                key, sc.min_runs, sc.strike_limit, sc.gate, sc.cost_gate, sc.streak_scope
            )
            self._saw(key)
            for status in ("quarantined", "template"):
                if report.status == status and report.previous_status != status:
                    self.events.append((t, key, status))
            if report.revision_outcome in ("accepted", "reverted"):
                truth = next(r for r in self.revisions if r.key == key and r.outcome == "pending")
                truth.outcome = report.revision_outcome
        self.status_by_window.append((t, {k: self.seen[k][0] for k in self.task_of}))

    def _revise_one(self, t: int) -> None:
        sc = self.scenario
        free = [
            k
            for k in self.task_of
            if k in self.recent and self.seen[k][2] is None and self.seen[k][0] != "quarantined"
        ]
        self.recent.clear()
        if not free:
            return
        key = free[self.integers(len(free))]
        snap = self.store.get(key)
        q = dict(self.node_success[(key, snap.revision)])
        p = self.p_true(key, snap.revision)  # the product of ``q``'s values, kept
        # ``rng.choice(3, p=revision_mix)``: numpy's draw, one ``random()`` against the cdf
        kind = KINDS[bisect.bisect_right(self.kind_cdf, self.rng.random())]
        nodes = list(snap.graph.reading_order())
        i = self.integers(len(nodes))
        if kind == "helpful":  # improve the weakest step, so the gain is not capped early
            i = min(range(len(nodes)), key=lambda j: q[nodes[j]])  # np.argmin: the first
        old = nodes[i]
        new = f"{old.split('r')[0]}r{len(self.revisions) + 1}"  # a new id: a new graph
        q_old = q.pop(old)
        if kind == "harmful":
            target = max(p - sc.harmful_drop, 0.0)
        elif kind == "helpful":
            target = min(p + sc.helpful_gain, p / q_old)  # one node cannot exceed 1
        else:
            target = p
        q[new] = q_old * target / p if p > 0 else 0.0
        nodes[i] = new
        graph = _linear_graph(nodes, self.task_of[key])
        after = self.store.revise(key, graph, f"simulated {kind} revision")
        self._saw(key)
        self.node_success[(key, after.revision)] = q
        self.revisions.append(
            RevisionTruth(key, after.revision, snap.revision, kind, p,
                          self.p_true(key, after.revision), t)
        )  # fmt: skip


def chain_success(rates: Iterable[float]) -> float:
    """The success rate of a chain of steps, the product of the step rates in order:
    ``math.prod``, the same float as ``np.prod`` of the list (numpy multiplies a float64
    reduction left to right; tests/simulators/test_loop_world.py checks chains of 1 to 64
    steps) without numpy's per-call cost."""
    return float(math.prod(rates))


def _choice_cdf(shares: tuple[float, ...]) -> list[float]:
    """The cdf ``Generator.choice(n, p=shares)`` draws against: ``cumsum(p)`` divided by
    its last value; the choice is then ``bisect_right(cdf, rng.random())``, the same
    index numpy's ``searchsorted(side="right")`` of its one ``random()`` gives, from the
    same stream (tests/simulators/test_loop_world.py checks it against numpy)."""
    cdf = np.asarray(shares, dtype=np.float64).cumsum()
    cdf /= cdf[-1]
    return cdf.tolist()


def _linear_graph(nodes: list[str], task: int) -> ProcedureGraph:
    return _linear_graph_of(tuple(nodes), task)


@functools.lru_cache(maxsize=4096)
def _linear_graph_of(nodes: tuple[str, ...], task: int) -> ProcedureGraph:
    """One graph object per chain of node ids and task: a ``ProcedureGraph`` is immutable,
    so the worlds share it, and what it remembers of itself (hash, edges, pack lines)."""
    return ProcedureGraph.from_dict(
        {
            "nodes": [{"id": n, "kind": "step", "text": f"step {n} of task {task}"} for n in nodes],
            "edges": [{"src": a, "dst": b} for a, b in itertools.pairwise(nodes)],
        }
    )
