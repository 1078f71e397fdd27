"""Decisions at a boundary that a last-bit difference cannot flip.

An exact worst case is a sum of many products computed by numpy and BLAS, whose
summation order (and so the last one or two bits of the result) depends on the CPU's
SIMD kernels. A gate is certified, or a design meets its targets, only when the figure
clears the target by a relative margin far above any such difference and far below any
printed digit:

    certified   value <= limit (1 - MARGIN)     for a rate that must stay at most limit,
    certified   value >= limit (1 + MARGIN)     for a rate that must reach at least limit,

with ``MARGIN = 1e-9`` (cross-CPU differences seen: about 4e-16 relative). A figure
inside the margin counts as not certified, so the calibration tightens once more: the
claim "at most alpha" then holds whatever the last bits, and two machines take the same
branch unless a figure falls within 1e-16 of ``limit (1 -/+ MARGIN)`` instead of within
1e-16 of ``limit``, which the calibration does not aim at.
"""

from __future__ import annotations

import numpy as np

MARGIN = 1e-9


def at_most(value: float | np.ndarray, limit: float) -> np.bool_ | np.ndarray:
    """``value <= limit`` with the certification margin (scalar or array)."""
    return np.asarray(value) <= limit * (1.0 - MARGIN)


def at_least(value: float | np.ndarray, limit: float) -> np.bool_ | np.ndarray:
    """``value >= limit`` with the certification margin (scalar or array)."""
    return np.asarray(value) >= limit * (1.0 + MARGIN)
