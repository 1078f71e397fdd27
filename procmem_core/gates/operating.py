"""Operating points of the seed's gates by name, for readers who think in functions.

Each is one line over the gate's own method (``LatticeGate.operating_point``,
``SPRTGate.wald_operating_point``, ``Gate.expected_runs_lower_bound``): the gate's
parameters are given by keyword and validated by its constructor, never repeated here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from procmem_core.gates.base import OperatingPoint
from procmem_core.gates.margin import MarginGate
from procmem_core.gates.sprt import SPRTGate


def sprt_operating_point(
    p: float | np.ndarray, p0: float, prior_runs: int | None = None, **params: Any
) -> OperatingPoint:
    """Exact P(revert), P(accept) and E[runs] of ``SPRTGate(**params)`` at revision rate
    ``p``: p0 known, or (``prior_runs``) estimated from a Binomial(prior_runs, p0) ledger."""
    return SPRTGate(**params).operating_point(p, p0, prior_runs)


def margin_operating_point(
    p: float | np.ndarray, p0: float, prior_runs: int | None = None, **params: Any
) -> OperatingPoint:
    """Exact operating point of ``MarginGate(**params)`` (p0 known or from a ledger)."""
    return MarginGate(**params).operating_point(p, p0, prior_runs)


def wald_operating_point(p: float | np.ndarray, p0: float, **params: Any) -> OperatingPoint:
    """Wald's approximations for ``SPRTGate(**params)`` (``gates.wald``)."""
    return SPRTGate(**params).wald_operating_point(p, p0)


def sprt_expected_runs_lower_bound(p0: float, **params: Any) -> tuple[float, float]:
    """Wald-Wolfowitz lower bounds ``(at p0, at p1)`` at ``SPRTGate(**params)``'s nominal
    alpha and beta."""
    return SPRTGate(**params).expected_runs_lower_bound(p0)
