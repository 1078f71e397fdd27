"""Likelihood-ratio weights that stay finite: ``(2x)^s (2(1-x))^(t-s)`` as ``(2c)^t r^u``.

Shared by the mixture recursions (``mixture``, ``twolattice``) and the early stop of a
calibration trial (``revert_limit``), which weighs each reverted cell by it.
"""

from __future__ import annotations

import numpy as np
from scipy import special

RATIO_TOP = 1000
"""Most outcomes for which weights are taken as ``(2c)^t r^u`` (``ratio_powers``)."""


def ratio_powers(x: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(low, ln 2c, r^j)`` for ``j = 0..top``: with ``c = max(x, 1 - x)`` and ``r = min(x,
    1 - x) / c <= 1``, ``(2x)^s (2(1-x))^(t-s) = (2c)^t r^u`` where ``u = s`` if ``low``
    (``x <= 1/2``), else ``u = t - s``. Every factor stays finite for ``t <= RATIO_TOP``
    (``(2c)^t <= 2^t``), and a term whose ``r^u`` underflows is below ``2^t 5e-324 < 1e-22``."""
    x = np.asarray(x, dtype=float)
    big = np.maximum(x, 1.0 - x)
    r = np.minimum(x, 1.0 - x) / big
    return x <= 0.5, np.log(2.0 * big), np.exp(special.xlogy(np.arange(top + 1), r[:, None]))
