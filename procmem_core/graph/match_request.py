"""A match request validated and embedded once: ``ProcedureStore.match`` in two halves.

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

import numpy as np


@dataclass(frozen=True, slots=True)
class MatchRequest:
    """The arguments of one ``StoreReads.match`` call, checked, with the query vectors.

    ``memo``: the key ``MatchIndex.rank`` remembers a small index's ranks under (the query
    bytes, the tools and the filters), built once here instead of at every rank."""

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
    everywhere: bool = field(init=False, repr=False, compare=False)
    """Every namespace is searched, whatever the grants (``scope_namespaces`` gives None
    for the scope "given" without a namespace or a principal): nothing to resolve."""

    def __post_init__(self) -> None:
        everywhere = self.namespace_scope == "given" and self.namespace is None
        object.__setattr__(self, "everywhere", everywhere and self.principal is None)
        goal = None if self.goal_query is None else self.goal_query.tobytes()
        memo = (self.query.tobytes(), goal, self.recent_tools, self.top_k, self.tool_boost,
                self.templates_only, self.include_candidates, self.include_quarantined,
                self.min_similarity)  # fmt: skip
        object.__setattr__(self, "memo", memo)
