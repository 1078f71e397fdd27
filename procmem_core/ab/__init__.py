"""Withheld vs shown: what an agent needs to read its own explore-rate logs.

The lift-estimator base (``LiftEstimator``, ``Estimate``) and the estimators
(difference in means, Hajek IPW, Horvitz-Thompson IPW, AIPW), numpy and scipy only, so a
production agent runs the same analysis of its logged packs as the simulators do.
"""

from procmem_core.ab.base import (
    ESTIMATORS,
    Estimate,
    LiftEstimator,
    all_estimators,
    normal_z,
    wald_estimate,
)
from procmem_core.ab.estimators import (
    AugmentedIPW,
    DifferenceInMeans,
    HajekIPW,
    HorvitzThompsonIPW,
)

__all__ = [
    "ESTIMATORS",
    "AugmentedIPW",
    "DifferenceInMeans",
    "Estimate",
    "HajekIPW",
    "HorvitzThompsonIPW",
    "LiftEstimator",
    "all_estimators",
    "normal_z",
    "wald_estimate",
]
