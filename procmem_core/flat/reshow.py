"""The flat rule when an excluded procedure is shown again: a chain that never absorbs.

With an explore rate, or a reviewer who re-shows an excluded procedure with probability
``e`` per session, a procedure below the threshold is still applied now and then, so it
keeps moving and can climb back. On the confidence grid (``chain.confidence_space`` with
the states below the threshold kept) the chain moves every session from a state at or
above the threshold, and with probability ``e`` from one below it (else it stays).

- Long run (exact): ``pi``, the long-run distribution from the start, is the mixture of
  the stationary laws of the closed classes the chain can end in, weighted by the
  probabilities of ending in each (``(I - P_TT)^-1 P_TC 1``). The share of sessions the
  procedure is shown is ``sum_i pi_i s_i`` (``s_i = 1`` at or above the threshold, ``e``
  below); the share in the prompt on its own merit is ``pi(A)`` (A: at or above); its
  mean stay in the prompt per visit is ``pi(A) / sum_{i not in A, j in A} pi_i P_ij``
  (renewal-reward).
- Over a horizon (exact): the forward recursion ``d_{t+1} = d_t P`` gives the chance it
  is shown in each session and the expected sessions shown, the time a harmful one
  spends in the prompt.

In the seed's float arithmetic the doubles reached form no closed set (``flat.chain``):
the horizon figures run on the doubles reachable within ``sessions`` updates, and the
long run by renewal-reward over cycles between the clamps (``flat.excursion
.float_long_run``); ``states`` and ``long_run`` are then the doubles visited in those
cycles and their long-run shares.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph
from scipy.sparse import linalg as splinalg

from procmem_core.errors import ParameterError, check_int, check_probability
from procmem_core.flat.chain import _check_chain, confidence_space
from procmem_core.flat.excursion import float_long_run
from procmem_core.flat.prompt import DEFAULT_THRESHOLD
from procmem_core.flat.rule import DEFAULT_RULE, FlatRule


@dataclass(frozen=True)
class ReshowFate:
    """Exact long-run and finite-horizon figures of the re-shown chain (module docstring).

    ``long_run_shown``: share of sessions shown (in the prompt, or re-shown);
    ``long_run_in_prompt``: share at or above the threshold; ``mean_stay``: mean run of
    consecutive sessions at or above it per visit. Over ``sessions`` from the start:
    ``shown_by_session[t]`` = P(shown in session t + 1), ``expected_shown`` its sum,
    ``expected_in_prompt`` the expected sessions at or above the threshold,
    ``in_prompt_after`` the chance it is at or above it after the last session.
    """

    p: float
    reshow: float
    sessions: int
    states: np.ndarray
    long_run: np.ndarray
    long_run_shown: float
    long_run_in_prompt: float
    mean_stay: float
    shown_by_session: np.ndarray
    expected_shown: float
    expected_in_prompt: float
    in_prompt_after: float


def reshow_fate(
    p: float,
    reshow: float,
    sessions: int,
    rule: FlatRule = DEFAULT_RULE,
    threshold: float = DEFAULT_THRESHOLD,
    baseline: float | None = None,
) -> ReshowFate:
    """The chain of a procedure re-shown with probability ``reshow`` when excluded."""
    reshow = check_probability("reshow", reshow, open_high=True)
    sessions = check_int("sessions", sessions, minimum=1)
    p, threshold, baseline = _check_chain(p, rule, threshold, baseline)
    start = rule.start(baseline)
    floating = rule.arithmetic == "float"
    if floating and reshow == 0:
        raise ParameterError(
            "reshow", reshow, "a rate above 0 (at 0 the threshold absorbs: flat_fate and "
            "run_lengths give that chain)",
        )  # fmt: skip
    horizon = sessions if floating else None
    space = confidence_space(rule, threshold, start, baseline, keep_below=True, horizon=horizon)
    a = space.shown
    s = np.where(a, 1.0, reshow)  # P(shown) in each state: also P(the chain moves)
    here = np.arange(len(a))
    up, down = (np.where(m < 0, here, m) for m in (space.up, space.down))  # -1: never taken
    trans = _transitions(up, down, s, p)
    i0 = space.index(start)
    shown_by, in_prompt, dist = _forward(trans, i0, s, a, sessions)
    if floating:
        lr = float_long_run(p, reshow, rule, threshold, start)
        states, pi, lr_shown, stay_share, mean_stay = (
            lr.states, lr.long_run, lr.shown, lr.in_prompt, lr.mean_stay
        )  # fmt: skip
    else:
        states, pi = space.states, _long_run(trans, i0)
        entry = float(pi[~a] @ np.asarray(trans[~a][:, a].sum(axis=1)).ravel())
        stay_share, lr_shown = float(pi[a].sum()), float(pi @ s)
        mean_stay = stay_share / entry if entry > 0 else (math.inf if stay_share > 0 else 0.0)
    return ReshowFate(
        p=p,
        reshow=reshow,
        sessions=sessions,
        states=states,
        long_run=pi,
        long_run_shown=lr_shown,
        long_run_in_prompt=stay_share,
        mean_stay=mean_stay,
        shown_by_session=shown_by,
        expected_shown=float(shown_by.sum()),
        expected_in_prompt=in_prompt,
        in_prompt_after=float(dist[a].sum()),
    )


def _transitions(up: np.ndarray, down: np.ndarray, move: np.ndarray, p: float) -> sparse.csr_matrix:
    """The one-session transition matrix: from state i, with probability ``move[i]`` up
    (success, ``p``) or down (failure), else stay."""
    n = len(move)
    idx = np.arange(n)
    rows = np.concatenate([idx, idx, idx])
    cols = np.concatenate([up, down, idx])
    w = np.concatenate([move * p, move * (1 - p), 1.0 - move])
    keep = w > 0
    return sparse.csr_matrix((w[keep], (rows[keep], cols[keep])), shape=(n, n))


def _forward(
    trans: sparse.csr_matrix, start: int, shown: np.ndarray, in_prompt: np.ndarray, sessions: int
) -> tuple[np.ndarray, float, np.ndarray]:
    """The forward recursion ``d_{t+1} = d_t P`` from ``start``: P(shown) in each session,
    the expected sessions in the prompt, and the distribution after the last session."""
    dist = np.zeros(trans.shape[0])
    dist[start] = 1.0
    shown_by = np.zeros(sessions)
    expected_in_prompt = 0.0
    back = trans.T.tocsr()
    for t in range(sessions):
        shown_by[t] = float(dist @ shown)
        expected_in_prompt += float(dist[in_prompt].sum())
        dist = back @ dist
    return shown_by, expected_in_prompt, dist


def _long_run(trans: sparse.csr_matrix, start: int) -> np.ndarray:
    """The Cesaro limit of the distribution from ``start``: stationary laws of the closed
    classes weighted by the probability of ending in each."""
    n = trans.shape[0]
    _, label = csgraph.connected_components(trans, directed=True, connection="strong")
    coo = trans.tocoo()
    leaves = np.zeros(label.max() + 1, bool)
    leaves[label[coo.row[label[coo.row] != label[coo.col]]]] = True
    closed = np.flatnonzero(~leaves)
    transient = np.flatnonzero(leaves[label])
    out = np.zeros(n)
    if leaves[label[start]]:
        q = trans[transient][:, transient]
        lhs = sparse.csc_matrix(sparse.identity(len(transient)) - q)
        at = int(np.searchsorted(transient, start))
    for c in closed:
        members = np.flatnonzero(label == c)
        if not leaves[label[start]]:
            weight = 1.0 if label[start] == c else 0.0
        else:
            into = np.asarray(trans[transient][:, members].sum(axis=1)).ravel()
            weight = float(np.atleast_1d(splinalg.spsolve(lhs, into))[at])
        if weight > 0:
            out[members] += weight * _stationary(trans[members][:, members])
    return out


def _stationary(p: sparse.csr_matrix) -> np.ndarray:
    """``pi P = pi``, ``sum pi = 1`` on one closed communicating class."""
    m = p.shape[0]
    if m == 1:
        return np.ones(1)
    a = (p.T - sparse.identity(m)).tolil()
    a[m - 1, :] = np.ones(m)
    rhs = np.zeros(m)
    rhs[-1] = 1.0
    return np.atleast_1d(splinalg.spsolve(sparse.csc_matrix(a), rhs))
