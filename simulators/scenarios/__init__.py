"""The scenario families, each one class on ``Scenario`` (docs/simulators.md)."""

from simulators.scenarios.base import SCENARIOS, Scenario, unset_phrase
from simulators.scenarios.confidence import ConfidenceScenario
from simulators.scenarios.explore import ExploreScenario
from simulators.scenarios.fate import ProcedureFateScenario
from simulators.scenarios.gate import GateScenario
from simulators.scenarios.learnings import LearningsScenario
from simulators.scenarios.loop import LoopScenario
from simulators.scenarios.reflections import ReflectionsScenario

__all__ = [
    "SCENARIOS",
    "ConfidenceScenario",
    "ExploreScenario",
    "GateScenario",
    "LearningsScenario",
    "LoopScenario",
    "ProcedureFateScenario",
    "ReflectionsScenario",
    "Scenario",
    "unset_phrase",
]
