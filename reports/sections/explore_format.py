"""Numbers for reading in the explore tables and figures: 23,340 (not 2.334e+04), three
significant figures below 1,000, ``value ± SE``; and Wilson intervals for simulated
proportions, which stay in [0, 1] where ``p ± 1.96 SE`` does not."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter

from procmem_core.metric import fmt_constant
from procmem_core.proportions import wilson_interval

Z95 = 1.959963984540054


def readable(x: object, digits: int = 3) -> str:
    """``x`` for a table cell: thousands separated from 1,000 on, else ``digits``
    significant figures; "n/a" for a missing number."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if not isinstance(x, int | float | np.integer | np.floating) or isinstance(x, bool):
        return str(x)
    v = float(x)
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if v == int(v) and abs(v) < 1000:
        return f"{int(v)}"
    return f"{v:.{digits}g}"


def with_se(value: float, se: float | None, n: int | None = None) -> str:
    """``value ± se`` (the SE to two significant figures), readable; with SE 0 (the same
    in every one of ``n`` replications) its exact bound, ``procmem_core.metric.fmt_constant``."""
    if se is None or (isinstance(se, float) and math.isnan(se)):
        return readable(value)
    if se == 0:
        return fmt_constant(value, n)
    return f"{readable(value)} ± {se:.2g}"


THOUSANDS = FuncFormatter(lambda v, _: readable(v))
"""A matplotlib tick formatter that writes 23,340 rather than 2.334e+04."""


def wilson_bars(rate: pd.Series, reps: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Asymmetric error bars ``(below, above)`` of the 95 % Wilson interval of simulated
    proportions ``rate`` from ``reps`` replications each (inside [0, 1])."""
    r = rate.to_numpy(dtype=float)
    n = reps.to_numpy(dtype=float)
    low, high = wilson_interval(r * n, n, Z95)
    return np.maximum(r - low, 0.0), np.maximum(high - r, 0.0)
