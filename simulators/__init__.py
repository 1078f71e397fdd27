"""The world that drives the engine: users, feedback channels and the scenario families.

``SCENARIOS`` maps each scenario's name to its class; every class is a validated
dataclass on ``Scenario`` with ``run(seed) -> ScenarioResult``. ``CHANNELS`` maps each
feedback channel's name to its class. The lift estimators live in the engine
(``procmem_core.ab``) and are re-exported here. See docs/simulators.md.
"""

from procmem_core.ab import (
    ESTIMATORS,
    AugmentedIPW,
    BernsteinAIPW,
    BernsteinIPW,
    BetaMixtureArms,
    DifferenceInMeans,
    HajekIPW,
    HorvitzThompsonIPW,
    LiftEstimator,
    NormalMixtureAIPW,
    NormalMixtureIPW,
    RegressionAdjusted,
    TwoPointAIPW,
)
from simulators.feedback import (
    CHANNELS,
    ArrivalLine,
    BiasedJudge,
    DelayedRatings,
    Feedback,
    FeedbackChannel,
    InformativeMissing,
    LabelFlips,
    MissingRatings,
    Signals,
)
from simulators.result import ScenarioResult
from simulators.scenarios import (
    SCENARIOS,
    ConfidenceScenario,
    ExploreScenario,
    GateScenario,
    LearningsScenario,
    LoopScenario,
    ProcedureFateScenario,
    ReflectionsScenario,
    Scenario,
)
from simulators.users import UserPopulation

__all__ = [
    "CHANNELS",
    "ESTIMATORS",
    "SCENARIOS",
    "ArrivalLine",
    "AugmentedIPW",
    "BernsteinAIPW",
    "BernsteinIPW",
    "BetaMixtureArms",
    "BiasedJudge",
    "ConfidenceScenario",
    "DelayedRatings",
    "DifferenceInMeans",
    "ExploreScenario",
    "Feedback",
    "FeedbackChannel",
    "GateScenario",
    "HajekIPW",
    "HorvitzThompsonIPW",
    "InformativeMissing",
    "LabelFlips",
    "LearningsScenario",
    "LiftEstimator",
    "LoopScenario",
    "MissingRatings",
    "NormalMixtureAIPW",
    "NormalMixtureIPW",
    "ProcedureFateScenario",
    "ReflectionsScenario",
    "RegressionAdjusted",
    "Scenario",
    "ScenarioResult",
    "Signals",
    "TwoPointAIPW",
    "UserPopulation",
]
