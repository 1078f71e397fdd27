"""The world that drives the engine: users, feedback and five scenario families.

``SCENARIOS`` maps each scenario's name to its class; every class is a validated
dataclass with ``run(seed) -> ScenarioResult``. See docs/simulators.md.
"""

from simulators.feedback import FeedbackModel
from simulators.result import ScenarioResult
from simulators.scenarios import (
    ConfidenceScenario,
    ExploreScenario,
    GateScenario,
    LoopScenario,
    ProcedureFateScenario,
)
from simulators.users import UserPopulation

SCENARIOS: dict[str, type] = {
    cls.name: cls
    for cls in (
        ProcedureFateScenario,
        ConfidenceScenario,
        GateScenario,
        ExploreScenario,
        LoopScenario,
    )
}

__all__ = [
    "SCENARIOS",
    "ConfidenceScenario",
    "ExploreScenario",
    "FeedbackModel",
    "GateScenario",
    "LoopScenario",
    "ProcedureFateScenario",
    "ScenarioResult",
    "UserPopulation",
]
