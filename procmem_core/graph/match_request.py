"""A match request validated and embedded once: ``ProcedureStore.match`` in two halves.

``check_match_request`` validates ``match``'s arguments before any work.

``StoreReads.match(situation, ...)`` is ``match_request(prepare_match(situation, ...))``:
``prepare_match`` checks every argument and embeds the situation (and goal) into a
``MatchRequest``; ``match_request`` resolves the namespaces to search (grants may change
between calls) and ranks the store's procedures as they are now. A caller that matches the
same situation many times (a simulation's packs: ``ContextPacker.pack_request``) prepares
it once, so the per-call work is the ranking alone; the answer is the one ``match`` gives,
since both run the same ranking on the same vectors (an ``Embedder`` is deterministic).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from math import inf
from typing import Any

import numpy as np

from procmem_core.errors import ParameterError, check_int, check_text, is_number
from procmem_core.limits import MAX_IDENTIFIER, MAX_SITUATION


def check_match_request(
    situation: Any,
    goal: Any,
    recent_tools: Any,
    top_k: Any,
    tool_boost: Any,
    utility_weight: Any,
    for_agent: Any,
) -> int:
    """Validate ``ProcedureStore.match`` arguments before any work; return ``top_k``."""
    for name, text in (("situation", situation), ("goal", goal)):
        if text is not None or name == "situation":
            check_text(name, text, MAX_SITUATION)
    if type(recent_tools) not in (tuple, list) and (
        isinstance(recent_tools, str) or not isinstance(recent_tools, Sequence)
    ):
        raise ParameterError("recent_tools", recent_tools, "expected a list of tool names")
    for i, tool in enumerate(recent_tools):
        check_text(f"recent_tools[{i}]", tool, MAX_IDENTIFIER)
    for name, value in (("tool_boost", tool_boost), ("utility_weight", utility_weight)):
        if not is_number(value) or not 0 <= value < inf:
            raise ParameterError(name, value, "expected a finite number >= 0")
    if for_agent is not None and not isinstance(for_agent, str):
        raise ParameterError("for_agent", for_agent, "expected an agent name or None")
    return check_int("top_k", top_k, minimum=1)


def rank_memo(
    query: np.ndarray,
    goal_query: np.ndarray | None,
    recent_tools: Sequence[str],
    top_k: int,
    tool_boost: float,
    templates_only: bool,
    include_candidates: bool,
    include_quarantined: bool,
    min_similarity: float | None,
) -> tuple:
    """What a small index's ranks depend on besides its rows (``MatchIndex.rank``
    remembers them under it): the query bytes, the tools and the filters."""
    goal = None if goal_query is None else goal_query.tobytes()
    return (query.tobytes(), goal, tuple(recent_tools), top_k, tool_boost, templates_only,
            include_candidates, include_quarantined, min_similarity)  # fmt: skip


def memo_filters(memo: tuple) -> tuple[bool, bool, bool]:
    """The status filters of a ``rank_memo`` key: ``(templates_only, include_candidates,
    include_quarantined)``."""
    return memo[5], memo[6], memo[7]


@dataclass(frozen=True, slots=True)
class MatchRequest:
    """The arguments of one ``StoreReads.match`` call, checked, with the query vectors.

    ``memo``: the key ``MatchIndex.rank`` remembers a small index's ranks under
    (``rank_memo``), built once here instead of at every rank."""

    situation: str
    goal: str | None
    recent_tools: tuple[str, ...]
    query: np.ndarray
    goal_query: np.ndarray | None
    top_k: int
    tool_boost: float
    utility_weight: float
    templates_only: bool
    include_candidates: bool
    include_quarantined: bool
    namespace: str | Sequence[str] | None
    for_agent: str | None
    namespace_scope: str
    principal: str | None
    fan_out: int
    written_by: str | None
    min_similarity: float | None
    memo: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        memo = rank_memo(self.query, self.goal_query, self.recent_tools, self.top_k,
                         self.tool_boost, self.templates_only, self.include_candidates,
                         self.include_quarantined, self.min_similarity)  # fmt: skip
        object.__setattr__(self, "memo", memo)
