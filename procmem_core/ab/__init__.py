"""Withheld vs shown: what an agent needs to read its own explore-rate logs.

The lift-estimator base (``LiftEstimator``, ``Estimate``) and the estimators: fixed-n
(difference in means, Hajek IPW, Horvitz-Thompson IPW, AIPW, CUPED regression
adjustment) and always-valid (confidence sequences on IPW / AIPW pseudo-outcomes and on
the arms' counts); sample-ratio-mismatch tests, fixed and sequential; Holm and
Benjamini-Hochberg adjustment; the experiment planner. numpy and scipy only, so a
production agent runs the same analysis of its logged packs as the simulators do.
Which guarantee each interval gives, and when to use which: docs/ab.md.
"""

from procmem_core.ab.adjustment import (
    AdjustedComparison,
    RegressionAdjusted,
    cuped_theta,
    regression_adjustment,
)
from procmem_core.ab.base import (
    ALWAYS_VALID,
    ESTIMATORS,
    FIXED_N,
    Estimate,
    LiftEstimator,
    all_estimators,
    check_sessions,
    normal_z,
    wald_estimate,
    wald_p,
)
from procmem_core.ab.boundaries import (
    NormalMixture,
    TwoPointMixture,
    best_rho,
    beta_mixture_bounds,
    empirical_bernstein_bounds,
)
from procmem_core.ab.estimators import (
    AugmentedIPW,
    DifferenceInMeans,
    HajekIPW,
    HorvitzThompsonIPW,
    newcombe_bounds,
    newcombe_estimate,
    newcombe_p,
    newcombe_path,
)
from procmem_core.ab.multiplicity import ADJUSTMENTS, benjamini_hochberg, holm
from procmem_core.ab.planner import (
    Design,
    ExplorePlan,
    RatePlan,
    exact_power,
    fixed_power,
    normal_power,
    normal_sessions,
    plan,
    plan_rate,
    sequential_power,
)
from procmem_core.ab.pseudo import aipw_pseudo_outcomes, ipw_pseudo_outcomes
from procmem_core.ab.sequential import (
    BernsteinAIPW,
    BernsteinIPW,
    BetaMixtureArms,
    ConfidencePath,
    NormalMixtureAIPW,
    NormalMixtureIPW,
    SequentialLiftEstimator,
    TwoPointAIPW,
)
from procmem_core.ab.srm import (
    SRM_ALPHA,
    sequential_srm_p_value,
    srm_flagged,
    srm_p_value,
    srm_p_value_rates,
)

__all__ = [
    "ADJUSTMENTS",
    "ALWAYS_VALID",
    "ESTIMATORS",
    "FIXED_N",
    "SRM_ALPHA",
    "AdjustedComparison",
    "AugmentedIPW",
    "BernsteinAIPW",
    "BernsteinIPW",
    "BetaMixtureArms",
    "ConfidencePath",
    "Design",
    "DifferenceInMeans",
    "Estimate",
    "ExplorePlan",
    "HajekIPW",
    "HorvitzThompsonIPW",
    "LiftEstimator",
    "NormalMixture",
    "NormalMixtureAIPW",
    "NormalMixtureIPW",
    "RatePlan",
    "RegressionAdjusted",
    "SequentialLiftEstimator",
    "TwoPointAIPW",
    "TwoPointMixture",
    "aipw_pseudo_outcomes",
    "all_estimators",
    "benjamini_hochberg",
    "best_rho",
    "beta_mixture_bounds",
    "check_sessions",
    "cuped_theta",
    "empirical_bernstein_bounds",
    "exact_power",
    "fixed_power",
    "holm",
    "ipw_pseudo_outcomes",
    "newcombe_bounds",
    "newcombe_estimate",
    "newcombe_p",
    "newcombe_path",
    "normal_power",
    "normal_sessions",
    "normal_z",
    "plan",
    "plan_rate",
    "regression_adjustment",
    "sequential_power",
    "sequential_srm_p_value",
    "srm_flagged",
    "srm_p_value",
    "srm_p_value_rates",
    "wald_estimate",
    "wald_p",
]
