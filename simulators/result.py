"""What every scenario returns: flat metrics with standard errors, and tables."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from procmem_core.metric import Metric, metrics_of

FRAME_COLUMNS = ("metric", "value", "se", "exact", "z")


@dataclass
class ScenarioResult:
    """``metrics``: flat ``{name: float}``; every simulated rate ``x`` has ``x_se`` beside it.

    ``tables``: ``{name: DataFrame}`` (per-replication decisions, A/B arms, trajectories).
    ``params``: the scenario's params by dotted config key (``Scenario.logged_params``),
    which ``reports.source.Sweep.from_results`` lays out as a logged run's.
    """

    scenario: str
    metrics: dict[str, float] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)

    def metric(self, name: str) -> Metric:
        """The metric ``name`` as a record: its value, ``name_se`` and ``name_exact``."""
        return Metric.from_flat(self.metrics, name)

    def frame(self) -> pd.DataFrame:
        """One row per metric (``x_se``/``x_exact`` folded into their ``x``), columns
        ``metric, value, se, exact, z`` with ``z = (value - exact) / se`` (NaN where
        there is no SE or no exact value; ``Metric.z``), or over the paired ``x_diff_se``
        where the run logs one (an exact value given what each replication drew, as the
        report's agreement table reads it). ``metrics`` is unchanged."""
        rows = [(name, m.value, m.se, m.exact, m.z) for name, m in metrics_of(self.metrics).items()]
        frame = pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
        return frame.astype({c: float for c in FRAME_COLUMNS[1:]})

    def _repr_html_(self) -> str:
        """A notebook's view: the metrics frame, then each table's name and shape."""
        tables = "".join(
            f"<li>{html.escape(name)}: {len(t)} rows x {t.shape[1]} columns</li>"
            for name, t in self.tables.items()
        )
        caption = f"<p><b>{html.escape(self.scenario)}</b></p>"
        return caption + self.frame().to_html(index=False) + (f"<ul>{tables}</ul>" * bool(tables))

    def add_rate(self, name: str, hits: float, total: float) -> None:
        """Add a rate ``r = hits / total`` and its Monte Carlo SE ``sqrt(r (1 - r) / total)``."""
        r, se = rate_and_se(hits, total)
        self.metrics[name] = r
        self.metrics[f"{name}_se"] = se

    def boundary_se(self, name: str, n: float, exact: float | None = None) -> None:
        """A simulated rate at 0 or 1 has a plug-in SE of 0 (the Wald SE's failure at the
        boundary; Agresti and Coull, Am. Stat. 52, 1998). Beside its exact value ``e``, log
        the binomial SE at that value, ``sqrt(e (1 - e) / n)`` over ``n`` independent
        trials, so the two can be compared (the score test's SE); other rates keep theirs.
        ``exact``: the value when the result does not log it as ``<name>_exact``."""
        exact = self.metrics.get(f"{name}_exact") if exact is None else exact
        if exact is not None and self.metrics.get(f"{name}_se") == 0 and n > 0:
            self.metrics[f"{name}_se"] = math.sqrt(exact * (1.0 - exact) / float(n))

    def add_mean(self, name: str, values: np.ndarray) -> None:
        """Add a sample mean and its standard error ``sd / sqrt(n)`` (NaN when n < 2)."""
        m, se = mean_and_se(values)
        self.metrics[name] = m
        self.metrics[f"{name}_se"] = se

    def add_ratio(self, name: str, numerators: np.ndarray, denominators: np.ndarray) -> None:
        """Add a pooled ratio ``sum(num) / sum(den)`` over independent clusters, with its SE.

        Use it when the units inside one replication are correlated (sessions of one
        user, procedures of one library): the replication is the independent cluster.
        """
        r, se = ratio_and_se(numerators, denominators)
        self.metrics[name] = r
        self.metrics[f"{name}_se"] = se


def rate_and_se(hits: float, total: float) -> tuple[float, float]:
    """A simulated rate and its Monte Carlo standard error ``sqrt(r (1 - r) / R)``."""
    if total <= 0:
        return float("nan"), float("nan")
    r = float(hits) / float(total)
    return r, math.sqrt(max(r * (1.0 - r), 0.0) / float(total))


def mean_and_se(values: np.ndarray) -> tuple[float, float]:
    """Sample mean and its standard error; NaN where undefined."""
    v = np.asarray(values, dtype=float)
    n = v.size
    if n == 0:
        return float("nan"), float("nan")
    m = float(v.mean())
    se = float(v.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan")
    return m, se


def ratio_and_se(numerators: np.ndarray, denominators: np.ndarray) -> tuple[float, float]:
    """Ratio estimator ``r = sum(x) / sum(y)`` over n independent clusters and its SE.

    Linearization (delta method): ``se = sqrt(n / (n - 1) * sum((x_i - r y_i)^2)) / sum(y)``
    (Cochran, Sampling Techniques, 1977, sec. 6.4). With every ``y_i = 1`` it is the
    usual SE of a mean.
    """
    x = np.asarray(numerators, dtype=float).ravel()
    y = np.asarray(denominators, dtype=float).ravel()
    n = x.size
    total = float(y.sum())
    if n == 0 or total <= 0:
        return float("nan"), float("nan")
    r = float(x.sum()) / total
    if n < 2:
        return r, float("nan")
    resid = x - r * y
    return r, math.sqrt(n / (n - 1) * float(resid @ resid)) / total


class RatioTally:
    """Running cluster sums for ``size`` pooled ratios ``sum(x) / sum(y)`` at once.

    For a ratio per session (or per kind) whose clusters arrive chunk by chunk: ``add``
    the clusters' ``x`` and ``y`` for slot ``i``; ``rates`` returns every ratio and its
    linearization SE (as ``ratio_and_se``) without keeping the clusters.
    """

    def __init__(self, size: int) -> None:
        self.n = np.zeros(size)
        self.sx = np.zeros(size)
        self.sy = np.zeros(size)
        self.sxx = np.zeros(size)
        self.sxy = np.zeros(size)
        self.syy = np.zeros(size)

    def add(self, i: int, x: np.ndarray, y: np.ndarray | float) -> None:
        """Add the clusters ``x`` (array) and ``y`` (array, or one number for all)."""
        x = np.asarray(x, dtype=float)
        sx = x.sum()
        self.n[i] += x.size
        self.sx[i] += sx
        self.sxx[i] += np.einsum("i,i->", x, x)  # not BLAS: no thread stalls on busy cores
        if np.ndim(y) == 0:
            y = float(y)
            self.sy[i] += y * x.size
            self.sxy[i] += y * sx
            self.syy[i] += y * y * x.size
            return
        y = np.asarray(y, dtype=float)
        self.sy[i] += y.sum()
        self.sxy[i] += np.einsum("i,i->", x, y)
        self.syy[i] += np.einsum("i,i->", y, y)

    def merge(self, other: RatioTally) -> None:
        """Add another tally's sums (a chunk's, tallied on its own): exactly the sums one
        tally would hold, when each chunk added once per slot and chunks merge in order."""
        for name in ("n", "sx", "sy", "sxx", "sxy", "syy"):
            getattr(self, name)[:] += getattr(other, name)

    def rates(self) -> tuple[np.ndarray, np.ndarray]:
        """``(ratio, se)`` arrays; NaN where ``sum(y) = 0`` (SE NaN with < 2 clusters)."""
        ok = self.sy > 0
        r = np.divide(self.sx, self.sy, out=np.full_like(self.sx, np.nan), where=ok)
        ss = np.maximum(self.sxx - 2 * r * self.sxy + r * r * self.syy, 0.0)
        factor = np.divide(self.n, self.n - 1, out=np.full_like(self.n, np.nan), where=self.n > 1)
        se = np.divide(np.sqrt(factor * ss), self.sy, out=np.full_like(self.sx, np.nan), where=ok)
        return r, se
