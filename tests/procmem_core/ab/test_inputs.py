"""Bad input to any estimator: a ParameterError naming the field, before any work starts."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from procmem_core.ab import (
    ESTIMATORS,
    BetaMixtureArms,
    LiftEstimator,
    NormalMixtureAIPW,
    regression_adjustment,
)
from procmem_core.errors import ParameterError

Y = np.array([[1.0, 0.0, 1.0, 1.0, 0.0, 1.0]])
SHOWN = np.array([[True, True, False, True, False, True]])
X = np.full(Y.shape, 0.5)
MASK = np.ones_like(SHOWN)


def _args(**change):
    args = {"y": Y, "shown": SHOWN, "x": X, "mask": MASK, "propensity": 0.7, "level": 0.95}
    args.update(change)
    return args


BAD = [
    ({"propensity": 1.0}, "propensity"),  # explore rate 0: no withheld arm
    ({"propensity": 0.0}, "propensity"),  # explore rate 1: no shown arm
    ({"propensity": np.r_[0.5, 0.5, 0.0, 0.5, 0.5, 0.5]}, "propensity"),  # one session
    ({"propensity": np.full(4, 0.5)}, "propensity"),  # wrong length
    ({"level": 1.0}, "confidence_level"),
    ({"level": 0.0}, "confidence_level"),
    ({"level": -0.5}, "confidence_level"),
    ({"shown": SHOWN[:, :5]}, "shown"),  # arrays of different lengths
    ({"x": X[:, :4]}, "x"),
    ({"mask": MASK[:, :3]}, "mask"),
    ({"y": Y * 2}, "y"),  # outcomes outside [0, 1]
    ({"y": Y - 0.5}, "y"),
    ({"y": np.where(Y > 0, np.nan, 0.0)}, "y"),
    ({"shown": SHOWN * 2}, "shown"),  # not True/False
    ({"x": np.where(Y > 0, np.inf, 0.5)}, "x"),
    ({"y": np.zeros((2, 2, 2))}, "y"),
]


@pytest.mark.parametrize("name", ESTIMATORS.names())
@pytest.mark.parametrize(("change", "field"), BAD)
def test_every_estimator_refuses_bad_input(name, change, field):
    with pytest.raises(ParameterError, match=f"^{field}="):
        ESTIMATORS[name]().estimate(**_args(**change))


@pytest.mark.parametrize(("change", "field"), BAD[:6])
def test_sequences_refuse_bad_input_to_path_too(change, field):
    with pytest.raises(ParameterError, match=f"^{field}="):
        NormalMixtureAIPW().path(**_args(**change))


def test_inputs_are_checked_before_any_work():
    calls = []

    class Spy(LiftEstimator):  # no name: not registered
        label: ClassVar[str] = "spy"

        def compute(self, *args):
            calls.append(args)
            raise AssertionError("compute ran on bad input")

    with pytest.raises(ParameterError, match="propensity"):
        Spy().estimate(**_args(propensity=1.0))
    assert not calls
    Spy.compute = lambda self, *a: calls.append(a) or "ok"
    assert Spy().estimate(**_args()) == "ok" and len(calls) == 1


def test_specific_refusals():
    with pytest.raises(ParameterError, match=r"^y="):  # the Beta mixture needs 0/1 outcomes
        BetaMixtureArms().estimate(**_args(y=Y * 0.5))
    with pytest.raises(ParameterError, match=r"^x="):
        regression_adjustment(Y, SHOWN, X[:, :2], MASK)
    est = ESTIMATORS["dim"]().estimate(Y[0], SHOWN[0], X[0], MASK[0], 0.7)  # a 1-D log
    assert est.tau.shape == (1,)
