"""``rule.arithmetic`` (issue 25): the seed's float arithmetic by default, the decimal grid
by config, an unknown value refused naming the field."""

from __future__ import annotations

import pytest

from experiments.build import validate
from procmem_core.errors import ParameterError
from procmem_core.flat import ConfidenceRule


def test_the_arithmetic_is_a_config_key_with_a_clear_error(compose_preset):
    """``rule.arithmetic`` reaches the built rule; an unknown value names the field."""
    sc = validate(compose_preset("quickstart", ["case=fate_seed"]))
    assert sc.rule.arithmetic == "float"
    sc = validate(compose_preset("quickstart", ["case=fate_seed", "rule.arithmetic=grid"]))
    assert sc.rule == ConfidenceRule(arithmetic="grid")
    with pytest.raises(ParameterError, match="arithmetic"):
        validate(compose_preset("quickstart", ["case=fate_seed", "rule.arithmetic=decimal"]))
    with pytest.raises(ParameterError, match="arithmetic='decimal'"):
        ConfidenceRule(arithmetic="decimal")
