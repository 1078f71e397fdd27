"""Every cap of a family at once, where the family allows it: the design search's fast
path (``design.families``). Each returns the smallest cap whose most powerful member meets
both targets on the search grid (None: none up to the question's ``max_runs``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from procmem_core.gates.base import Gate
from procmem_core.gates.cap_scan import cap_scan
from procmem_core.gates.tolerance import at_least, at_most
from procmem_core.gates.two_sample import TwoSampleGate

if TYPE_CHECKING:
    from procmem_core.gates.question import DesignQuestion

SEARCH_POINTS = 13
"""Points of the coarse p0 grid every design search evaluates on."""
ANCHOR_STRIDE = 4
"""Objectives other than ``max_runs`` only anchor the frontier at the smallest feasible
cap: the two-sample scan checks every 4th cap (the anchor is then at most 3 too large)."""


def paired_scan(build: Callable[[int, float | None, bool], Gate], most: float) -> Callable:
    """A paired gate that accepts only at its cap reverts with cap K exactly when the
    uncapped test reverts by pair K: one recursion gives every cap's error rates."""

    def scan(q: DesignQuestion) -> int | None:
        gate = build(q.max_runs, most, True)
        grid = q.p0_range.grid(SEARCH_POINTS)
        design = np.full(grid.size, gate.design_p0)
        null = np.cumsum(gate.reverts_by_pair(grid, grid, design), axis=1).max(axis=0)
        alt = np.cumsum(gate.reverts_by_pair(grid, grid - q.min_drop, design), axis=1)
        ok = at_most(null, q.alpha) & at_least(alt.min(axis=0), 1.0 - q.beta)
        ok[: q.min_runs] = False
        return int(np.flatnonzero(ok)[0]) if ok.any() else None

    return scan


def two_sample_scan(most: float, **fixed: object) -> Callable:
    """Every cap of the two-sample family in one recursion (``cap_scan``); every
    ``ANCHOR_STRIDE``-th for the objectives other than ``max_runs``."""

    def scan(q: DesignQuestion) -> int | None:
        gate = TwoSampleGate(**fixed, max_runs=q.max_runs, accept_level=most, final_level=0.0)
        stride = 1 if q.objective == "max_runs" else ANCHOR_STRIDE
        caps = np.r_[np.arange(q.min_runs, q.max_runs, stride), q.max_runs]
        grid = q.p0_range.grid(SEARCH_POINTS)
        res = cap_scan(gate, grid, q.min_drop, q.alpha, q.beta, caps)
        ok = (
            at_most(res.false_revert, q.alpha)
            & at_least(res.power, 1.0 - q.beta)
            & at_most(res.early, q.alpha)
        )
        return int(np.flatnonzero(ok)[0]) if ok.any() else None

    return scan
