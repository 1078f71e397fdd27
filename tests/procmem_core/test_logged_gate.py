"""A run's gate rebuilt from its logged params (MLflow strings), one reading for the
sweep's finalize step and the report alike."""

from __future__ import annotations

import pytest

from procmem_core.gates import GATES, make_gate
from procmem_core.logged import gate_from_params, parse_param


def _as_logged(config: dict) -> dict[str, str]:
    """What MLflow keeps: every value as its string."""
    return {k: str(v) for k, v in config.items()}


@pytest.mark.parametrize("name", sorted(GATES))
def test_every_gate_round_trips_through_its_logged_strings(name: str) -> None:
    gate = make_gate(name, max_runs=40) if name != "cost" else make_gate(name, min_samples=7)
    logged = _as_logged(gate.config())
    rebuilt = gate_from_params(lambda k: parse_param(logged.get(k)))
    assert rebuilt is not None
    assert rebuilt.config() == gate.config()


def test_an_int_read_back_as_a_float_is_an_int_again() -> None:
    values = {"name": "sprt", "max_runs": 30.0, "alpha": 0.1}
    gate = gate_from_params(values.get)
    assert gate is not None
    assert gate.config()["max_runs"] == 30 and isinstance(gate.config()["max_runs"], int)
    assert gate.config()["alpha"] == 0.1


def test_unbuildable_params_give_none() -> None:
    assert gate_from_params({"name": "no_such_gate"}.get) is None
    assert gate_from_params({}.get) is None
    assert gate_from_params({"name": "sprt", "alpha": 1.5}.get) is None  # refused by the gate
