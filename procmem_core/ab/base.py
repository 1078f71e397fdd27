"""The lift-estimator base: one verb, ``estimate``, on a whole batch of replications.

Every estimator of a procedure's lift (mean outcome when shown minus when withheld)
works on arrays of shape ``(R, n)`` (a 1-D log of one deployment is read as ``R = 1``):
the signal ``y`` (in [0, 1]), the arm ``shown`` (True when the procedure was in the
prompt), a pre-session covariate ``x`` (the user's base rate, say) and a ``mask`` of
sessions whose signal is usable, with the known propensity of being shown,
``1 - epsilon`` (one number, or one per session). It returns an ``Estimate`` of arrays of
shape ``(R,)``: the point estimate, its SE, the interval and the p-value of "no lift"
that goes with that interval. ``estimate`` checks every input (``check_sessions``) before
any work and then calls the subclass's ``compute``. A subclass with a ``name`` joins
``ESTIMATORS`` by itself; ``guarantee`` says what its interval promises (docs/ab.md).
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from procmem_core.errors import ParameterError, check_probability
from procmem_core.registry import Registry

ESTIMATORS: Registry[LiftEstimator] = Registry("estimator", "procmem_core.ab")
"""Every lift estimator by name ("dim", "ipw", "ipw_ht", "aipw", "cuped", "cs_aipw", ...)."""

FIXED_N = "fixed-n"
"""The interval covers at its level when read once, at a sample size fixed in advance."""
ALWAYS_VALID = "always-valid"
"""The interval covers at its level at every session at once: read it as often as wanted."""


@dataclass(frozen=True, kw_only=True)
class Estimate:
    """Point estimates, standard errors, confidence bounds and p-values, one per replication.

    ``p``: the p-value of "no lift" that goes with the interval. For a fixed-n interval,
    the interval at level ``1 - a`` excludes 0 exactly when ``p < a``. For a confidence
    sequence read at its tuned level, ``p < a`` exactly when the sequence excluded 0 at
    some session so far (the last interval may hold 0 again), except ``cs_arms``, whose
    ``p`` is that of its last session alone (below ``a`` exactly when its last interval
    excludes 0; valid at any stopping time, but not running).
    """

    tau: np.ndarray
    se: np.ndarray
    low: np.ndarray
    high: np.ndarray
    p: np.ndarray


@dataclass(frozen=True)
class ConfidencePath:
    """A confidence sequence over sessions: arrays ``(R, n)``, column ``t`` after ``t + 1``
    sessions; ``p`` is the always-valid p-value of "no lift" (running, except for
    ``cs_arms``: each session's own, see ``Estimate``)."""

    centre: np.ndarray
    se: np.ndarray
    low: np.ndarray
    high: np.ndarray
    p: np.ndarray

    def excludes(self, value: ArrayLike) -> np.ndarray:
        """``(R, n)``: where ``value`` (one number, or one per replication) is outside."""
        v = np.asarray(value, dtype=float)
        v = v[:, None] if v.ndim == 1 else v
        return (self.low > v) | (self.high < v)

    def ever_excludes(self, value: ArrayLike) -> np.ndarray:
        """``(R,)``: whether ``value`` left the sequence at some session."""
        return self.excludes(value).any(axis=1)

    def final(self) -> Estimate:
        """The sequence at the last session (copies: a view would keep the whole path)."""
        return Estimate(
            tau=self.centre[:, -1].copy(),
            se=self.se[:, -1].copy(),
            low=self.low[:, -1].copy(),
            high=self.high[:, -1].copy(),
            p=self.p[:, -1].copy(),
        )


@dataclass(frozen=True)
class Sessions:
    """Checked inputs of an estimator: 2-D arrays of one shape (``propensity`` broadcast)."""

    y: np.ndarray
    shown: np.ndarray
    x: np.ndarray
    mask: np.ndarray
    propensity: np.ndarray | float


def normal_z(level: float) -> float:
    """``z_{(1 + level) / 2}``: the two-sided normal quantile of a confidence level."""
    level = check_probability("confidence_level", level, open_low=True, open_high=True)
    return float(stats.norm.ppf(0.5 + level / 2.0))


def wald_p(tau: np.ndarray, se: np.ndarray) -> np.ndarray:
    """``2 Phi(-|tau| / se)``, the p-value of the Wald interval ``tau -+ z se``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return 2.0 * stats.norm.sf(np.abs(tau) / se)


def wald_estimate(tau: np.ndarray, se: np.ndarray, level: float) -> Estimate:
    """``tau -+ z se`` with its p-value."""
    z = normal_z(level)
    return Estimate(tau=tau, se=se, low=tau - z * se, high=tau + z * se, p=wald_p(tau, se))


def _as_2d(field: str, value: ArrayLike, dtype: type) -> np.ndarray:
    a = np.asarray(value)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] == 0:
        raise ParameterError(field, a.shape, "a 2-D array (replications, sessions) or a 1-D log")
    if dtype is bool and a.dtype != bool:
        if not np.isin(a, (0, 1)).all():
            raise ParameterError(field, "non-0/1 values", "True/False (or 0/1) per session")
        a = a.astype(bool)
    return a.astype(float, copy=False) if dtype is float else a


def check_propensity(propensity: ArrayLike, shape: tuple[int, int]) -> np.ndarray | float:
    """The propensity of being shown: one number or an array broadcasting to ``shape``,
    every value strictly between 0 and 1 (both arms possible in every session)."""
    e = np.asarray(propensity, dtype=float)
    allowed = "a probability strictly between 0 and 1 for every session (both arms needed)"
    try:
        np.broadcast_to(e, shape)
    except ValueError:
        raise ParameterError("propensity", e.shape, f"one number or shape {shape}") from None
    bad = ~((e > 0) & (e < 1))
    if bad.any():
        raise ParameterError("propensity", float(e[bad].flat[0]), allowed)
    return float(e) if e.ndim == 0 else e


def check_one_propensity(e: np.ndarray | float, who: str) -> None:
    """Refuse a propensity that varies across sessions for an estimator that compares the
    arms' plain means: they estimate the lift only when every session had the same chance
    of being shown (else the arms differ in when they were drawn: a share withheld that
    changes with the outcome rate makes a lift of 0 read as 0.24)."""
    if np.ndim(e) and np.ptp(e) > 0:
        raise ParameterError(
            "propensity",
            f"from {float(np.min(e)):g} to {float(np.max(e)):g}",
            f"one propensity for every session: {who} compares the arms' plain means "
            "(weigh by a varying propensity with ipw, ipw_ht, aipw or a cs_ on them, or "
            "read each stretch of one explore rate on its own)",
        )


def check_sessions(
    y: ArrayLike,
    shown: ArrayLike,
    x: ArrayLike,
    mask: ArrayLike,
    propensity: ArrayLike,
    outcomes: tuple[float, float] = (0.0, 1.0),
    one_propensity: str | None = None,
) -> Sessions:
    """Every input of an estimator checked before any work (ParameterError names it):
    arrays of one shape, ``shown`` and ``mask`` boolean, ``y`` finite within ``outcomes``
    and ``x`` finite on the usable sessions, ``propensity`` in (0, 1) for every session
    and, where ``one_propensity`` names the estimator, the same in every session
    (``check_one_propensity``)."""
    yy = _as_2d("y", y, float)
    arrays = {"shown": _as_2d("shown", shown, bool), "mask": _as_2d("mask", mask, bool)}
    arrays["x"] = _as_2d("x", x, float)
    for field, a in arrays.items():
        if a.shape != yy.shape:
            raise ParameterError(field, a.shape, f"the shape of y {yy.shape}")
    m = arrays["mask"]
    lo, hi = outcomes
    used = yy[m]
    bad = ~np.isfinite(used) | (used < lo) | (used > hi)
    if bad.any():
        raise ParameterError("y", float(used[bad][0]), f"outcomes in [{lo:g}, {hi:g}]")
    if not np.isfinite(arrays["x"][m]).all():
        raise ParameterError("x", "non-finite values", "a finite covariate on usable sessions")
    # an unusable session (a rating that never came) may hold NaN: no estimator reads it,
    # but NaN * 0 is NaN in their masked sums, so it is zeroed (copied only then)
    if not np.isfinite(yy).all():
        yy = np.where(m, yy, 0.0)
    if not np.isfinite(arrays["x"]).all():
        arrays["x"] = np.where(m, arrays["x"], 0.0)
    e = check_propensity(propensity, yy.shape)
    if one_propensity is not None:
        check_one_propensity(e, one_propensity)
    return Sessions(yy, arrays["shown"], arrays["x"], m, e)


class LiftEstimator(ABC):
    """A lift estimator (see the module docstring)."""

    name: ClassVar[str]
    label: ClassVar[str] = ""
    guarantee: ClassVar[str] = FIXED_N
    fixed_counterpart: ClassVar[str | None] = None
    """For an always-valid estimator: the fixed-n estimator of the same data, whose
    interval it is set beside (its width ratio)."""
    one_propensity: ClassVar[bool] = False
    """Whether the estimator compares the arms' plain means, so needs the same propensity
    in every session (``check_one_propensity``); the weighted ones take one per session."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            ESTIMATORS.add(cls)

    def estimate(
        self,
        y: ArrayLike,
        shown: ArrayLike,
        x: ArrayLike,
        mask: ArrayLike,
        propensity: ArrayLike,
        level: float = 0.95,
    ) -> Estimate:
        """Lift estimates of each replication (row), after checking every input."""
        normal_z(level)
        s = check_sessions(y, shown, x, mask, propensity, one_propensity=self.needs_one())
        return self.compute(s.y, s.shown, s.x, s.mask, s.propensity, level)

    def needs_one(self) -> str | None:
        """The estimator's name where it needs one propensity (``check_sessions``)."""
        return self.name if self.one_propensity else None

    def monitor(
        self,
        y: ArrayLike,
        shown: ArrayLike,
        x: ArrayLike,
        mask: ArrayLike,
        propensity: ArrayLike,
        level: float = 0.95,
    ) -> ConfidencePath | None:
        """The interval after every session, where the estimator is valid read that way
        (a confidence sequence) and cheap enough to trace; None for a fixed-n estimator."""
        return None

    @abstractmethod
    def compute(
        self,
        y: np.ndarray,
        shown: np.ndarray,
        x: np.ndarray,
        mask: np.ndarray,
        propensity: np.ndarray | float,
        level: float,
    ) -> Estimate:
        """The estimate on checked inputs (``estimate`` calls it)."""


def all_estimators(**settings: Any) -> tuple[LiftEstimator, ...]:
    """One instance of every registered estimator, in name order; each gets the
    ``settings`` that are fields of its class (``tuning_sessions=1000`` reaches the
    confidence sequences only)."""
    out = []
    for cls in ESTIMATORS.values():
        names = {f.name for f in dataclasses.fields(cls) if f.init}
        out.append(cls(**{k: v for k, v in settings.items() if k in names}))
    return tuple(out)
