"""``Metric(value, se, exact)``: one measured figure as a record, and the one ``fmt``.

A simulated figure carries its Monte Carlo standard error ``se`` and, where one can be
computed, its ``exact`` counterpart; ``z = (value - exact) / se`` says whether they agree
(statistics.md: within 4 SE). ``se`` is None for a figure that is exact or was not
sampled; ``exact`` is None when nothing exact exists. A figure with SE 0 (every
replication agreed) has no sampling noise to divide by: it agrees when it equals the
exact value up to float rounding (``ROUNDING``, relative), and is shown with its exact
one-sided 95 % Clopper-Pearson bound when it is a share at 0 or 1 over ``n`` units.

The flat form (``x``, ``x_se``, ``x_exact`` keys, as logged to MLflow) reads back with
``Metric.from_flat`` and ``metrics_of``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from procmem_core.errors import ParameterError, check_int, is_number
from procmem_core.proportions import clopper_pearson_lower

ROUNDING = 1e-9
"""Relative tolerance at which a figure with SE 0 equals its exact value."""
BOUND_LEVEL = 0.95
"""The level of the one-sided bound shown for a share at 0 or 1."""
SUFFIXES = ("_se", "_exact")


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def fmt(
    value: float | None,
    se: float | None = None,
    n: int | None = None,
    replications: int | None = None,
) -> str:
    """``value ± se`` (value to 3 significant digits, SE to 2); ``value`` alone when the SE
    is unknown; "n/a" for a missing value. With ``n`` independent units, a share at
    exactly 0 or 1 (plug-in SE 0) reads as its exact one-sided Clopper-Pearson bound
    (``1 - 0.05^(1/n)`` for none, ``0.05^(1/n)`` for all), so 4 of 4 never reads as
    certainty. Any other figure with SE 0 did not vary over its ``replications``: it reads
    as ``fmt_constant`` (its exact bound), never "± 0"."""
    if _missing(value):
        return "n/a"
    if n is not None and n > 0 and value in (0.0, 1.0) and (_missing(se) or se == 0):
        all_of = float(clopper_pearson_lower(n, n, 1 - BOUND_LEVEL))
        level = f"{100 * BOUND_LEVEL:g} %"
        if value == 1.0:
            return f"1 (all {n:,}; > {all_of:.3g} at {level})"
        return f"0 (none of {n:,}; < {1 - all_of:.3g} at {level})"
    if _missing(se):
        return f"{value:.3g}"
    if se == 0:
        return fmt_constant(value, replications)
    return f"{value:.3g} ± {se:.2g}"


def fmt_constant(value: float, n: int | None) -> str:
    """A figure that was ``value`` in every one of ``n`` replications, instead of "± 0":
    the exact one-sided 95 % Clopper-Pearson bound on the share of replications that would
    differ, ``1 - 0.05^(1/n)`` (none of n differed). Without ``n`` it says only that the
    figure did not vary."""
    if n is None or n <= 0:
        return f"{value:.3g} (the same in every replication)"
    differ = 1.0 - float(clopper_pearson_lower(n, n, 1 - BOUND_LEVEL))
    return f"{value:.3g} (in all {n:,} replications; another value in < {differ:.2g} at 95 %)"


def _optional_number(field: str, x: Any) -> float | None:
    if x is None:
        return None
    if not is_number(x):
        raise ParameterError(field, x, "expected a number or None")
    return float(x)


@dataclass(frozen=True)
class Metric:
    """One figure: ``value``, its standard error ``se`` and its ``exact`` counterpart.

    ``n`` (keyword, optional): the independent units behind a simulated share, used only
    by ``fmt`` for the bound at 0 or 1. ``diff_se`` (keyword, optional): when ``exact`` is
    an expectation given what each replication drew (``simulators.scenarios.loop_lift``),
    the SE of the mean paired difference ``value - exact``; ``z`` divides by it, not by
    ``se`` (which also holds the spread of what the replications drew).
    """

    value: float
    se: float | None = None
    exact: float | None = None
    n: int | None = None
    diff_se: float | None = None

    def __post_init__(self) -> None:
        if not is_number(self.value):
            raise ParameterError("value", self.value, "expected a number")
        object.__setattr__(self, "value", float(self.value))
        se = _optional_number("se", self.se)
        if se is not None and se < 0:
            raise ParameterError("se", se, "expected a number >= 0, NaN or None")
        object.__setattr__(self, "se", se)
        object.__setattr__(self, "exact", _optional_number("exact", self.exact))
        if self.n is not None:  # a numpy integer counts; a bool does not
            object.__setattr__(self, "n", check_int("n", self.n, minimum=1))
        diff_se = _optional_number("diff_se", self.diff_se)
        if diff_se is not None and diff_se < 0:
            raise ParameterError("diff_se", diff_se, "expected a number >= 0, NaN or None")
        object.__setattr__(self, "diff_se", diff_se)

    @property
    def z_se(self) -> float | None:
        """The SE ``z`` divides by: ``diff_se`` when it is a number, else ``se``."""
        if self.diff_se is not None and not math.isnan(self.diff_se):
            return self.diff_se
        return self.se

    @property
    def z(self) -> float | None:
        """``(value - exact) / z_se`` (``se``, or the paired ``diff_se`` where given); None
        without both. SE 0: 0 when ``value`` equals ``exact`` up to ``ROUNDING`` (``|d| <=
        ROUNDING (1 + |exact|)``, as ``numpy.isclose``), else signed infinity. NaN when the
        SE is NaN (fewer than two replications)."""
        se = self.z_se
        if se is None or self.exact is None:
            return None
        if se > 0 or math.isnan(se):
            return (self.value - self.exact) / se
        d = self.value - self.exact  # NaN for equal infinities, which agree
        if self.value == self.exact or (
            math.isfinite(d) and abs(d) <= ROUNDING * (1.0 + abs(self.exact))
        ):
            return 0.0
        return d if math.isnan(d) else math.copysign(math.inf, d)  # NaN in, NaN out

    def within(self, k: float = 4.0) -> bool:
        """Whether the simulated value agrees with the exact one: ``|z| <= k``. A figure
        without an SE or an exact value, or with a NaN among them, cannot be judged: that
        raises ``ParameterError`` naming the field, rather than answering False."""
        if not is_number(k) or not k > 0:  # NaN fails ``k > 0``
            raise ParameterError("k", k, "expected a number > 0")
        z = self.z
        if z is None:
            missing = "se" if self.z_se is None else "exact"
            raise ParameterError(missing, None, "a number (within needs an SE and an exact)")
        if math.isnan(z):  # a NaN field, or infinities on both sides
            paired = self.diff_se is not None and not math.isnan(self.diff_se)
            named = {"value": self.value, "diff_se" if paired else "se": self.z_se}
            named["exact"] = self.exact
            field, bad = next(((f, v) for f, v in named.items() if math.isnan(v)), ("value", z))
            raise ParameterError(field, bad, "a finite number (within cannot judge NaN)")
        return abs(z) <= k

    def fmt(self) -> str:
        """``0.123 ± 0.004`` (see the module's ``fmt``)."""
        return fmt(self.value, self.se, self.n)

    def __str__(self) -> str:
        return self.fmt()

    @classmethod
    def from_flat(cls, metrics: Mapping[str, float], name: str) -> Metric:
        """The metric ``name`` of a flat dict: ``metrics[name]``, ``name_se``,
        ``name_exact`` and the paired ``name_diff_se`` (absent keys are None)."""
        if name not in metrics:
            raise ParameterError("name", name, f"one of {sorted(metric_names(metrics))}")
        return cls(
            metrics[name],
            metrics.get(f"{name}_se"),
            metrics.get(f"{name}_exact"),
            diff_se=metrics.get(f"{name}_diff_se"),
        )


def metric_names(metrics: Mapping[str, float]) -> list[str]:
    """The metrics of a flat dict, in its order: every key but ``x_se`` and ``x_exact``
    where ``x`` is itself a key."""
    return [
        k
        for k in metrics
        if not any(k.endswith(s) and k.removesuffix(s) in metrics for s in SUFFIXES)
    ]


def metrics_of(metrics: Mapping[str, float]) -> dict[str, Metric]:
    """A flat dict (``x``, ``x_se``, ``x_exact``) as ``{x: Metric}``."""
    return {name: Metric.from_flat(metrics, name) for name in metric_names(metrics)}
