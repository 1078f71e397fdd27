"""The SPRT's log-likelihood ratio and per-run rule as pure functions (seed: loom).

Wald's sequential probability ratio test between H0, "the revision succeeds like the
prior, with p0" (keep it), and H1, "with p1 = p0 - min_drop" (revert it); see
docs/statistics.md, "The SPRT revision gate". Every function takes scalars or numpy
arrays alike; ``SPRTGate.decide``, ``SPRTGate.decide_batch`` and
``SPRTGate.operating_point`` all go through ``sprt_verdict``.

Degenerate p0 (explicit, never a NaN): p0 is clipped into ``[2 * EPS, 1 - EPS]`` and p1
is floored at ``EPS``, so ``0 < p1 < p0 < 1`` and both log increments are finite. Thus

- ``p0 - min_drop <= 0``: H1 becomes "the revision never succeeds" (p1 = EPS). One
  success then all but accepts, and reverting takes about ``ln A / -ln(1 - p0)`` straight
  failures, so the test only catches a revision that stopped working altogether;
- ``p0 = 1``: a single failure adds ``ln((1 - p1) / EPS)`` (about 11.9 at min_drop 0.15),
  past ``ln A``, so one failure from run ``min_runs`` on reverts;
- ``p0 = 0``: p0 becomes ``2 * EPS`` and p1 ``EPS``: a success adds ``ln(1/2)`` toward
  accept and a failure almost nothing, so an undecided test goes to the cap rule.

``degenerate_p0_note`` states which of these applied, for the decision's reason.
``bernoulli_kl`` and ``wald_wolfowitz_bound``: the expected LLR increment and the least
expected runs of any test with errors (alpha, beta) (``Gate.expected_runs_lower_bound``).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from procmem_core.errors import check_probability
from procmem_core.gates.verdicts import ACCEPT_CODE, CONTINUE_CODE, REVERT_CODE
from procmem_core.proportions import clopper_pearson_lower, smoothed_rate

EPS = 1e-6
"""Floor of p1 and of 1 - p0; p0 is kept at least ``2 * EPS`` so that p1 < p0."""

LLR_TOLERANCE = 1e-9
"""An LLR within this of a boundary (or of 0, for the cap's sign rule) counts as on it.
The two increments can sum to a boundary exactly in arithmetic and an ulp short in
floats (p0 0.8, min_drop 0.2, alpha = beta = 0.1: four failures and two successes give
``ln 16 + 2 ln(3/4) = ln 9 = ln A``). (The flat rule has no such tolerance: it compares
as the seed's code does, docs/flat.md "Float or grid".)"""

AT_CAP_RULES = ("accept", "revert", "llr")
_SCALARS = (int, float, np.integer, np.floating)
_CONTINUE, _ACCEPT, _REVERT = int(CONTINUE_CODE), int(ACCEPT_CODE), int(REVERT_CODE)
_CODES = tuple(np.int8(c) for c in range(4))  # 3: both boundaries crossed (ln B > ln A)
PRIOR_ESTIMATES = ("plugin", "lower_bound", "ml")
"""How a one-sample gate estimates p0 from the prior's ledger (``prior_estimate``)."""


def prior_estimate(method: str, successes: ArrayLike, runs: ArrayLike, alpha: float) -> np.ndarray:
    """p0 from the prior's ledger: "plugin" ``(s+1)/(n+2)`` (Laplace), "lower_bound" the
    one-sided Clopper-Pearson bound at level ``alpha``, "ml" the maximum-likelihood
    ``s/n`` (1/2 with no runs). Scalars or arrays."""
    if method == "plugin":
        return smoothed_rate(successes, runs)
    if method == "lower_bound":
        return clopper_pearson_lower(successes, runs, alpha)
    s, n = np.asarray(successes, dtype=float), np.asarray(runs, dtype=float)
    return np.divide(s, n, out=np.full(np.broadcast(s, n).shape, 0.5), where=n > 0)


def sprt_boundaries(alpha: float, beta: float) -> tuple[float, float]:
    """Wald's boundaries ``(ln A, ln B) = (ln((1-beta)/alpha), ln(beta/(1-alpha)))`` (kept
    per Python-float ``(alpha, beta)``: a gate asks for its two after every run it replays)."""
    if type(alpha) is float and type(beta) is float:  # numpy scalars keep their own rounding
        return _boundaries(alpha, beta)
    return _boundaries.__wrapped__(alpha, beta)


@lru_cache(maxsize=256)
def _boundaries(alpha: float, beta: float) -> tuple[float, float]:
    return math.log((1.0 - beta) / alpha), math.log(beta / (1.0 - alpha))


def sprt_hypotheses(p0: ArrayLike, min_drop: float) -> tuple[np.ndarray, np.ndarray]:
    """``(p0, p1)`` after the documented clipping: p0 in [2 EPS, 1 - EPS], p1 >= EPS (for
    one Python-float p0, the same clip with ``min`` and ``max``: no rounding, NaN kept)."""
    if type(p0) is float:
        p0c = min(max(p0, 2.0 * EPS), 1.0 - EPS)
        return p0c, max(p0c - min_drop, EPS)
    p0c = np.clip(np.asarray(p0, dtype=float), 2.0 * EPS, 1.0 - EPS)
    return p0c, np.maximum(p0c - min_drop, EPS)


def sprt_increments(p0: ArrayLike, min_drop: float) -> tuple[np.ndarray, np.ndarray]:
    """LLR added by a success, ``ln(p1/p0)`` (< 0), and a failure, ``ln((1-p1)/(1-p0))`` (> 0).

    For one p0 (a Python or numpy scalar) the two values are computed once, by this same
    numpy code, and kept (``_increments_one``)."""
    if isinstance(p0, _SCALARS):
        return _increments_one(float(p0), float(min_drop))
    return _increments(p0, min_drop)


def _increments(p0: ArrayLike, min_drop: float) -> tuple[np.ndarray, np.ndarray]:
    p0c, p1 = sprt_hypotheses(p0, min_drop)
    return np.log(p1 / p0c), np.log((1.0 - p1) / (1.0 - p0c))


def sprt_llr(
    successes: ArrayLike, runs: ArrayLike, ln_success: ArrayLike, ln_failure: ArrayLike
) -> np.ndarray:
    """Log-likelihood ratio of H1 to H0 after ``runs`` runs with ``successes`` successes.

    ``s ln(p1/p0) + (n - s) ln((1-p1)/(1-p0))``, computed as
    ``n ln_failure + s (ln_success - ln_failure)`` (one product per cell fewer); on Python
    numbers when every input is a scalar (the same IEEE operations: a float).
    """
    if (
        isinstance(successes, _SCALARS)
        and isinstance(runs, _SCALARS)
        and isinstance(ln_success, _SCALARS)
        and isinstance(ln_failure, _SCALARS)
    ):  # four checks, not ``all`` over a generator: once per run a gate replays
        return runs * float(ln_failure) + successes * (float(ln_success) - float(ln_failure))
    ln_success = np.asarray(ln_success, dtype=float)
    ln_failure = np.asarray(ln_failure, dtype=float)
    return runs * ln_failure + successes * (ln_success - ln_failure)


def sprt_crossed(llr: ArrayLike, ln_a: float, ln_b: float) -> tuple[np.ndarray, np.ndarray]:
    """``(llr >= ln A, llr <= ln B)``, each up to ``LLR_TOLERANCE``."""
    if type(llr) is float or type(llr) is np.float64:  # one gate's cell: no array
        return np.bool_(llr >= ln_a - LLR_TOLERANCE), np.bool_(llr <= ln_b + LLR_TOLERANCE)
    llr = np.asarray(llr, dtype=float)
    return llr >= ln_a - LLR_TOLERANCE, llr <= ln_b + LLR_TOLERANCE


def sprt_step_verdict(
    llr: ArrayLike,
    runs: ArrayLike,
    ln_a: float,
    ln_b: float,
    min_runs: int,
    max_runs: int,
    at_cap: str,
) -> np.ndarray:
    """The per-run SPRT rule: int8 verdict codes (0 continue, 1 accept, 2 revert).

    From run ``min_runs`` on: revert when ``llr >= ln A``, accept when ``llr <= ln B``
    (the two never overlap because ``ln B < 0 < ln A``), both up to ``LLR_TOLERANCE``. At
    ``runs >= max_runs`` a test still undecided follows ``at_cap``: "accept", "revert", or
    "llr" (revert exactly when ``llr > 0``, accept otherwise).
    """
    llr = np.asarray(llr, dtype=float)
    runs = np.asarray(runs)
    revert, accept = sprt_crossed(llr, ln_a, ln_b)
    codes = revert.astype(np.int8) * REVERT_CODE
    codes += accept.astype(np.int8)
    codes *= runs >= min_runs
    at_cap_cells = (runs >= max_runs) & (codes == CONTINUE_CODE)
    if at_cap == "accept":
        cap = ACCEPT_CODE
    elif at_cap == "revert":
        cap = REVERT_CODE
    else:
        cap = np.where(llr > LLR_TOLERANCE, REVERT_CODE, ACCEPT_CODE).astype(np.int8)
    return np.where(at_cap_cells, cap, codes).astype(np.int8, copy=False)


def sprt_verdict(
    successes: ArrayLike,
    runs: ArrayLike,
    p0: ArrayLike,
    *,
    min_drop: float,
    alpha: float,
    beta: float,
    min_runs: int,
    max_runs: int,
    at_cap: str,
) -> np.ndarray:
    """SPRT verdict codes at ``(runs, successes)`` given p0: LLR, then the per-run rule.

    One revision (Python or numpy scalars, as ``SPRTGate.decide`` asks after every run)
    takes ``_sprt_verdict_one``: the same operations on Python numbers, with the
    increments of each p0 computed once (tests/procmem_core/gates check it against this
    path on a grid of counts, p0 and boundary cases)."""
    if isinstance(successes, _SCALARS) and isinstance(runs, _SCALARS) and isinstance(p0, _SCALARS):
        code = _sprt_verdict_one(successes, runs, p0, min_drop, alpha, beta, min_runs, max_runs,
                                 at_cap)  # fmt: skip
        return _CODES[code]  # the np.int8 code, not built again per call
    ln_s, ln_f = sprt_increments(p0, min_drop)
    ln_a, ln_b = sprt_boundaries(alpha, beta)
    llr = sprt_llr(successes, runs, ln_s, ln_f)
    return sprt_step_verdict(llr, runs, ln_a, ln_b, min_runs, max_runs, at_cap)


@lru_cache(maxsize=4096)
def _increments_one(p0: float, min_drop: float) -> tuple[float, float]:
    ln_s, ln_f = _increments(p0, min_drop)
    return float(ln_s), float(ln_f)


def _sprt_verdict_one(
    successes: int,
    runs: int,
    p0: float,
    min_drop: float,
    alpha: float,
    beta: float,
    min_runs: int,
    max_runs: int,
    at_cap: str,
) -> int:
    """``sprt_verdict`` at one cell: ``sprt_llr`` and ``sprt_step_verdict`` on Python
    numbers (IEEE + and * give the same doubles numpy does; comparisons are exact)."""
    ln_s, ln_f = _increments_one(float(p0), float(min_drop))
    ln_a, ln_b = sprt_boundaries(alpha, beta)
    llr = sprt_llr(successes, runs, ln_s, ln_f)
    code = _REVERT * (llr >= ln_a - LLR_TOLERANCE) + (llr <= ln_b + LLR_TOLERANCE)
    if runs < min_runs:
        code = _CONTINUE
    if runs >= max_runs and code == _CONTINUE:
        if at_cap == "accept":
            code = _ACCEPT
        elif at_cap == "revert":
            code = _REVERT
        else:
            code = _REVERT if llr > LLR_TOLERANCE else _ACCEPT
    return code


def degenerate_p0_note(p0: float, min_drop: float) -> str | None:
    """Why p0 or p1 were clipped (see the module docstring), or None when they were not."""
    if p0 >= 1.0 - EPS:
        return f"p0={p0:.6g} clipped to 1-{EPS:g}: one failure from min_runs on reverts"
    if p0 - min_drop <= EPS:
        if p0 <= 2.0 * EPS:
            return (
                f"p0={p0:.6g} clipped to {2 * EPS:g} and p1 to {EPS:g}: a success adds "
                "ln(1/2) toward accept, a failure almost nothing (the cap rule decides)"
            )
        return (
            f"p0={p0:.6g} <= min_drop={min_drop:g}: p1 floored at {EPS:g}, "
            "the test only catches a revision that never succeeds"
        )
    return None


def bernoulli_kl(p: float, q: float) -> float:
    """``K(p, q) = p ln(p/q) + (1-p) ln((1-p)/(1-q))`` (0 ln 0 = 0)."""
    return float(special.xlogy(p, p / q) + special.xlogy(1.0 - p, (1.0 - p) / (1.0 - q)))


def wald_wolfowitz_bound(p0: float, p1: float, alpha: float, beta: float) -> tuple[float, float]:
    """Lower bounds on E[runs] at p0 and at p1 of any test with errors (alpha, beta).

    ``E0[N] >= ((1-a) ln((1-a)/b) + a ln(a/(1-b))) / K(p0, p1)``,
    ``E1[N] >= ((1-b) ln((1-b)/a) + b ln(b/(1-a))) / K(p1, p0)`` (Wald and Wolfowitz
    1948; docs/statistics.md).
    """
    a = check_probability("alpha", alpha, open_low=True, open_high=True)
    b = check_probability("beta", beta, open_low=True, open_high=True)
    at_p0 = ((1 - a) * math.log((1 - a) / b) + a * math.log(a / (1 - b))) / bernoulli_kl(p0, p1)
    at_p1 = ((1 - b) * math.log((1 - b) / a) + b * math.log(b / (1 - a))) / bernoulli_kl(p1, p0)
    return at_p0, at_p1
