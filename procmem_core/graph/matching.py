"""Matching situations to procedures (seed: loom-procedures.txt, "Matching").

- ``match_scores``: the ranking rule, one vectorized function over all procedures
  (``match_score``: the same for one procedure, on Python floats).
- ``MatchIndex``: the embedding matrix and per-procedure arrays the store scores in one
  matrix-vector product, so 10,000 procedures match in milliseconds.

The vectors come from an ``Embedder`` (``graph.embedding``: the protocol and the default
``HashingEmbedder``, re-exported here).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.graph.embedding import Embedder, HashingEmbedder, reaches_floor
from procmem_core.graph.match_request import memo_filters, rank_memo
from procmem_core.graph.status import CANDIDATE, QUARANTINED, STATUSES, TEMPLATE
from procmem_core.proportions import smoothed_rate, smoothed_rate_of

__all__ = [
    "SMALL_INDEX",
    "Embedder",
    "HashingEmbedder",
    "MatchIndex",
    "match_score",
    "match_scores",
]

SMALL_INDEX = 64
"""``MatchIndex.rank`` scores at most this many procedures row by row, more with numpy."""
RANKS_REMEMBERED = 256
"""A small index keeps the ranks of at most this many distinct queries (``_remember``)."""


def match_scores(
    situation_sim: ArrayLike,
    goal_sim: ArrayLike | None = None,
    tool_coverage: ArrayLike | float = 0.0,
    success_rate: ArrayLike | float = 0.0,
    tool_boost: float = 0.2,
    utility_weight: float = 0.0,
) -> np.ndarray:
    """The seed's match score, vectorized over procedures.

    ``relevance = s`` without a goal and ``sqrt(max(s, 0) * max(g, 0))`` (geometric mean)
    with one; ``score = relevance + tool_boost * coverage + utility_weight * rate`` where
    ``coverage`` is the fraction of the caller's recent tools the procedure's action nodes
    use and ``rate`` the smoothed success rate (``proportions.smoothed_rate``).
    """
    s = np.asarray(situation_sim, dtype=float)
    if goal_sim is None:
        rel = s
    else:
        rel = np.sqrt(np.clip(s, 0.0, None) * np.clip(np.asarray(goal_sim, dtype=float), 0.0, None))
    return (
        rel
        + tool_boost * np.asarray(tool_coverage, dtype=float)
        + utility_weight * np.asarray(success_rate, dtype=float)
    )


def _status_filter(templates_only: bool, include_candidates: bool, include_quarantined: bool):
    """Which status codes a match keeps under its three status filters."""
    keep = np.ones(len(STATUSES), dtype=bool)
    if templates_only:
        keep &= np.arange(len(STATUSES)) == TEMPLATE
    if not include_candidates:
        keep[CANDIDATE] = False
    if not include_quarantined:
        keep[QUARANTINED] = False
    return keep


_KEEP_STATUS = np.array(
    [[[_status_filter(*flags) for flags in [(t, c, False), (t, c, True)]] for c in (False, True)]
     for t in (False, True)]
)  # fmt: skip
"""``_KEEP_STATUS[templates_only, include_candidates, include_quarantined][status]``."""
_KEEP_NESTED = _KEEP_STATUS.tolist()
"""``_KEEP_STATUS`` as nested lists of Python bools (indexed by Python bools and ints)."""


def _clip0(x: float) -> float:
    """``np.clip(x, 0, None)`` for one float (-0.0 -> 0.0, NaN stays NaN)."""
    return 0.0 if x <= 0.0 else x


def match_score(
    situation_sim: float,
    goal_sim: float | None,
    tool_coverage: float,
    success_rate: float,
    tool_boost: float,
    utility_weight: float,
) -> float:
    """``match_scores`` for one procedure, on Python floats: the same operations in the same
    order (IEEE +, * and sqrt are correctly rounded, so each result equals the vectorized
    one bit for bit; tests/procmem_core/graph/test_hot_paths.py checks a grid)."""
    s, g = situation_sim, goal_sim
    rel = s if g is None else math.sqrt(_clip0(s) * _clip0(g))
    return rel + tool_boost * tool_coverage + utility_weight * success_rate


class MatchIndex:
    """Row-per-procedure arrays for vectorized matching; rows move on delete (swap-remove).

    Columns: the situation embedding, runs, successes, a status code (index into
    ``STATUSES``), a namespace code, an actor code (who wrote it; -1: not recorded), and
    the procedure's tools (inverted: tool -> rows).
    """

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.keys: list[str] = []
        self.rows: dict[str, int] = {}
        self._cap = 16
        self.emb = np.zeros((self._cap, dim), dtype=np.float32)
        self.runs = np.zeros(self._cap, dtype=np.int64)
        self.successes = np.zeros(self._cap, dtype=np.int64)
        self.status = np.zeros(self._cap, dtype=np.int8)
        self.namespace = np.zeros(self._cap, dtype=np.int32)
        self.actor = np.zeros(self._cap, dtype=np.int32)
        self.seq = np.zeros(self._cap, dtype=np.int64)  # insertion order, for ties
        self._next_seq = 0
        self._ns_codes: dict[str, int] = {}
        self._actor_codes: dict[str, int] = {}
        self._tools: dict[str, set[int]] = {}
        self._row_tools: list[frozenset[str]] = []
        self._ranked: dict[tuple, list[tuple[int, float, float]]] = {}  # ``_remember``

    def __len__(self) -> int:
        return len(self.keys)

    def namespace_code(self, namespace: str) -> int:
        return self._ns_codes.setdefault(namespace, len(self._ns_codes))

    def namespace_codes(self, namespaces: Iterable[str]) -> np.ndarray:
        return np.array([self._ns_codes[n] for n in namespaces if n in self._ns_codes], dtype=int)

    def actor_code(self, actor: str | None) -> int:
        return -1 if actor is None else self._actor_codes.setdefault(actor, len(self._actor_codes))

    def add(
        self,
        ref: str,
        vector: np.ndarray,
        namespace: str,
        tools: frozenset[str],
        actor: str | None = None,
    ) -> None:
        if len(self.keys) == self._cap:
            self._grow()
        row = len(self.keys)
        self._ranked.clear()
        self.keys.append(ref)
        self.rows[ref] = row
        self.emb[row] = vector
        self.runs[row] = self.successes[row] = self.status[row] = 0
        self.namespace[row] = self.namespace_code(namespace)
        self.actor[row] = self.actor_code(actor)
        self.seq[row] = self._next_seq
        self._next_seq += 1
        self._row_tools.append(frozenset())
        self.set_tools(ref, tools)

    def set_tools(self, ref: str, tools: frozenset[str]) -> None:
        row = self.rows[ref]
        if self._row_tools[row] != tools:
            self._ranked.clear()
        for t in self._row_tools[row]:
            self._tools[t].discard(row)
        for t in tools:
            self._tools.setdefault(t, set()).add(row)
        self._row_tools[row] = tools

    def set_stats(self, ref: str, runs: int, successes: int, status_code: int) -> None:
        row = self.rows[ref]
        old = self.status.item(row)
        if old != status_code and self._ranked:
            self._forget_ranks(old, status_code)
        self.runs[row], self.successes[row], self.status[row] = runs, successes, status_code

    def _forget_ranks(self, old: int, new: int) -> None:
        """Drop the remembered ranks (``_remember``) a row's status change from ``old`` to
        ``new`` can move. A small rank reads a row's status only through its filters (kept
        or not: ``_KEEP_STATUS``) and whether it is a candidate (candidates rank last), so
        a rank whose filters keep both statuses or drop both, neither a candidate, stays
        (authored -> exercised, or exercised <-> template when templates are not asked
        for alone)."""
        if old == CANDIDATE or new == CANDIDATE:
            self._ranked.clear()
            return
        kept = {}
        for memo, ranked in self._ranked.items():
            templates_only, candidates, quarantined = memo_filters(memo)
            keep = _KEEP_NESTED[int(templates_only)][int(candidates)][int(quarantined)]
            if keep[old] == keep[new]:
                kept[memo] = ranked
        self._ranked = kept

    def remove(self, ref: str) -> None:
        self._ranked.clear()
        row = self.rows.pop(ref)
        self.set_tools_row_empty(row)
        last = len(self.keys) - 1
        if row != last:
            moved = self.keys[last]
            tools = self._row_tools[last]
            self.set_tools_row_empty(last)
            for arr in self._columns():
                arr[row] = arr[last]
            self.keys[row] = moved
            self.rows[moved] = row
            for t in tools:
                self._tools[t].add(row)
            self._row_tools[row] = tools
        self.keys.pop()
        self._row_tools.pop()

    def _columns(self) -> tuple[np.ndarray, ...]:
        return (self.emb, self.runs, self.successes, self.status, self.namespace, self.actor,
                self.seq)  # fmt: skip

    def set_tools_row_empty(self, row: int) -> None:
        for t in self._row_tools[row]:
            self._tools[t].discard(row)
        self._row_tools[row] = frozenset()

    def tool_coverage(self, recent_tools: Sequence[str]) -> np.ndarray:
        """Fraction of the distinct ``recent_tools`` each procedure's action nodes use."""
        n = len(self.keys)
        cover = np.zeros(n)
        distinct = set(recent_tools)
        if not distinct:
            return cover
        for t in distinct:
            rows = self._tools.get(t)
            if rows:
                cover[np.fromiter(rows, dtype=np.int64, count=len(rows))] += 1.0
        return cover / len(distinct)

    def rank(
        self,
        query: np.ndarray,
        goal_query: np.ndarray | None,
        recent_tools: Sequence[str],
        top_k: int,
        tool_boost: float,
        utility_weight: float,
        templates_only: bool,
        include_candidates: bool,
        include_quarantined: bool,
        namespaces: Sequence[str] | None,
        written_by: str | None = None,
        min_similarity: float | None = None,
        memo_key: tuple | None = None,
    ) -> list[tuple[int, float, float, float]]:
        """The ``top_k`` rows as ``(row, score, relevance, smoothed success rate)``.

        One matrix-vector product per query text; filters are boolean masks; candidates
        sort after every other row, then by score (descending), then by insertion order.
        ``written_by``: only rows that actor wrote; ``min_similarity``: only rows whose
        relevance (situation and goal, before the tool and utility terms) reaches it;
        ``memo_key``: the query's key for ``_remember`` when the caller built it
        (``MatchRequest.memo``), else built here.
        """
        n = len(self.keys)
        small = n <= SMALL_INDEX and namespaces is None and written_by is None
        memo = None
        if small and utility_weight == 0:
            memo = memo_key or rank_memo(
                query, goal_query, recent_tools, top_k, tool_boost, templates_only,
                include_candidates, include_quarantined, min_similarity,
            )  # fmt: skip
            ranked = self._ranked.get(memo)
            if ranked is not None:
                return [(i, score, rel, self._rate(i)) for i, score, rel in ranked]
        emb = self.emb[:n]
        sim = emb @ query
        goal_sim = None if goal_query is None else emb @ goal_query
        cover = self.tool_coverage(recent_tools) if recent_tools else 0.0  # none: 0 for all
        allowed = _KEEP_STATUS[
            int(templates_only), int(include_candidates), int(include_quarantined)
        ]
        if small:
            weights = (tool_boost, utility_weight)
            ranked = self._rank_small(sim, goal_sim, cover, weights, allowed, top_k, min_similarity)
            if ranked is not None:
                if memo is not None:
                    self._remember(memo, ranked)
                return ranked
        rate = smoothed_rate(self.successes[:n], self.runs[:n])
        keep = allowed[self.status[:n]]
        if namespaces is not None:
            keep &= np.isin(self.namespace[:n], self.namespace_codes(namespaces))
        if written_by is not None:
            code = self._actor_codes.get(written_by, -2)
            keep &= self.actor[:n] == code
        relevance = match_scores(sim, goal_sim, 0.0, 0.0, 0.0, 0.0)
        if min_similarity is not None:
            keep &= reaches_floor(relevance, min_similarity)
        score = match_scores(sim, goal_sim, cover, rate, tool_boost, utility_weight)
        status = self.status[:n]
        rows = np.flatnonzero(keep)
        order = rows[np.lexsort((self.seq[rows], -score[rows], status[rows] == CANDIDATE))]
        order = order[:top_k]
        return list(
            zip(order.tolist(), score[order].tolist(), relevance[order].tolist(),
                rate[order].tolist(), strict=True)
        )  # fmt: skip

    def _rank_small(
        self,
        sim: np.ndarray,
        goal_sim: np.ndarray | None,
        cover: np.ndarray | float,
        weights: tuple[float, float],
        allowed: np.ndarray,
        top_k: int,
        min_similarity: float | None = None,
    ) -> list[tuple[int, float, float, float]] | None:
        """``rank``'s answer for a small index with no namespace or writer filter, row by
        row on Python numbers (numpy's per-call overhead dominates a few rows): the same
        rows, order (candidates last, score descending, insertion order) and numbers.

        Each score is ``match_score`` (bit for bit ``match_scores``) and each rate
        ``smoothed_rate`` of the row's counts. With ``utility_weight`` 0 the rate term is
        ``0 * rate = 0`` for every row (a smoothed rate is finite), so only the returned
        rows' rates are computed. None when a score is NaN (the vectorized sort's NaN
        order then applies).
        """
        n = len(self.keys)
        s, st, seq = sim.tolist(), self.status[:n].tolist(), self.seq[:n].tolist()
        g = [None] * n if goal_sim is None else goal_sim.tolist()
        c = [cover] * n if isinstance(cover, float) else cover.tolist()
        tb, uw = float(weights[0]), float(weights[1])
        keep = allowed.tolist()
        rate_of = self._rate
        if uw:  # every kept row's rate: read the counts once
            runs, wins = self.runs[:n].tolist(), self.successes[:n].tolist()

            def rate_of(i: int) -> float:
                return smoothed_rate_of(wins[i], runs[i])

        ranked = []
        for i in range(n):
            if keep[st[i]] and (
                min_similarity is None
                or reaches_floor(match_score(s[i], g[i], 0.0, 0.0, 0.0, 0.0), min_similarity)
            ):
                rate = rate_of(i) if uw else 0.0
                score = match_score(s[i], g[i], c[i], rate, tb, uw)
                if score != score:
                    return None
                ranked.append((st[i] == CANDIDATE, -score, seq[i], i))
        top = [min(ranked)] if top_k == 1 and ranked else sorted(ranked)[:top_k]
        return [
            (i, -neg, match_score(s[i], g[i], 0.0, 0.0, 0.0, 0.0), rate_of(i))
            for _, neg, _, i in top
        ]  # fmt: skip

    def _remember(self, memo: tuple, ranked: list[tuple[int, float, float, float]]) -> None:
        """Keep a small rank's rows, scores and relevances for its query (``memo``): with
        ``utility_weight`` 0 they depend only on the query, the embeddings, the statuses,
        the tools and the insertion order, so they hold until one of those changes
        (``add``, ``remove``, ``set_tools`` clear them; a status in ``set_stats`` drops
        those it can move, ``_forget_ranks``);
        the rates, read from the counts, are taken again on every call."""
        if len(self._ranked) >= RANKS_REMEMBERED:
            self._ranked.clear()
        self._ranked[memo] = [(i, score, rel) for i, score, rel, _ in ranked]

    def _rate(self, row: int) -> float:
        """The smoothed success rate of one row, from its counts as Python ints (only the
        rows a small rank needs, not every row's)."""
        return smoothed_rate_of(self.successes.item(row), self.runs.item(row))

    def _grow(self) -> None:
        self._cap *= 2
        for name in ("emb", "runs", "successes", "status", "namespace", "actor", "seq"):
            old = getattr(self, name)
            new = np.zeros((self._cap, *old.shape[1:]), dtype=old.dtype)
            new[: old.shape[0]] = old
            setattr(self, name, new)
