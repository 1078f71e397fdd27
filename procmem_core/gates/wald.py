"""Wald's approximations for the untruncated SPRT (Wald 1947, ch. 3), reported beside the
exact operating point, never instead of it (docs/statistics.md)."""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize

from procmem_core.errors import check_probability
from procmem_core.gates.base import OperatingPoint, check_p_values, make_point
from procmem_core.gates.llr import sprt_boundaries, sprt_increments


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


def wald_point(
    p: float | np.ndarray, p0: float, min_drop: float, alpha: float, beta: float
) -> OperatingPoint:
    """Wald's OC and ASN of the SPRT with these hypotheses and boundaries.

    OC ``L(p) = (A^h - 1) / (A^h - B^h)`` with ``h != 0`` solving
    ``p (p1/p0)^h + (1-p) ((1-p1)/(1-p0))^h = 1`` (``brentq``);
    ``ASN = (L ln B + (1-L) ln A) / E_p[z]``; where ``E_p[z] = 0`` the limits
    ``L = ln A / (ln A - ln B)``, ``ASN = -ln A ln B / E_p[z^2]``. They ignore the
    overshoot of the boundaries, ``min_runs`` and the cap. p0 and p1 are clipped as in
    the gate (``llr.sprt_hypotheses``).
    """
    arr = check_p_values(p)
    p0 = check_probability("p0", p0)
    ln_s, ln_f = (float(x) for x in sprt_increments(p0, min_drop))
    ln_a, ln_b = sprt_boundaries(alpha, beta)
    pairs = [_wald_scalar(float(x), ln_s, ln_f, ln_a, ln_b) for x in arr.ravel()]
    accept = np.array([oc for oc, _ in pairs])
    runs = np.array([asn for _, asn in pairs])
    return make_point(arr, p0, 1.0 - accept, accept, runs, "wald")
