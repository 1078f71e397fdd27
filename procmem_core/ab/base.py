"""The lift-estimator base: one verb, ``estimate``, on a whole batch of replications.

Every estimator of a procedure's lift (mean outcome when shown minus when withheld)
works on arrays of shape ``(R, n)``: the signal ``y``, the arm ``shown`` (True when the
procedure was in the prompt), a pre-session covariate ``x`` (the user's base rate, say)
and a ``mask`` of sessions whose signal is usable, with the known propensity of being
shown, ``1 - epsilon``. It returns an ``Estimate`` of arrays of shape ``(R,)``. A subclass
with a ``name`` joins ``ESTIMATORS`` by itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import stats

from procmem_core.errors import check_probability
from procmem_core.registry import Registry

ESTIMATORS: Registry[LiftEstimator] = Registry("estimator", "procmem_core.ab")
"""Every lift estimator by name ("dim", "ipw", "ipw_ht", "aipw", ...)."""


@dataclass(frozen=True, kw_only=True)
class Estimate:
    """Point estimates, standard errors and confidence bounds, one per replication."""

    tau: np.ndarray
    se: np.ndarray
    low: np.ndarray
    high: np.ndarray


def normal_z(level: float) -> float:
    """``z_{(1 + level) / 2}``: the two-sided normal quantile of a confidence level."""
    level = check_probability("confidence_level", level, open_low=True, open_high=True)
    return float(stats.norm.ppf(0.5 + level / 2.0))


def wald_estimate(tau: np.ndarray, se: np.ndarray, level: float) -> Estimate:
    """``tau -+ z se``."""
    z = normal_z(level)
    return Estimate(tau=tau, se=se, low=tau - z * se, high=tau + z * se)


class LiftEstimator(ABC):
    """A lift estimator (see the module docstring)."""

    name: ClassVar[str]
    label: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            ESTIMATORS.add(cls)

    @abstractmethod
    def estimate(
        self,
        y: np.ndarray,
        shown: np.ndarray,
        x: np.ndarray,
        mask: np.ndarray,
        propensity: float,
        level: float = 0.95,
    ) -> Estimate:
        """Lift estimates of each replication (row)."""


def all_estimators() -> tuple[LiftEstimator, ...]:
    """One instance of every registered estimator, in name order."""
    return tuple(cls() for cls in ESTIMATORS.values())
