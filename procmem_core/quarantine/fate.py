"""``quarantine_fate``: what quarantine does to a procedure, exactly (issue 29, item 1).

The model. A procedure's runs succeed independently with probability p. Time is counted
in its *sessions* (packs in which it is a candidate: the only procedure for its task, or
the one the pack would serve). While not quarantined it is run every session; its state
is the current failure streak s in 0..L-1 (L = ``strike_limit``): a success sets s = 0,
a failure s + 1, and the L-th failure in a row quarantines it at once (the store's
``evolve`` after every run, with ``min_runs`` at most L: ``evolve`` looks at the streak
only once the revision has ``min_runs`` runs, default 3, so at strike limit 1 or 2 the
store's default quarantines a procedure failing from its first run at its third). While
quarantined the exit policy rules (``QuarantinePolicy.exit_chain``): which sessions
serve it, and when it is released (to s = 0). The whole is a finite Markov chain on L +
r states (docs/statistics.md, "Quarantine"; Feller, *An Introduction to Probability
Theory*, vol. 1, XIII.7 for runs). Under an explore rate epsilon (``explore_rate``) the
pack withholds what it serves first in that share of sessions: a served state then stays
put for the session (``explored``), so the streak phase too runs at ``1 - epsilon`` per
session (a floor of f alone, passed as ``f (1 - epsilon)``, would leave the streak phase
at 1 and the share wrong). Decay releases at the run, so the withheld sessions after its
strikes decayed count as released here while the store still shows it quarantined. With
``evolve_every`` e > 1 the store is evolved after every e-th run (the loop's
``scenario.evolve_every``): evolve quarantines on the streak it finds, so a streak of L
that a success ends first quarantines nothing, and every state carries the runs since
the last evolve (``chains.full_chain``).

Returned:

- ``p_quarantined``: P(at least one quarantine within ``runs`` runs), the streak chain
  with quarantine absorbing, propagated ``runs`` steps;
- ``expected_runs_to_quarantine``: E[runs to the first quarantine] from s = 0, the
  fundamental matrix ``(I - T)^-1 1`` of the streak states (inf when p = 1), computed
  without its cancellation by Kac's formula (``mean_time_to_exit``), as is
  ``expected_release``;

and for each exit policy (``ExitFate``):

- ``expected_release``: E[sessions spent quarantined per quarantine], ``(I - S)^-1 1``
  over the quarantined states S, from the entry state (inf when release can fail to
  come). A session that runs it while quarantined (probation, a half-open probe) counts
  as quarantined; decay releases it as its last strike decays, so the session that runs
  it again does not. NaN at strike limit 0 (no quarantine to leave); at p = 1 the value
  is conditional on a quarantine that never comes;
- ``share_quarantined``: the long-run share of sessions spent quarantined, the
  stationary distribution of the whole chain (Grassmann-Taksar-Heyman: every share to its
  relative precision; 1 when quarantine is absorbing);
- harmful exposures: a *harmful* procedure is one whose runs succeed with probability
  ``p_harmful`` (default 0.1: worse than the loop's working without a procedure, 0.3);
  an exposure is a session that runs it. ``harmful_exposures_first_1000``: expected
  exposures in its first 1,000 sessions from a fresh start (s = 0, not quarantined);
  ``harmful_exposures_per_1000``: 1,000 times the long-run share of sessions that run it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from procmem_core.errors import ParameterError, check_int, check_probability
from procmem_core.quarantine.base import QUARANTINE_POLICIES, QuarantinePolicy
from procmem_core.quarantine.chains import evolved_streak_chain, explored, full_chain

SESSIONS = 1000
DEFAULT_P_HARMFUL = 0.1


@dataclass(frozen=True)
class ExitFate:
    """One exit policy's numbers (see the module doc); ``policy`` is its ``describe()``."""

    name: str
    policy: str
    expected_release: float
    share_quarantined: float
    harmful_exposures_first_1000: float
    harmful_exposures_per_1000: float


@dataclass(frozen=True)
class QuarantineFate:
    """``quarantine_fate``'s answer; ``exits`` one ``ExitFate`` per policy asked."""

    p: float
    runs: int
    strike_limit: int
    p_harmful: float
    p_quarantined: float
    expected_runs_to_quarantine: float
    exits: tuple[ExitFate, ...]
    explore_rate: float = 0.0
    evolve_every: int = 1

    def exit(self, name: str) -> ExitFate:
        """The first exit fate of the policy named ``name``."""
        for e in self.exits:
            if e.name == name:
                return e
        raise KeyError(name)


def p_quarantined(p: float, runs: int, strike_limit: int, evolve_every: int = 1) -> float:
    """P(a quarantine within ``runs`` runs): the streak chain, quarantine absorbing. With
    ``evolve_every`` e > 1 the store's ``evolve`` (which quarantines at a streak of at least
    L) comes after every e-th run, as in the loop (``scenario.evolve_every``): a streak of L
    that a success ends before the next evolve quarantines nothing (``evolved_streak_chain``)."""
    L = strike_limit
    if L == 0:
        return 0.0
    if evolve_every > 1:
        T, out = evolved_streak_chain(p, L, evolve_every)
        return _summed_from_start(T, out, runs)
    v = np.zeros(L + 1)
    v[0] = 1.0
    for _ in range(runs):
        w = np.zeros(L + 1)
        w[0] = p * v[:L].sum()
        w[1:] = (1.0 - p) * v[:L]
        w[L] += v[L]
        v = w
    return float(v[L])


def expected_runs_to_quarantine(p: float, strike_limit: int, evolve_every: int = 1) -> float:
    """E[runs until the first quarantine] from streak 0 (with ``evolve_every`` e > 1 over
    ``evolved_streak_chain``'s states): ``mean_time_to_exit``, not ``(I - T)^-1 1``, which
    cancels when quarantine is rare (p 0.99999, L 6 gave -1.3e22 runs, exact 1.0e30)."""
    L = strike_limit
    if L == 0 or p >= 1.0:
        return float("inf")
    if evolve_every > 1:
        return mean_time_to_exit(*evolved_streak_chain(p, L, evolve_every))
    T, out = np.zeros((L, L)), np.zeros(L)
    T[:, 0] = p
    for s in range(L - 1):
        T[s, s + 1] = 1.0 - p
    out[L - 1] = 1.0 - p
    return mean_time_to_exit(T, out)


def mean_time_to_exit(stay: np.ndarray, leave: np.ndarray) -> float:
    """E[steps from state 0 until a ``leave`` move] (the leaving step counted), for a chain
    that leaves surely, by Kac's formula: send every leave back to state 0; the mean time
    between leaves is the sum of the stationary weights over the leaving flow, both from
    ``_gth`` to relative precision. Solving ``(I - stay) x = 1`` cancels instead: its
    condition number is near 1 / (the chance of leaving), and it gave negative times for
    half-open at small p and the streak at p near 1."""
    idx = np.flatnonzero(_reachable(stay > 0, [0]))
    cycle = stay[np.ix_(idx, idx)].copy()
    cycle[:, 0] += leave[idx]
    w = _gth(cycle)
    flow = float(w @ leave[idx])
    return float(w.sum()) / flow if flow > 0 else float("inf")


def _releases_surely(stay: np.ndarray, release: np.ndarray) -> bool:
    """Every quarantined state reachable from the entry can still reach release (two
    searches over the stay graph, forward from the entry and backward from release)."""
    reach = _reachable(stay > 0, [0])
    can = _reachable((stay > 0).T, np.flatnonzero(release > 0).tolist())
    return bool(np.all(can[reach]))


def _reachable(edges: np.ndarray, start: list[int]) -> np.ndarray:
    """The states reachable from ``start`` along ``edges[i, j]`` (i -> j), as a mask."""
    seen = np.zeros(len(edges), dtype=bool)
    seen[start] = True
    todo = list(start)
    while todo:
        new = np.flatnonzero(edges[todo].any(0) & ~seen)
        seen[new] = True
        todo = new.tolist()
    return seen


def expected_release(
    p: float, strike_limit: int, policy: QuarantinePolicy, explore_rate: float = 0.0
) -> float:
    """E[sessions from quarantine to release] (inf when release can fail to come)."""
    ex = explored(policy.exit_chain(p, strike_limit), explore_rate)
    if not _releases_surely(ex.stay, ex.release):
        return float("inf")
    return mean_time_to_exit(ex.stay, ex.release)  # (k = m = 5 at p 1e-5: was -1.3e17)


def _gth(P: np.ndarray) -> np.ndarray:
    """The stationary weights of an irreducible chain, unnormalized (state 0's is 1), by
    the Grassmann-Taksar-Heyman elimination (Grassmann, Taksar and Heyman 1985; Stewart,
    *Introduction to the Numerical Solution of Markov Chains*, 2.5): no subtraction, so
    each keeps its relative precision, a share near 1e-17 included (least squares on
    ``pi (P - I) = 0`` gave shares of -5e-15 there)."""
    A = np.array(P, dtype=float)
    n = len(A)
    for k in range(n - 1, 0, -1):
        A[:k, k] /= A[k, :k].sum()
        A[:k, :k] += np.outer(A[:k, k], A[k, :k])
    pi = np.zeros(n)
    pi[0] = 1.0
    for k in range(1, n):
        pi[k] = pi[:k] @ A[:k, k]
    return pi


def _stationary(P: np.ndarray) -> np.ndarray:
    """The stationary distribution of an irreducible chain (``_gth``, normalized)."""
    pi = _gth(P)
    return pi / pi.sum()


def _absorbed_rates(P: np.ndarray, rewards: np.ndarray) -> np.ndarray:
    """The long-run average of each reward column from state 0 of a chain that need not be
    irreducible: ``sum_C h_C pi_C . r``, over the closed classes C (the strongly connected
    components nothing leaves), ``h_C`` the probability of absorption in C from state 0
    (``(I - P_TT) h = P_TC 1`` over the transient states T) and ``pi_C`` C's stationary
    distribution (Kemeny and Snell, *Finite Markov Chains*, III-IV)."""
    n_comp, comp = connected_components(csr_matrix(P > 0), connection="strong")
    closed = [
        np.flatnonzero(comp == c)
        for c in range(n_comp)
        if not (P[np.ix_(comp == c, comp != c)] > 0).any()
    ]
    transient = np.flatnonzero(~np.isin(np.arange(len(P)), np.concatenate(closed)))
    rates = np.zeros(rewards.shape[1])
    for C in closed:
        if comp[0] == comp[C[0]]:
            h0 = 1.0
        elif comp[0] in comp[transient]:
            A = np.eye(len(transient)) - P[np.ix_(transient, transient)]
            h = np.linalg.solve(A, P[np.ix_(transient, C)].sum(1))
            h0 = float(h[np.flatnonzero(transient == 0)[0]])
        else:
            h0 = 0.0
        rates += h0 * (_stationary(P[np.ix_(C, C)]) @ rewards[C])
    return rates


def long_run(
    p: float,
    strike_limit: int,
    policy: QuarantinePolicy,
    explore_rate: float = 0.0,
    evolve_every: int = 1,
) -> tuple[float, float]:
    """(share of sessions quarantined, share of sessions that run the procedure). When
    quarantine is reached surely and never left, the share is 1 and the runs come from
    the closed class it ends in: probation at p = 0 still runs it at rate f, half-open
    still probes it (k - m + 1 failed probes every c + k - m + 1 sessions)."""
    L = strike_limit
    if L == 0 or p >= 1.0:
        return 0.0, 1.0 - explore_rate
    P, serve, quarantined = full_chain(p, L, policy, explore_rate, evolve_every)
    if not np.isfinite(expected_release(p, L, policy, explore_rate)):
        # some quarantined state reachable from every streak state cannot reach release:
        # the streak states are transient and every closed class is quarantined
        return 1.0, float(_absorbed_rates(P, serve[:, None])[0])
    share, served = _absorbed_rates(P, np.column_stack([quarantined, serve]))
    return float(share), float(served)


def exposures_from_fresh(
    p: float,
    strike_limit: int,
    policy: QuarantinePolicy,
    sessions: int = SESSIONS,
    explore_rate: float = 0.0,
    evolve_every: int = 1,
) -> float:
    """Expected sessions that run the procedure among its first ``sessions``, from s = 0."""
    if strike_limit == 0:
        return float(sessions) * (1.0 - explore_rate)
    P, serve, _ = full_chain(p, strike_limit, policy, explore_rate, evolve_every)
    return _summed_from_start(P, serve, sessions)


def _summed_from_start(P: np.ndarray, reward: np.ndarray, steps: int) -> float:
    """``sum_{t < steps} (e_0 P^t) . reward``: the expected reward over ``steps`` steps of
    the chain ``P`` from state 0, by forward iteration."""
    v = np.zeros(len(P))
    v[0] = 1.0
    total = 0.0
    for _ in range(steps):
        total += float(v @ reward)
        v = v @ P
    return total


PolicyArg = QuarantinePolicy | str | Sequence[QuarantinePolicy | str] | None


def _policies(policy: PolicyArg) -> tuple[QuarantinePolicy, ...]:
    """Every registered policy with its defaults (None), or the policies asked: objects,
    or registered names built with their defaults; anything else is refused naming it."""
    if policy is None:
        return tuple(cls() for cls in QUARANTINE_POLICIES.values())
    many = policy if isinstance(policy, list | tuple) else (policy,)
    out = []
    for pol in many:
        if isinstance(pol, str):
            pol = QUARANTINE_POLICIES.get(pol, "policy")()  # refuses an unregistered name
        if not isinstance(pol, QuarantinePolicy):
            raise ParameterError(
                "policy", pol, "a QuarantinePolicy, a registered name, or a list of them"
            )
        out.append(pol)
    return tuple(out)


def quarantine_fate(
    p: float,
    runs: int,
    strike_limit: int = 3,
    policy: PolicyArg = None,
    p_harmful: float = DEFAULT_P_HARMFUL,
    explore_rate: float = 0.0,
    evolve_every: int = 1,
) -> QuarantineFate:
    """The quarantine chain of a procedure whose runs succeed with probability ``p`` (see
    the module doc); ``policy``: one policy or registered name, several, or None for every
    registered policy with its defaults; ``explore_rate``: the pack's epsilon, which
    withholds what it serves first (the procedure, or a quarantined one the floor or a
    probe put first) in that share of its sessions (``explored``); ``evolve_every``: the
    store's evolve, which quarantines on the streak it finds, comes after every e-th run
    (``chains.full_chain``; the loop's ``scenario.evolve_every``). Strike limit 3: p 0.7
    in 50 runs gives 0.625, p 0.8 in 100 0.474 (0.496 in 250 runs at evolve_every 10)."""
    p = check_probability("p", p)
    runs = check_int("runs", runs)
    L = check_int("strike_limit", strike_limit)
    p_harmful = check_probability("p_harmful", p_harmful)
    eps = check_probability("explore_rate", explore_rate, open_high=True)
    e = check_int("evolve_every", evolve_every, minimum=1)
    exits = []
    for pol in _policies(policy):
        share, _ = long_run(p, L, pol, eps, e)
        _, harmful_served = long_run(p_harmful, L, pol, eps, e)
        exits.append(
            ExitFate(
                name=pol.name,
                policy=pol.describe(),
                expected_release=expected_release(p, L, pol, eps) if L else float("nan"),
                share_quarantined=share,
                harmful_exposures_first_1000=exposures_from_fresh(
                    p_harmful, L, pol, SESSIONS, eps, e
                ),
                harmful_exposures_per_1000=SESSIONS * harmful_served,
            )
        )
    return QuarantineFate(
        p=p,
        runs=runs,
        strike_limit=L,
        p_harmful=p_harmful,
        p_quarantined=p_quarantined(p, runs, L, e),
        expected_runs_to_quarantine=expected_runs_to_quarantine(p, L, e),
        exits=tuple(exits),
        explore_rate=eps,
        evolve_every=e,
    )
