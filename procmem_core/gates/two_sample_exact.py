"""``TwoSampleGate``'s exact paths: its operating point and curve by the two-sample
recursion (``gates.twolattice``), the recursion at 1/2 cached per gate and ledger size."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.errors import check_probability
from procmem_core.gates import twolattice
from procmem_core.gates.base import (
    OperatingCurve,
    OperatingPoint,
    Recursions,
    check_p_values,
    make_point,
)

HALF_MASSES = Recursions()
"""``TwoSampleGate.half_masses`` per gate parameters and ledger, shared by equal gates."""


class TwoSampleExact:
    """Mixin of ``TwoSampleGate`` (needs ``design``, ``max_runs`` and ``tables``): the
    exact operating characteristics."""

    def observations(self, prior_runs: int | None) -> int:
        return twolattice.TwoSampleLattice(
            int(prior_runs or 0), self.design == "concurrent", self.max_runs
        ).observations

    def lattice_for(self, prior_runs: int | None) -> twolattice.TwoSampleLattice:
        """The cells with a ledger of ``prior_runs`` runs (None: no ledger)."""
        return twolattice.TwoSampleLattice(
            int(prior_runs or 0), self.design == "concurrent", self.max_runs
        )

    def half_masses(self, prior_runs: int | None):
        """The recursion at 1/2 (``twolattice.half_masses``) for this gate with a ledger of
        ``prior_runs`` runs, at the levels it uses there (cached per ledger size)."""
        lat = self.lattice_for(prior_runs)
        key = self.recursion_key(int(prior_runs or 0))
        return HALF_MASSES.get(key, lambda: twolattice.half_masses(lat, self.tables(lat)))

    def passes(self, p0, p, prior_runs: int | None) -> twolattice.TwoSamplePass:
        """The two-sample recursion for this gate at prior rates ``p0``, revision rates ``p``."""
        lat = self.lattice_for(prior_runs)
        return twolattice.evaluate(lat, self.half_masses(prior_runs), p0, p)

    def operating_point(
        self, p: float | np.ndarray, p0: float, prior_runs: int | None = None
    ) -> OperatingPoint:
        """Exact P(revert), P(accept), E[runs] at revision rate(s) ``p`` and prior rate
        ``p0``, with a ledger of ``prior_runs`` runs (None: no ledger)."""
        arr = check_p_values(p)
        p0 = check_probability("p0", p0)
        flat = arr.ravel()
        res = self.passes(np.full(flat.size, p0), flat, prior_runs)
        point = make_point(arr, p0, res.revert, res.accept, res.runs, "exact", prior_runs)
        prior = point.expected_runs if self.design == "concurrent" else 0.0 * point.expected_runs
        return OperatingPoint(**{**point.__dict__, "expected_prior_runs": prior})

    def operating_curve(
        self, p0: ArrayLike, drop: float = 0.0, prior_runs: int | None = None
    ) -> OperatingCurve:
        p0s = check_p_values(p0).ravel()
        drop = check_probability("drop", drop)
        res = self.passes(p0s, np.maximum(p0s - drop, 0.0), prior_runs)
        prior = res.runs if self.design == "concurrent" else np.zeros_like(res.runs)
        return OperatingCurve(
            p0s, drop, res.revert, res.accept, res.runs, prior, prior_runs,
            self.observations(prior_runs), False, res.stop,
        )  # fmt: skip
