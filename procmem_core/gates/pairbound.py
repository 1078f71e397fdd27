"""Wald-Wolfowitz lower bounds on the expected runs of any two-arm test (both designs).

For the two-sample question the null is composite (both arms at some p0) and so is the
alternative (the prior at q, the revision at ``q - drop``). A test with false-revert rate
``a`` at the null point ``p`` and power ``1 - b`` at the alternative ``q`` takes, when nothing
changed, by the data-processing inequality on its decision and Wald's identity,

    E_p[N] >= (h(a, b) - n0 K(p, q))^+ / (K(p, q) + K(p, q - drop))     (concurrent pairs)
    E_p[N] >= (h(a, b) - n0 K(p, q))^+ / K(p, q - drop)                 (fixed ledger)

with ``h(a, b) = (1-a) ln((1-a)/b) + a ln(a/(1-b))`` the divergence of the decision's law,
``K`` the Bernoulli divergence (``llr.bernoulli_kl``) and ``n0`` the prior's ledger runs,
whose divergence every test gets for free (Wald and Wolfowitz 1948; Hoeffding 1960 for the
composite form). Each alternative ``q`` gives a valid bound; ``null_runs_bound`` takes the
largest over the grid of ``q`` it is given (q = p is the one-sample bound of
``llr.wald_wolfowitz_bound``, ``q`` between the arms is the nuisance's price).
"""

from __future__ import annotations

import numpy as np
from scipy import special


def decision_divergence(alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """``h(a, b) = (1-a) ln((1-a)/b) + a ln(a/(1-b))`` elementwise (``0 ln 0 = 0``)."""
    a, b = np.asarray(alpha, dtype=float), np.asarray(beta, dtype=float)
    return special.xlogy(1 - a, (1 - a) / b) + special.xlogy(a, a / (1 - b))


def kl(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Bernoulli ``K(p, q)`` elementwise."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    return special.xlogy(p, p / q) + special.xlogy(1 - p, (1 - p) / (1 - q))


def null_runs_bound(
    p: np.ndarray,
    alpha: np.ndarray,
    q: np.ndarray,
    beta: np.ndarray,
    drop: float,
    ledger: int,
    concurrent: bool,
) -> np.ndarray:
    """The module docstring's bound on E[pairs] (revision runs) at each null point ``p`` with
    false-revert rate ``alpha[i]``, maximised over the alternatives ``q[j]`` at which the
    test misses with probability ``beta[j]`` (both arrays, the exact rates)."""
    p = np.asarray(p, dtype=float)[:, None]
    q = np.asarray(q, dtype=float)[None, :]
    h = decision_divergence(np.asarray(alpha, dtype=float)[:, None], np.asarray(beta)[None, :])
    free = ledger * kl(p, q)
    per = kl(p, q - drop) + (kl(p, q) if concurrent else 0.0)
    return np.max(np.maximum(h - free, 0.0) / per, axis=1)
