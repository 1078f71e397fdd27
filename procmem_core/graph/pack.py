"""Context packs with an explore rate (seed: loom-procedures.txt, "Measuring whether a
procedure helps", "Whose procedures a pack injects").

A pack injects the matched procedures into a prompt as steps to follow, with their
fail-prone steps and transitions as pitfalls. With explore rate epsilon, the top match is
withheld with probability epsilon (``procmem_core.explore.withhold_top``), and the pack
reports shown (``procedure_keys``) and withheld (``procedure_keys_withheld``) procedures
as ``namespace/key`` refs, so every session can be attributed to the exact procedure and
sessions where it was withheld form a randomized control arm (docs/statistics.md). A
withheld procedure is not replaced by the next match, so the two arms differ only by the
withheld procedure. One uniform is drawn per pack, whether or not anything matched, so
the random stream does not depend on the store's contents.

Pack log: ``pack(..., session_id=...)`` records the session in the store's pack log
(``graph.packlog``), the sessions table of the session log (docs/logs.md).

Auth: ``auth=True`` with a ``principal`` injects only procedures that principal wrote;
``auth=False`` injects every match. A ``principal`` (either way) bounds the search to the
namespaces it can read (``graph.access``).

Relevance floor (``min_similarity``, default ``PACK_MIN_SIMILARITY`` = 0.3, procmem's
choice: the seed states no floor): only matches whose ``similarity`` reaches it are
injected, so a situation unrelated to every stored procedure injects nothing (with the
default ``HashingEmbedder``, "what is the capital of France" scores at most 0.26 against
the docs/graph.md example procedures; a paraphrase sharing two content words about
0.33). ``min_similarity=None`` turns the floor off. ``include_quarantined`` (default
False) and ``include_candidates`` (default True) are passed to ``match``.

Concurrent control (``concurrent_share`` q, default 0 = the seed's behaviour): while a
shown procedure has a revision pending, the pack serves its prior graph instead with
probability q, so both revisions accrue runs side by side (a prior served is shown with
its own last evolve's fail-prone flags as pitfalls); ``procedure_revisions`` says which
graph revision each shown procedure was served at (pass it to ``record_run``). With
q > 0 the pack draws ``max_procedures`` more uniforms, whatever matched.

Quarantine: the pack follows its store's ``QuarantinePolicy`` (``procmem_core.quarantine``):
under the seed's it matches without quarantined procedures, exactly as before; under an
exit policy it serves the quarantined matches the policy opens (``quarantine.select``)
and, with a probation floor f, draws one more uniform per pack for the additive floor.
``include_quarantined=True`` matches quarantined procedures like any other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import islice
from operator import attrgetter

import numpy as np

from procmem_core.errors import (
    ParameterError,
    check_bool,
    check_instance,
    check_int,
    check_number,
    check_probability,
)
from procmem_core.explore import check_rng, draw, withhold_top
from procmem_core.frozen import quick_init
from procmem_core.graph.access import MAX_NAMESPACE_FAN_OUT, check_principal
from procmem_core.graph.findings import FailProne
from procmem_core.graph.graph import ProcedureGraph
from procmem_core.graph.locate import pitfall_text
from procmem_core.graph.match_request import MatchRequest
from procmem_core.graph.packlog import check_session_fields
from procmem_core.graph.records import Match
from procmem_core.graph.store import ProcedureStore
from procmem_core.quarantine.select import Waiting, is_open, serve_order

PACK_MIN_SIMILARITY = 0.3
"""The pack's default relevance floor (procmem's choice; see the module docstring)."""
_REF = attrgetter("ref")
PACK_HEADING = "PROCEDURES TO FOLLOW (steps learned from earlier runs):"
UNPROVEN = "(unproven)"


def render_procedure(
    i: int,
    m: Match,
    graph: ProcedureGraph | None = None,
    steps: Sequence[str] | None = None,
    pitfalls: Sequence[FailProne] | None = None,
) -> str:
    """One matched procedure as numbered steps (candidates labelled "(unproven)"), the
    edges' conditions and pitfalls, and its fail-prone flags as pitfalls. ``graph``,
    ``steps`` and ``pitfalls`` default to the match's current graph and findings."""
    graph = m.graph if graph is None else graph
    steps = m.steps if steps is None else steps
    flags = (m.fail_prone_steps + m.fail_prone_transitions) if pitfalls is None else pitfalls
    label = f" {UNPROVEN}" if m.status == "candidate" else ""
    lines = [f"{i}. {m.name}{label} [{m.key}, {m.status}]", f"   When: {m.situation}"]
    lines += [f"   {j}) {step}" for j, step in enumerate(steps, 1)]
    lines += graph._memoized("pack_edge_lines", lambda: _edge_lines(graph))
    lines += [f"   Pitfall: {pitfall_text(f)}" for f in flags]
    return "\n".join(lines)


def _edge_lines(graph: ProcedureGraph) -> tuple[str, ...]:
    """The edges' conditions, guidance and pitfalls as pack lines (once per graph)."""
    lines = []
    for e in graph.edges:
        notes = [
            f"{k}: {getattr(e, k)}" for k in ("condition", "guidance", "pitfalls") if getattr(e, k)
        ]
        if notes:
            lines.append(f"   - {e.src} -> {e.dst}: " + "; ".join(notes))
    return tuple(lines)


Block = tuple[int, Match, ProcedureGraph | None, Sequence[str] | None, Sequence[FailProne] | None]
"""One shown procedure's ``render_procedure`` arguments: its number, match, and the graph,
steps and pitfalls served (None: the match's own)."""


@quick_init
@dataclass(frozen=True)
class Pack:
    """A packed prompt and which procedures (``namespace/key``) it showed and withheld;
    ``procedure_revisions``: the graph revision served for each shown procedure.

    ``text`` (the prompt: ``PACK_HEADING`` and one ``render_procedure`` block per shown
    procedure, empty when none) is rendered from ``blocks`` when first read and kept: the
    matches, graphs and steps it reads are immutable, so it is the text the pack would
    have rendered at once, and a caller that never reads it (the simulated loop) does
    not pay for it."""

    procedure_keys: tuple[str, ...]
    procedure_keys_withheld: tuple[str, ...]
    procedure_revisions: tuple[int, ...] = ()
    matches: tuple[Match, ...] = field(repr=False, default=())
    blocks: tuple[Block, ...] = field(repr=False, default=())

    @cached_property
    def text(self) -> str:
        rendered = [render_procedure(*b) for b in self.blocks]
        return PACK_HEADING + "\n" + "\n".join(rendered) if rendered else ""


@dataclass
class ContextPacker:
    """Packs the top ``max_procedures`` matches of a situation into prompt text.

    ``namespace``, ``namespace_scope``, ``fan_out``, ``utility_weight`` (the seed's
    match term for the smoothed success rate, default 0 = off), ``min_similarity``,
    ``include_quarantined`` and ``include_candidates`` are passed to ``match``
    (``"all_mine"`` searches the principal's namespaces)."""

    store: ProcedureStore
    explore_rate: float = 0.0
    max_procedures: int = 3
    rng: np.random.Generator | None = None
    auth: bool = False
    principal: str | None = None
    namespace: str | Sequence[str] | None = None
    namespace_scope: str = "given"
    fan_out: int = MAX_NAMESPACE_FAN_OUT
    concurrent_share: float = 0.0
    utility_weight: float = 0.0
    min_similarity: float | None = PACK_MIN_SIMILARITY
    include_quarantined: bool = False
    include_candidates: bool = True
    waiting: Waiting = field(default_factory=Waiting, init=False, repr=False)

    def __post_init__(self) -> None:
        check_instance("store", self.store, ProcedureStore)
        self.explore_rate = check_probability("explore_rate", self.explore_rate)
        self.max_procedures = check_int("max_procedures", self.max_procedures, minimum=1)
        self.concurrent_share = check_probability(
            "concurrent_share", self.concurrent_share, open_high=True
        )
        floor = self.store.quarantine.floor
        self.rng = check_rng(self.rng, max(self.explore_rate, self.concurrent_share, floor))
        check_bool("auth", self.auth)
        check_bool("include_quarantined", self.include_quarantined)
        check_bool("include_candidates", self.include_candidates)
        if self.min_similarity is not None:
            self.min_similarity = check_number(
                "min_similarity", self.min_similarity, minimum=-1.0, maximum=1.0
            )
        check_principal("principal", self.principal, required=self.auth)
        if self.namespace_scope == "all_mine" and self.principal is None:
            raise ParameterError("principal", None, "a principal for namespace_scope='all_mine'")

    def pack(
        self,
        situation: str,
        goal: str | None = None,
        recent_tools: Sequence[str] = (),
        session_id: str | None = None,
        time: int | str | None = None,
        user_id: str | None = None,
    ) -> Pack:
        """Match, let the quarantine policy pick what it serves, withhold the top match with
        probability ``explore_rate``, serve pending priors with probability
        ``concurrent_share``, render the rest. With a ``session_id`` the store's pack log
        records the session (``ProcedureStore.log_pack``: top match, withheld, rate, refs
        shown, ``time``, ``user_id``, the packer's principal as agent). The same as
        ``pack_request(prepare(situation, goal, recent_tools), session_id, time, user_id)``.
        """
        if session_id is not None:  # before any work (``pack_request`` checks again: every
            check_session_fields(session_id, time, user_id)  # pack goes through it)
        request = self.prepare(situation, goal, recent_tools)
        return self.pack_request(request, session_id, time, user_id)

    def _serving(self) -> bool:
        """The store's quarantine policy serves quarantined procedures (a floor or probes)
        and this packer does not already include them: its match asks for more, its pack
        lets the policy order them (``serve_order``)."""
        return self.store.quarantine.serves_quarantined and not self.include_quarantined

    def _uncrowded(self, request: MatchRequest, matches: list[Match]) -> list[Match]:
        """``matches``, matched again deeper (``top_k`` doubled) while quarantined matches
        the policy keeps closed crowd the open ones out: fewer than ``max_procedures``
        open among a full ``top_k``. The seed's pack, matching without quarantined
        procedures, would serve those open ones; so does this one."""
        policy, limit, waiting = self.store.quarantine, self.store.strike_limit, self.waiting
        while len(matches) == request.top_k:
            opened = (m for m in matches if is_open(m, policy, limit, waiting))
            if next(islice(opened, self.max_procedures - 1, None), None) is not None:
                return matches  # max_procedures open ones found: counting stops there
            request = replace(request, top_k=2 * request.top_k)
            matches = self.store.match_request(request)
        return matches

    def prepare(
        self, situation: str, goal: str | None = None, recent_tools: Sequence[str] = ()
    ) -> MatchRequest:
        """The match this packer makes for a situation, checked and embedded once
        (``ProcedureStore.prepare_match``, with the packer's settings as they are now), for
        ``pack_request`` to pack as often as wanted."""
        policy, serving = self.store.quarantine, self._serving()
        top_k = 2 * self.max_procedures + policy.candidates if serving else self.max_procedures
        return self.store.prepare_match(
            situation, goal, recent_tools, top_k=top_k, namespace=self.namespace,
            namespace_scope=self.namespace_scope, principal=self.principal,
            fan_out=self.fan_out, written_by=self.principal if self.auth else None,
            utility_weight=self.utility_weight, min_similarity=self.min_similarity,
            include_quarantined=self.include_quarantined or serving,
            include_candidates=self.include_candidates,
        )  # fmt: skip

    def pack_request(
        self,
        request: MatchRequest,
        session_id: str | None = None,
        time: int | str | None = None,
        user_id: str | None = None,
    ) -> Pack:
        """``pack`` for a situation ``prepare`` matched: the store's matches for it now,
        then the draws and the quarantine, explore and concurrent rules ``pack`` follows."""
        if session_id is not None:
            check_session_fields(session_id, time, user_id)  # before any draw
        policy, serving = self.store.quarantine, self._serving()
        matches = self.store.match_request(request)
        if serving:
            matches = self._uncrowded(request, matches)
        u = draw(self.rng)
        prior_draws = self.rng.random(self.max_procedures) if self.concurrent_share > 0 else None
        if serving:
            floor_u = draw(self.rng) if policy.floor > 0 else 1.0
            matches = serve_order(
                matches, policy, self.store.strike_limit, self.waiting, floor_u,
                self.max_procedures,
            )  # fmt: skip
        withhold = withhold_top(u, self.explore_rate) and bool(matches)
        shown = matches[1:] if withhold else matches
        withheld = matches[:1] if withhold else []
        blocks, revisions = [], []
        for i, m in enumerate(shown):
            p = m.pending_revision
            if p is not None and prior_draws is not None and prior_draws[i] < self.concurrent_share:
                blocks.append((i + 1, m, p.prior_graph, p.prior_steps, p.prior_fail_prone))
                revisions.append(p.prior_revision)
            else:
                blocks.append((i + 1, m, None, None, None))
                revisions.append(m.revision)
        if session_id is not None:
            self.store.log_pack(
                session_id, matches[0].ref if matches else "", withhold, self.explore_rate,
                [m.ref for m in shown], time, user_id, self.principal, self.principal,
            )  # fmt: skip
        return Pack.from_values(  # by position: no keyword matching, once per pack
            tuple(map(_REF, shown)), tuple(map(_REF, withheld)), tuple(revisions),
            tuple(matches), tuple(blocks),
        )  # fmt: skip
