"""The chains behind ``quarantine_fate`` (``quarantine.fate``): the whole chain of a
procedure under an exit policy (``full_chain``), its quarantined phase under an explore rate
(``explored``), and the open phase when evolve comes every e runs
(``evolved_streak_chain``)."""

from __future__ import annotations

import numpy as np

from procmem_core.quarantine.base import ExitChain, QuarantinePolicy


def explored(ex: ExitChain, explore_rate: float) -> ExitChain:
    """The quarantined phase under an explore rate epsilon: the pack withholds what it
    serves first with probability epsilon, so a state that serves the procedure stays put
    in such a session (no run: no probe, no release, and no session waited either), and
    runs it at ``serve (1 - epsilon)``. Rows that serve: ``(1 - epsilon) row + epsilon
    e_i``; this needs a state that serves with probability below 1 (probation) to stay put
    when it does not serve, as every registered policy's does."""
    if explore_rate == 0.0:
        return ex
    held = explore_rate * (ex.serve > 0)
    stay = (1.0 - held)[:, None] * ex.stay + np.diag(held)
    return ExitChain(stay, (1.0 - held) * ex.release, ex.serve * (1.0 - explore_rate))


def full_chain(
    p: float,
    strike_limit: int,
    policy: QuarantinePolicy,
    explore_rate: float = 0.0,
    evolve_every: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(P, serve, quarantined): the transition matrix over the open states then the
    policy's quarantined states, the probability each state runs the procedure, and which
    states are quarantined. Evolve after every run (e = 1): the open states are the streaks
    0..L-1 and the L-th failure in a row quarantines at once. Evolve after every e-th run
    (``evolve_every`` e > 1, the loop's cadence): every state also carries the runs since
    the last evolve, c < e (index ``i e + c``), the open streaks run to L (at least L, not
    yet evolved), and a run that makes c reach e evolves: a streak of at least L is
    quarantined; in quarantine it changes nothing (the policy's rules hold until a run
    releases it) but the count. A run is what a serving state does when it is served:
    row ``i`` less its unserved self-loop ``1 - serve[i]`` (``explored``'s assumption).
    Under an explore rate epsilon a session withholds it with probability epsilon
    (``explored``; a streak state then stays put)."""
    L, eps, e = strike_limit, explore_rate, evolve_every
    ex = explored(policy.exit_chain(p, L), eps)
    r = len(ex.release)
    if e == 1:
        P = np.zeros((L + r, L + r))
        for s in range(L):
            P[s, s] += eps
            P[s, 0] += (1.0 - eps) * p
            P[s, s + 1 if s + 1 < L else L] += (1.0 - eps) * (1.0 - p)
        P[L:, L:] = ex.stay
        P[L:, 0] += ex.release
        serve = np.concatenate([np.full(L, 1.0 - eps), ex.serve])
        return P, serve, np.arange(L + r) >= L
    o = L + 1  # open streaks 0..L, then the quarantined states from index o
    n = (o + r) * e
    P = np.zeros((n, n))
    for s in range(o):
        for c in range(e):
            i = s * e + c
            P[i, i] += eps
            for s2, w in ((0, p), (min(s + 1, L), 1.0 - p)):
                if c + 1 < e:
                    P[i, s2 * e + c + 1] += (1.0 - eps) * w
                else:  # the e-th run since the last evolve: evolve now
                    P[i, (o if s2 == L else s2) * e] += (1.0 - eps) * w
    for j in range(r):
        idle = 1.0 - ex.serve[j] if ex.serve[j] > 0 else 1.0  # the unserved share
        ran = 1.0 - idle
        for c in range(e):
            i, step = (o + j) * e + c, (c + 1) % e
            P[i, i] += idle if ran > 0 else 0.0
            for j2 in np.flatnonzero(ex.stay[j]):
                w = ex.stay[j, j2] - (idle if (ran > 0 and j2 == j) else 0.0)
                P[i, (o + j2) * e + (step if ran > 0 else c)] += w
            P[i, step if ran > 0 else c] += ex.release[j]  # to streak 0
    serve = np.repeat(np.concatenate([np.full(o, 1.0 - eps), ex.serve]), e)
    return P, serve, np.repeat(np.arange(o + r) >= o, e)


def evolved_streak_chain(p: float, L: int, e: int) -> tuple[np.ndarray, np.ndarray]:
    """(T, out): one run's moves among the states (streak s capped at L, runs since the last
    evolve c < e), index ``s e + c``, start 0, and the probability that the run quarantines
    (the e-th run since the last evolve leaves a streak of at least L)."""
    n = (L + 1) * e
    T, out = np.zeros((n, n)), np.zeros(n)
    for s in range(L + 1):
        for c in range(e):
            for s2, w in ((0, p), (min(s + 1, L), 1.0 - p)):
                if c + 1 < e:
                    T[s * e + c, s2 * e + c + 1] += w
                elif s2 == L:
                    out[s * e + c] += w
                else:
                    T[s * e + c, s2 * e] += w
    return T, out
