"""The ``quarantine`` config group (issue 29, item 2): each policy's YAML reaches the loop
scenario, and bad values are refused at config time naming the key."""

from __future__ import annotations

import pytest
from hydra.errors import HydraException

from experiments.build import validate
from experiments.run import compose_job
from procmem_core.errors import ParameterError
from procmem_core.quarantine import HalfOpenPolicy, ProbationPolicy, SeedPolicy


def test_the_loop_defaults_to_the_seed_policy_and_takes_the_group():
    assert validate(compose_job("loop")).quarantine == SeedPolicy()
    cfg = compose_job("loop", ["quarantine=probation", "quarantine.floor=0.1"])
    assert validate(cfg).quarantine == ProbationPolicy(floor=0.1, candidates=2)
    cfg = compose_job("loop", ["quarantine=half_open", "quarantine.cool_down=5"])
    assert validate(cfg).quarantine == HalfOpenPolicy(cool_down=5, probes=3, release_after=2)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [(["quarantine=probation", "quarantine.floor=0.5"], "quarantine.floor=0.5 is not allowed"),
     (["quarantine=probation", "quarantine.floor=-0.1"], "quarantine.floor=-0.1 is not allowed"),
     (["quarantine=half_open", "quarantine.cool_down=0"], "quarantine.cool_down=0"),
     (["quarantine=half_open", "quarantine.probes=0"], "quarantine.probes=0"),
     (["quarantine=half_open", "quarantine.release_after=4"], "quarantine.release_after=4"),
     (["quarantine=decay", "quarantine.decay_sessions=0"], "quarantine.decay_sessions=0"),
     (["quarantine.name=circuit"], "quarantine.name='circuit' is not allowed: a registered")],
)  # fmt: skip
def test_bad_values_are_refused_naming_the_key(overrides, message):
    with pytest.raises(ParameterError, match=message.replace("(", r"\(")):
        validate(compose_job("loop", overrides))


def test_an_unknown_policy_file_is_refused_by_hydra():
    with pytest.raises(HydraException, match="Available options"):
        compose_job("loop", ["quarantine=circuit"])
