"""Evidence behind a recommendation: differences against the seeds' defaults and their noise.

A difference between two simulated figures is called larger than the noise when
``|a - b| > NOISE_Z * sqrt(se_a^2 + se_b^2)`` (about a two-sided 95 % test of equal
means for independent Monte Carlo estimates). An exact figure has standard error 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from procmem_core.metric import fmt
from reports.errors import ReportError

NOISE_Z = 2.0


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


def fmt_share(rate: float, n: int) -> str:
    """A simulated share over ``n`` independent units, ``r ± sqrt(r (1 - r) / n)``; at
    exactly 0 or 1 (plug-in SE 0: every unit agreed) its exact one-sided 95 %
    Clopper-Pearson bound instead (``1 - 0.05^(1/n)`` for none, ``0.05^(1/n)`` for all;
    ``procmem_core.proportions``), so four of four never reads as certainty."""
    if rate is None or math.isnan(rate) or n <= 0:
        return "n/a"
    return fmt(rate, math.sqrt(rate * (1 - rate) / n), n)


def fmt_exact(value: float, digits: int = 3) -> str:
    """An exact share to ``digits`` decimals, with more decimals (up to 9) when rounding
    would print a value strictly between 0 and 1 as 0 or 1: 0.99995 stays 0.99995, never
    "1.000", which reads as certainty."""
    text = f"{value:.{digits}f}"
    while 0.0 < value < 1.0 and float(text) in (0.0, 1.0) and digits < 9:
        digits += 1
        text = f"{value:.{digits}f}"
    return text


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
    return fmt(float(row[metric]), se_of(row, metric), replications=replications_of(row))


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
