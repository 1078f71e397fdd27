"""The flat rule's exact fate: a random walk with an absorbing barrier at the threshold.

docs/statistics.md, "The flat confidence rule": a procedure below the threshold is not
shown, so not applied, so never updated again. The confidences reachable within n
sessions form a finite set (the rule's moves from ``initial``, with the clamps, as the
rule's ``arithmetic`` computes them: the seed's raw floats, where two orders of the same
outcomes can land on different doubles, or the ``snap`` grid), so the probability of
exclusion within n sessions follows from a forward recursion over that set, with no
sampling. The recursion calls the rule's own ``update`` and merges equal doubles only.

A rule that reads the procedure's counts (``needs_counts``: the posterior rule) has the
state ``(confidence, successes, failures)``; its recursion runs over that lattice,
vectorized per session (``O(sessions^2)`` states). A rule that reads a baseline
(``needs_baseline``) is walked at a known ``baseline``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from procmem_core.display import record_html
from procmem_core.errors import check_int, check_probability
from procmem_core.flat.prompt import DEFAULT_THRESHOLD
from procmem_core.flat.rule import DEFAULT_RULE, FlatRule, passes_threshold


@dataclass(frozen=True)
class FlatFate:
    """Exact fate of one flat procedure with success probability ``p`` per applied session.

    ``p_excluded``: probability it falls below the threshold within ``sessions`` applied
    sessions (below it the procedure is never shown, so never updated again).
    ``expected_sessions_applied``: expected number of those sessions in which it was
    still shown (so applied and updated). ``excluded_by_session[k]`` is the probability
    of exclusion within ``k + 1`` sessions. ``break_even`` is the rule's break-even rate
    (at ``baseline`` for the rules that read one).
    """

    p: float
    sessions: int
    p_excluded: float
    expected_sessions_applied: float
    excluded_by_session: np.ndarray
    break_even: float
    n_states: int

    @property
    def shown_by_session(self) -> np.ndarray:
        """``[t]``: P(shown in session ``t + 1``) = 1 - P(excluded within ``t`` sessions),
        where within 0 sessions it is excluded exactly when its start is below the
        threshold (then ``n_states`` is 0 and it is never shown)."""
        before = 0.0 if self.n_states else 1.0
        return 1.0 - np.concatenate(([before], self.excluded_by_session[:-1]))

    def _repr_html_(self) -> str:
        """A notebook's view: the fields, then P(excluded within k sessions) by k."""
        return record_html(self)


def flat_fate(
    p: float,
    sessions: int,
    rule: FlatRule = DEFAULT_RULE,
    threshold: float = DEFAULT_THRESHOLD,
    baseline: float | None = None,
) -> FlatFate:
    """Forward recursion over the finite set of reachable confidences.

    The state after k sessions is a distribution over the grid points reachable from
    ``rule.start(baseline)`` that still pass the threshold; mass that drops below it is
    absorbed and counted as excluded at session k.
    ``E[sessions applied] = sum_{k=0}^{n-1} P(still shown before session k+1)``.
    Cost: O(sessions * states).
    """
    p = check_probability("p", p)
    sessions = check_int("sessions", sessions, minimum=1)
    threshold = check_probability("threshold", threshold)
    if baseline is not None:
        baseline = check_probability("baseline", baseline)
    rule.check_evidence(0, 0, baseline)
    start = rule.start(baseline)
    be = rule.break_even_rate(baseline)
    excluded = np.zeros(sessions)
    if not passes_threshold(start, threshold):
        excluded[:] = 1.0
        return FlatFate(p, sessions, 1.0, 0.0, excluded, be, 0)
    walk = _walk_counts if rule.needs_counts else _walk_confidence
    gone, applied, n_states = walk(p, sessions, rule, threshold, baseline, excluded)
    return FlatFate(
        p=p,
        sessions=sessions,
        p_excluded=gone,
        expected_sessions_applied=applied,
        excluded_by_session=excluded,
        break_even=be,
        n_states=n_states,
    )


def _walk_confidence(p, sessions, rule, threshold, baseline, excluded) -> tuple:
    """The recursion keyed by confidence alone (every rule that does not read counts):
    per session one vectorized ``update`` of every state, equal doubles merged."""
    conf = np.array([rule.start(baseline)], dtype=float)
    mass = np.ones(1)
    seen = conf
    gone = applied = 0.0
    for k in range(sessions):
        applied += float(mass.sum())
        n = len(conf)
        positive = np.concatenate([np.ones(n, bool), np.zeros(n, bool)])
        c2 = rule.update(np.concatenate([conf, conf]), positive, baseline=baseline)
        w = np.concatenate([mass * p, mass * (1.0 - p)])
        inside = np.asarray(passes_threshold(c2, threshold), bool)
        gone += float(w[~inside].sum())
        keep = inside & (w > 0)
        conf, at = np.unique(c2[keep], return_inverse=True)
        mass = np.bincount(at, weights=w[keep], minlength=len(conf))
        seen = np.union1d(seen, conf)
        excluded[k] = gone
    return gone, applied, len(seen)


def _walk_counts(p, sessions, rule, threshold, baseline, excluded) -> tuple:
    """The recursion over ``(confidence, successes)`` after k sessions (failures = k -
    successes), one vectorized ``update`` per session."""
    conf = np.array([rule.start(baseline)], dtype=float)
    succ = np.zeros(1)
    mass = np.ones(1)
    gone = applied = 0.0
    n_states = 1
    for k in range(sessions):
        applied += float(mass.sum())
        c = np.concatenate([conf, conf])
        s = np.concatenate([succ + 1.0, succ])
        w = np.concatenate([mass * p, mass * (1.0 - p)])
        positive = np.concatenate([np.ones(len(conf), bool), np.zeros(len(conf), bool)])
        c2 = rule.update(c, positive, successes=s, failures=(k + 1.0) - s, baseline=baseline)
        inside = np.asarray(passes_threshold(c2, threshold), bool)
        gone += float(w[~inside].sum())
        keep = inside & (w > 0)
        c2, s, w = c2[keep], s[keep], w[keep]
        order = np.lexsort((c2, s))  # merge equal (successes, confidence) states
        c2, s, w = c2[order], s[order], w[order]
        new = np.concatenate(([True], (np.diff(s) != 0) | (np.diff(c2) != 0)))
        starts = np.flatnonzero(new)
        mass = np.add.reduceat(w, starts) if len(w) else w
        conf, succ = c2[starts], s[starts]
        uniq = starts
        n_states += len(uniq)
        excluded[k] = gone
    return gone, applied, n_states
