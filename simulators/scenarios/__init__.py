"""The scenario families, each one class on ``Scenario`` (docs/simulators.md)."""

from simulators.scenarios.base import SCENARIOS, Scenario, unset_phrase
from simulators.scenarios.confidence import ConfidenceScenario
from simulators.scenarios.explore import ExploreScenario
from simulators.scenarios.fate import ProcedureFateScenario
from simulators.scenarios.gate import GateScenario
from simulators.scenarios.loop import LoopScenario

__all__ = [
    "SCENARIOS",
    "ConfidenceScenario",
    "ExploreScenario",
    "GateScenario",
    "LoopScenario",
    "ProcedureFateScenario",
    "Scenario",
    "unset_phrase",
]
