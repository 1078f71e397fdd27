"""Exact distributions of the engine's rules, computed by recursion, never by sampling.

- ``flat_fate``: the flat confidence rule as a random walk with an absorbing barrier at
  the threshold (docs/statistics.md, "The flat confidence rule").
- ``sprt_operating_point`` / ``margin_operating_point``: the revision gates' exact
  P(revert), P(accept) and expected runs by recursion over (runs, successes);
  ``wald_operating_point`` and ``sprt_expected_runs_lower_bound`` beside them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

from procmem_core.errors import ParameterError, check_int, check_probability
from procmem_core.flat import DEFAULT_RULE, ConfidenceRule, passes_threshold, snap
from procmem_core.gates import MarginGate, SPRTGate
from procmem_core.sequential import lattice_absorption, verdict_table
from procmem_core.sprt import sprt_hypotheses, sprt_increments


@dataclass(frozen=True)
class FlatFate:
    """Exact fate of one flat procedure with success probability ``p`` per applied session.

    ``p_excluded``: probability it falls below the threshold within ``sessions`` applied
    sessions (below it the procedure is never shown, so never updated again).
    ``expected_sessions_applied``: expected number of those sessions in which it was
    still shown (so applied and updated). ``excluded_by_session[k]`` is the probability
    of exclusion within ``k + 1`` sessions. ``break_even`` is ``penalty/(reward+penalty)``.
    """

    p: float
    sessions: int
    p_excluded: float
    expected_sessions_applied: float
    excluded_by_session: np.ndarray
    break_even: float
    n_states: int


def flat_fate(
    p: float, sessions: int, rule: ConfidenceRule = DEFAULT_RULE, threshold: float = 0.55
) -> FlatFate:
    """Forward recursion over the finite set of reachable confidences.

    The state after k sessions is a distribution over the grid points
    ``initial + a * reward - b * penalty`` (with clamps) that still pass the threshold;
    mass that drops below it is absorbed and counted as excluded at session k.
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
    return FlatFate(p, sessions, gone, applied, excluded, rule.break_even, len(seen))


# --- SPRT and margin gates (docs/statistics.md, "The SPRT revision gate") ------------


@dataclass(frozen=True)
class OperatingPoint:
    """A gate's operating point at true success probability ``p`` of the revision.

    ``p_revert`` and ``p_accept`` (they sum to 1: the cap forces a decision) and
    ``expected_runs`` (runs until the decision, the forced one at the cap included).
    ``method`` is "exact" (lattice recursion) or "wald" (Wald's untruncated
    approximations). Fields are floats for a scalar ``p``, arrays for an array ``p``.
    """

    p: float | np.ndarray
    p0: float
    p_revert: float | np.ndarray
    p_accept: float | np.ndarray
    expected_runs: float | np.ndarray
    method: str


def _check_p_values(p: float | np.ndarray) -> np.ndarray:
    arr = np.asarray(p, dtype=float)
    bad = ~((arr >= 0.0) & (arr <= 1.0))
    if np.any(bad):
        raise ParameterError("p", float(arr[bad].ravel()[0]), "probabilities in [0, 1]")
    return arr


def _point(p: np.ndarray, p0: float, revert, accept, runs, method: str) -> OperatingPoint:
    if p.ndim == 0:
        return OperatingPoint(
            float(p), p0, float(revert[0]), float(accept[0]), float(runs[0]), method
        )
    shape = p.shape
    return OperatingPoint(
        p, p0, revert.reshape(shape), accept.reshape(shape), runs.reshape(shape), method
    )


def _lattice_point(gate, p: float | np.ndarray, p0: float) -> OperatingPoint:
    arr = _check_p_values(p)
    p0 = check_probability("p0", p0)
    table = verdict_table(gate.rule, np.array([p0]), gate.max_runs)[0]
    accept, revert, runs = lattice_absorption(table, arr.ravel())
    return _point(arr, p0, revert, accept, runs, "exact")


def sprt_operating_point(
    p: float | np.ndarray,
    p0: float,
    min_drop: float = 0.15,
    alpha: float = 0.05,
    beta: float = 0.20,
    max_runs: int = 50,
    min_runs: int = 3,
    at_cap: str = "llr",
) -> OperatingPoint:
    """Exact P(revert), P(accept) and E[runs] of ``SPRTGate`` with p0 known.

    The LLR depends only on (runs, successes), so the gate's own rule tabulated on that
    lattice and a forward recursion over it (``sequential.lattice_absorption``) give the
    operating point, truncation at ``max_runs`` included, in O(max_runs^2) per ``p``.
    """
    gate = SPRTGate(min_drop, alpha, beta, max_runs, min_runs, at_cap)
    return _lattice_point(gate, p, p0)


def margin_operating_point(
    p: float | np.ndarray, p0: float, margin: float = 0.05, min_runs: int = 5, max_runs: int = 50
) -> OperatingPoint:
    """Exact operating point of ``MarginGate`` against a known prior rate ``p0``."""
    return _lattice_point(MarginGate(margin, min_runs, max_runs), p, p0)


def _wald_scalar(p: float, ln_s: float, ln_f: float, ln_a: float, ln_b: float):
    """Wald's OC ``L(p)`` (probability of accepting) and ASN for one ``p``."""
    mean = p * ln_s + (1.0 - p) * ln_f
    second = p * ln_s**2 + (1.0 - p) * ln_f**2
    if p == 1.0:  # every run succeeds: the LLR walks down to ln B
        return 1.0, ln_b / ln_s
    if p == 0.0:  # every run fails: the LLR walks up to ln A
        return 0.0, ln_a / ln_f
    if abs(mean) <= 1e-12 * math.sqrt(second):
        return ln_a / (ln_a - ln_b), -ln_a * ln_b / second

    def g(h: float) -> float:  # p (p1/p0)^h + (1-p) ((1-p1)/(1-p0))^h - 1
        return p * math.expm1(h * ln_s) + (1.0 - p) * math.expm1(h * ln_f)

    guess = -2.0 * mean / second  # root of the quadratic expansion of g
    near, far = guess * 1e-6, guess
    while g(far) <= 0.0:
        far *= 2.0
    h = optimize.brentq(g, min(near, far), max(near, far), xtol=1e-14, rtol=1e-12)
    if h > 0:  # L = (A^h - 1) / (A^h - B^h), divided through by A^h
        oc = -math.expm1(-h * ln_a) / -math.expm1(h * (ln_b - ln_a))
    else:  # divided through by B^h
        oc = (math.exp(h * (ln_a - ln_b)) - math.exp(-h * ln_b)) / math.expm1(h * (ln_a - ln_b))
    return oc, (oc * ln_b + (1.0 - oc) * ln_a) / mean


def wald_operating_point(
    p: float | np.ndarray,
    p0: float,
    min_drop: float = 0.15,
    alpha: float = 0.05,
    beta: float = 0.20,
) -> OperatingPoint:
    """Wald's approximations for the untruncated SPRT (Wald 1947, ch. 3).

    OC ``L(p) = (A^h - 1) / (A^h - B^h)`` with ``h != 0`` solving
    ``p (p1/p0)^h + (1-p) ((1-p1)/(1-p0))^h = 1`` (``brentq``);
    ``ASN = (L ln B + (1-L) ln A) / E_p[z]``; where ``E_p[z] = 0`` the limits
    ``L = ln A / (ln A - ln B)``, ``ASN = -ln A ln B / E_p[z^2]``. They ignore the
    overshoot of the boundaries, ``min_runs`` and the cap. p0 and p1 are clipped as in
    the gate (``sprt.sprt_hypotheses``).
    """
    gate = SPRTGate(min_drop, alpha, beta)
    arr = _check_p_values(p)
    p0 = check_probability("p0", p0)
    ln_s, ln_f = (float(x) for x in sprt_increments(p0, min_drop))
    ln_a, ln_b = gate.boundaries
    pairs = [_wald_scalar(float(x), ln_s, ln_f, ln_a, ln_b) for x in arr.ravel()]
    accept = np.array([oc for oc, _ in pairs])
    runs = np.array([asn for _, asn in pairs])
    return _point(arr, p0, 1.0 - accept, accept, runs, "wald")


def bernoulli_kl(p: float, q: float) -> float:
    """``K(p, q) = p ln(p/q) + (1-p) ln((1-p)/(1-q))`` (0 ln 0 = 0)."""
    return float(special.xlogy(p, p / q) + special.xlogy(1.0 - p, (1.0 - p) / (1.0 - q)))


def sprt_expected_runs_lower_bound(
    p0: float, min_drop: float = 0.15, alpha: float = 0.05, beta: float = 0.20
) -> tuple[float, float]:
    """Wald-Wolfowitz lower bounds on E[runs] of any test with errors (alpha, beta).

    ``E0[N] >= ((1-a) ln((1-a)/b) + a ln(a/(1-b))) / K(p0, p1)`` and
    ``E1[N] >= ((1-b) ln((1-b)/a) + b ln(b/(1-a))) / K(p1, p0)``, returned as
    ``(at p0, at p1)``; p0 and p1 are clipped as in the gate.
    """
    SPRTGate(min_drop, alpha, beta)
    p0 = check_probability("p0", p0)
    p0c, p1 = (float(x) for x in sprt_hypotheses(p0, min_drop))
    a, b = alpha, beta
    at_p0 = ((1 - a) * math.log((1 - a) / b) + a * math.log(a / (1 - b))) / bernoulli_kl(p0c, p1)
    at_p1 = ((1 - b) * math.log((1 - b) / a) + b * math.log(b / (1 - a))) / bernoulli_kl(p1, p0c)
    return at_p0, at_p1


def sprt_operating_point_estimated_p0(
    p: float | np.ndarray,
    prior_p: float,
    prior_runs: int,
    min_drop: float = 0.15,
    alpha: float = 0.05,
    beta: float = 0.20,
    max_runs: int = 50,
    min_runs: int = 3,
    at_cap: str = "llr",
    prior: str = "plugin",
) -> OperatingPoint:
    """Exact operating point when p0 is estimated from a prior ledger of ``prior_runs`` runs.

    The prior's successes ``S ~ Binomial(prior_runs, prior_p)`` set
    ``p0_hat = SPRTGate.estimate_p0(S, prior_runs)`` (plug-in or Clopper-Pearson); the
    operating point is the mixture ``sum_k P(S = k) * sprt_operating_point(p, p0_hat(k))``,
    still exact: O(prior_runs * max_runs^2). ``p0`` of the result is ``prior_p``.
    """
    gate = SPRTGate(min_drop, alpha, beta, max_runs, min_runs, at_cap, prior)
    arr = _check_p_values(p)
    prior_p = check_probability("prior_p", prior_p)
    prior_runs = check_int("prior_runs", prior_runs)
    k = np.arange(prior_runs + 1)
    weights = stats.binom.pmf(k, prior_runs, prior_p)
    p0_hats = np.asarray(gate.estimate_p0(k, prior_runs), dtype=float)
    tables = verdict_table(gate.rule, p0_hats, max_runs)
    revert = np.zeros(arr.size)
    accept = np.zeros(arr.size)
    runs = np.zeros(arr.size)
    for w, table in zip(weights, tables, strict=True):
        if w == 0.0:
            continue
        a, r, n = lattice_absorption(table, arr.ravel())
        accept += w * a
        revert += w * r
        runs += w * n
    return _point(arr, prior_p, revert, accept, runs, "exact")
