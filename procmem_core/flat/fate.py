"""The flat rule's exact fate: a random walk with an absorbing barrier at the threshold.

docs/statistics.md, "The flat confidence rule": a procedure below the threshold is not
shown, so not applied, so never updated again. The reachable confidences form a finite
set (sums of the rule's moves from ``initial``, with the clamps, on the ``snap`` grid), so
the probability of exclusion within n sessions follows from a forward recursion over that
set, with no sampling. The recursion calls the rule's own ``update``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from procmem_core.errors import check_int, check_probability
from procmem_core.flat.prompt import DEFAULT_THRESHOLD
from procmem_core.flat.rule import DEFAULT_RULE, FlatRule, passes_threshold, snap


@dataclass(frozen=True)
class FlatFate:
    """Exact fate of one flat procedure with success probability ``p`` per applied session.

    ``p_excluded``: probability it falls below the threshold within ``sessions`` applied
    sessions (below it the procedure is never shown, so never updated again).
    ``expected_sessions_applied``: expected number of those sessions in which it was
    still shown (so applied and updated). ``excluded_by_session[k]`` is the probability
    of exclusion within ``k + 1`` sessions. ``break_even`` is the rule's break-even rate.
    """

    p: float
    sessions: int
    p_excluded: float
    expected_sessions_applied: float
    excluded_by_session: np.ndarray
    break_even: float
    n_states: int


def flat_fate(
    p: float,
    sessions: int,
    rule: FlatRule = DEFAULT_RULE,
    threshold: float = DEFAULT_THRESHOLD,
) -> FlatFate:
    """Forward recursion over the finite set of reachable confidences.

    The state after k sessions is a distribution over the grid points reachable from
    ``initial`` that still pass the threshold; mass that drops below it is absorbed and
    counted as excluded at session k.
    ``E[sessions applied] = sum_{k=0}^{n-1} P(still shown before session k+1)``.
    Cost: O(sessions * states).
    """
    p = check_probability("p", p)
    sessions = check_int("sessions", sessions)
    threshold = check_probability("threshold", threshold)
    excluded = np.zeros(sessions)
    if not passes_threshold(rule.initial, threshold):
        excluded[:] = 1.0
        return FlatFate(p, sessions, 1.0, 0.0, excluded, rule.break_even, 0)
    states: dict[float, float] = {snap(rule.initial): 1.0}
    seen = set(states)
    gone = 0.0
    applied = 0.0
    for k in range(sessions):
        applied += sum(states.values())
        nxt: dict[float, float] = {}
        for c, mass in states.items():
            for positive, w in ((True, p), (False, 1.0 - p)):
                if w == 0.0:
                    continue
                c2 = rule.update(c, positive)
                if passes_threshold(c2, threshold):
                    nxt[c2] = nxt.get(c2, 0.0) + mass * w
                else:
                    gone += mass * w
        states = nxt
        seen.update(states)
        excluded[k] = gone
    return FlatFate(
        p=p,
        sessions=sessions,
        p_excluded=gone,
        expected_sessions_applied=applied,
        excluded_by_session=excluded,
        break_even=rule.break_even,
        n_states=len(seen),
    )
