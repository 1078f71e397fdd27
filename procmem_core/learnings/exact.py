"""Exact support arithmetic: when a rule reaches k distinct supporters, and how far one
multi-user writer inflates ``supporter_count``.

- ``first_reach(rate, k, sessions, users)``: a rule is supported in each session
  independently with probability ``rate``, by a user drawn uniformly from ``users``
  (None: every supporter is a new user). The number ``d`` of distinct supporters is a
  Markov chain that moves ``d -> d + 1`` with probability ``rate (users - d) / users``;
  the session of the k-th distinct supporter is a sum of independent geometric waiting
  times, so a forward recursion over ``d = 0..k-1`` gives its law exactly in
  O(sessions k). With ``users`` None it is the negative binomial:
  ``P(T_k = t) = C(t - 1, k - 1) rate^k (1 - rate)^(t - k)``.
- ``reach_probability``: ``P(T_k <= sessions)`` (with ``users`` None,
  ``P(Binomial(sessions, rate) >= k)``).
- ``expected_distinct_ids(rate, pool, sessions)``: a writer that, in each session with
  probability ``rate``, sends one row under an id drawn uniformly from ``pool`` ids has
  ``E[distinct ids] = pool (1 - (1 - rate / pool)^sessions)`` after ``sessions``
  sessions (each id is missed by a session with probability ``1 - rate / pool``).
"""

from __future__ import annotations

import numpy as np

from procmem_core.errors import check_int, check_probability


def first_reach(rate: float, k: int, sessions: int, users: int | None = None) -> np.ndarray:
    """``f[t - 1] = P(the k-th distinct supporter arrives in session t)``, t = 1..sessions."""
    rate = check_probability("rate", rate)
    k = check_int("k", k, minimum=1)
    sessions = check_int("sessions", sessions, minimum=1)
    d = np.arange(k, dtype=float)
    if users is None:
        step = np.full(k, rate)
    else:
        users = check_int("users", users, minimum=1)
        step = rate * np.clip(users - d, 0.0, None) / users
    p = np.zeros(k)
    p[0] = 1.0
    out = np.zeros(sessions)
    for t in range(sessions):
        moved = p * step
        out[t] = moved[-1]
        p -= moved
        p[1:] += moved[:-1]
    return out


def reach_probability(rate: float, k: int, sessions: int, users: int | None = None) -> float:
    """``P(k distinct supporters within sessions)``; 1 for ``k = 0`` (every argument
    checked as ``first_reach`` checks it, ``k = 0`` included)."""
    if check_int("k", k, minimum=0) == 0:
        first_reach(rate, 1, sessions, users)  # the same checks; the answer is 1
        return 1.0
    return float(first_reach(rate, k, sessions, users).sum())


def expected_distinct_ids(rate: float, pool: int, sessions: int) -> float:
    """``pool (1 - (1 - rate / pool)^sessions)`` (see the module docstring)."""
    rate = check_probability("rate", rate)
    pool = check_int("pool", pool, minimum=1)
    sessions = check_int("sessions", sessions, minimum=0)
    return float(pool * (1.0 - (1.0 - rate / pool) ** sessions))
