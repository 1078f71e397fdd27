"""Evidence behind a recommendation: differences against the seeds' defaults and their noise.

A difference between two simulated figures is called larger than the noise when
``|a - b| > NOISE_Z * sqrt(se_a^2 + se_b^2)`` (about a two-sided 95 % test of equal
means for independent Monte Carlo estimates). An exact figure has standard error 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from procmem_core.proportions import clopper_pearson_lower
from reports.errors import ReportError

NOISE_Z = 2.0
LEVEL = 0.95


@dataclass(frozen=True)
class MetricComparison:
    """One metric of the recommended row beside the same metric of the default row."""

    metric: str
    pick: float
    pick_se: float
    default: float
    default_se: float

    @property
    def difference(self) -> float:
        """``pick - default``."""
        return self.pick - self.default

    @property
    def noise(self) -> float:
        """Standard error of the difference, ``sqrt(se_pick^2 + se_default^2)`` (NaN-safe)."""
        a = 0.0 if math.isnan(self.pick_se) else self.pick_se
        b = 0.0 if math.isnan(self.default_se) else self.default_se
        return math.sqrt(a * a + b * b)

    @property
    def exceeds_noise(self) -> bool:
        """True when ``|difference| > NOISE_Z * noise``: the gap is more than sampling luck."""
        if math.isnan(self.difference):
            return False
        return abs(self.difference) > NOISE_Z * self.noise

    def describe(self) -> str:
        """``metric: pick ± se vs default ± se (difference d, beyond/within noise)``."""
        verdict = "beyond the noise" if self.exceeds_noise else "within the noise"
        return (
            f"{self.metric}: {fmt(self.pick, self.pick_se)} vs {fmt(self.default, self.default_se)}"
            f" (difference {self.difference:+.3g}, {verdict})"
        )


def fmt(value: float, se: float | None = None, n: int | None = None) -> str:
    """``value ± se`` with three significant digits; the SE is dropped when unknown. A
    figure with SE 0 did not vary across replications: ``fmt_constant`` (its exact bound
    over ``n`` replications) instead of "± 0"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if se is None or (isinstance(se, float) and math.isnan(se)):
        return f"{value:.3g}"
    if se == 0:
        return fmt_constant(value, n)
    return f"{value:.3g} ± {se:.2g}"


def fmt_constant(value: float, n: int | None) -> str:
    """A figure that was ``value`` in every one of ``n`` replications: the exact one-sided
    95 % Clopper-Pearson bound on the share of replications that would differ, ``1 -
    0.05^(1/n)`` (none of n differed; ``procmem_core.proportions``). Without ``n`` it
    says only that the figure did not vary."""
    if n is None or n <= 0:
        return f"{value:.3g} (the same in every replication)"
    differ = 1.0 - float(clopper_pearson_lower(n, n, 1 - LEVEL))
    return f"{value:.3g} (in all {n:,} replications; another value in < {differ:.2g} at 95 %)"


def fmt_share(rate: float, n: int) -> str:
    """A simulated share over ``n`` independent units, ``r ± sqrt(r (1 - r) / n)``; at
    exactly 0 or 1 (plug-in SE 0: every unit agreed) its exact one-sided 95 %
    Clopper-Pearson bound instead (``1 - 0.05^(1/n)`` for none, ``0.05^(1/n)`` for all;
    ``procmem_core.proportions``), so four of four never reads as certainty."""
    if rate is None or math.isnan(rate) or n <= 0:
        return "n/a"
    if rate in (0.0, 1.0):
        all_of = float(clopper_pearson_lower(n, n, 1 - LEVEL))
        if rate == 1.0:
            return f"1 (all {n:,}; > {all_of:.3g} at 95 %)"
        return f"0 (none of {n:,}; < {1 - all_of:.3g} at 95 %)"
    return f"{rate:.3g} ± {math.sqrt(rate * (1 - rate) / n):.2g}"


def se_of(row: pd.Series, metric: str) -> float:
    """The ``<metric>_se`` entry of a row, NaN when the row has none."""
    value = row.get(f"{metric}_se", float("nan"))
    return float("nan") if value is None else float(value)


def replications_of(row: pd.Series) -> int | None:
    """The row's ``params.scenario.replications``, None when it has none."""
    value = row.get("params.scenario.replications")
    try:
        n = int(float(value))
    except (TypeError, ValueError):
        return None
    return n if n > 0 else None


def fmt_metric(row: pd.Series, metric: str) -> str:
    """``fmt`` of a row's metric with its ``<metric>_se`` and the row's replications."""
    return fmt(float(row[metric]), se_of(row, metric), replications_of(row))


def compare(pick: pd.Series, default: pd.Series, metrics: tuple[str, ...]) -> tuple:
    """Compare ``pick`` and ``default`` on each metric both rows carry."""
    out = []
    for m in metrics:
        if m not in pick.index or m not in default.index:
            continue
        out.append(
            MetricComparison(
                m, float(pick[m]), se_of(pick, m), float(default[m]), se_of(default, m)
            )
        )
    return tuple(out)


def require_columns(table: pd.DataFrame, columns: tuple[str, ...], what: str) -> None:
    """Raise ``ReportError`` naming the missing columns before any work starts."""
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ReportError(
            f"{what}: table is missing columns {missing}; it has {sorted(map(str, table.columns))}"
        )
    if table.empty:
        raise ReportError(f"{what}: the table has no rows")


def worst_case(
    table: pd.DataFrame, config_col: str, higher_is_worse: dict[str, bool]
) -> pd.DataFrame:
    """One row per configuration holding, for each metric, its worst value over conditions.

    A configuration swept across several world conditions (ledger size, user
    heterogeneity, feedback noise) is judged by its worst row, so a recommendation holds
    in every condition the sweep tried. The SE travels with the row it came from.
    Other columns keep the first row's value; ``conditions`` counts the rows merged.
    """
    require_columns(table, (config_col, *higher_is_worse), "worst_case")
    rows = []
    for label, group in table.groupby(config_col, sort=True):
        out = group.iloc[0].to_dict()
        out["conditions"] = len(group)
        for metric, worse_high in higher_is_worse.items():
            values = group[metric].astype(float)
            if values.isna().all():
                continue
            idx = values.idxmax() if worse_high else values.idxmin()
            out[metric] = float(group.at[idx, metric])
            if f"{metric}_se" in group.columns:
                out[f"{metric}_se"] = float(group.at[idx, f"{metric}_se"])
        out[config_col] = label
        rows.append(out)
    return pd.DataFrame(rows).reset_index(drop=True)
