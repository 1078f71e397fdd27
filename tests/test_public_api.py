"""The public API at the top of each package (issue 10, item 9): every name the issue lists,
and every registered part under its class name, so no user needs a deep module path."""

from __future__ import annotations

import pytest

import procmem_core
import simulators
from procmem_core.ab import ESTIMATORS
from procmem_core.flat.rule import FLAT_RULES
from procmem_core.gates import GATES
from procmem_core.quarantine import QUARANTINE_POLICIES
from simulators.feedback import CHANNELS
from simulators.scenarios import SCENARIOS

ISSUE_NAMES = [
    "ConfidenceRule",
    "Procedure",
    "PromptFilter",
    "build_system_prompt",
    "shown_mask",
    "flat_fate",
    "ProcedureGraph",
    "GraphError",
    "ProcedureStore",
    "RevisionStats",
    "GateDecision",
    "SPRTGate",
    "MarginGate",
    "CostGate",
    "make_gate",
    "sprt_operating_point",
    "wald_operating_point",
    "sprt_expected_runs_lower_bound",
    "ContextPacker",
    "learn",
    "LLMConfig",
]


@pytest.mark.parametrize("name", ISSUE_NAMES)
def test_the_engine_exports_every_name_the_issue_lists(name):
    assert name in procmem_core.__all__
    assert getattr(procmem_core, name) is not None


@pytest.mark.parametrize(
    ("package", "registry"),
    [
        (procmem_core, GATES),
        (procmem_core, ESTIMATORS),
        (procmem_core, FLAT_RULES),
        (procmem_core, QUARANTINE_POLICIES),
        (simulators, ESTIMATORS),
        (simulators, CHANNELS),
        (simulators, SCENARIOS),
    ],
    ids=[
        "gates",
        "engine-estimators",
        "rules",
        "quarantine",
        "estimators",
        "channels",
        "scenarios",
    ],
)
def test_every_registered_part_is_exported_under_its_class_name(package, registry):
    missing = [
        (name, cls.__name__)
        for name, cls in registry.items()
        if getattr(package, cls.__name__, None) is not cls or cls.__name__ not in package.__all__
    ]
    assert missing == []
    assert len(registry.names()) >= 3  # the registry found its package's modules


def test_the_exports_name_real_attributes():
    for package in (procmem_core, simulators):
        assert sorted(set(package.__all__)) == sorted(package.__all__)  # no name twice
        assert [n for n in package.__all__ if not hasattr(package, n)] == []
