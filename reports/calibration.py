"""Are a sweep's standard errors right? The z-scores of its simulated-vs-exact pairs.

With the right SE, ``z = (simulated - exact) / SE`` is close to standard normal over
many pairs (docs/statistics.md, "Monte Carlo hygiene"), so:

- the variance ``V = mean(z^2)`` (about 0, the exact value's mean) is near 1: ``n V`` is
  chi-square with ``n`` degrees of freedom, so the 99 % interval for the ratio of the true
  variance to 1 is ``[n V / chi2_{0.995, n}, n V / chi2_{0.005, n}]``; an interval above
  1 means the SEs are too small (a dependence ignored: several figures from one
  replication, users seen many times), below 1 too large;
- the counts beyond ``|z| > 2`` and ``|z| > 3`` are Binomial(n, P(|N(0,1)| > c)); each is
  checked against its central 99 % range.

A z whose SE is estimated from few replications (the loop's paired lift: ``x_diff_n``) is
Student's t, not normal; it is read on the normal scale (``normal_scale``) first.

Pairs with SE 0 (no sampling noise) that match their exact value carry no information
and are left out; one that does not match has ``|z| = inf`` and counts in both tails.
A pair that repeats another pair of the same run, as the same figure or its complement
(simulated, exact and SE equal, or simulated and exact both summing to 1 with the same
SE), has the other's ``|z|`` and is counted once (``repeats``): the gates'
``missed_regression_rate`` is ``1 - revert_rate_alt``, and in the quickstart's worlds the
loop's ``naive_lift`` is its ``lift`` and the reflections' ``opposite_pair_rate`` its
``lesson_helpful_rate``. A calibration block's pair is never read as a repeat: it comes
from replications of its own, so two blocks at one horizon that happen to draw the same
count are two pieces of evidence.
Other pairs from one run share replications (a gate's false-revert rate and its mean runs
under the null), so the interval is a guide, not a test at 1 %; the calibration blocks
(``simulators.calibration_blocks``: the flat-rule, explore_tradeoff and reflections_study
presets) each come from replications of their own and are independent of every other pair.
Below ``MIN_PAIRS`` pairs the interval is too wide to tell standard errors 1.25 times too
small from right ones (issue 30 asks for at least 100), so a sweep with fewer says so
instead of calling its standard errors fit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from procmem_core.logged import parse_name
from reports.errors import ReportError

LEVEL = 0.99
"""Coverage of the variance-ratio interval and of the tail counts' ranges."""
TAILS = (2.0, 3.0)
MIN_PAIRS = 100
"""Fewest pairs from which a passing check is read as "the standard errors fit"."""


@dataclass(frozen=True)
class Tail:
    """How many ``|z| > cut`` against Binomial(n, p) with ``p = 2 (1 - Phi(cut))``."""

    cut: float
    count: int
    expected: float
    low: int
    high: int

    @property
    def ok(self) -> bool:
        return self.low <= self.count <= self.high

    def describe(self) -> str:
        """The count against its expectation (one decimal; two significant digits below
        0.05, so a positive expectation never reads as "expected 0.0")."""
        expected = f"{self.expected:.2g}" if 0 < self.expected < 0.05 else f"{self.expected:.1f}"
        return (
            f"{self.count} beyond |z| > {self.cut:g} (expected {expected}, "
            f"{LEVEL * 100:g} % range {self.low} to {self.high})"
        )


@dataclass(frozen=True)
class Calibration:
    """The z-scores' variance with its chi-square interval, and their tail counts."""

    pairs: int
    variance: float
    low: float
    high: float
    tails: tuple[Tail, ...]
    repeats: int = 0
    """Pairs left out as a repeat (x or 1 - x) of a counted pair of the same run."""

    @property
    def ok(self) -> bool:
        """The variance interval holds 1 and every tail count is within its range."""
        return self.low <= 1.0 <= self.high and all(t.ok for t in self.tails)

    @property
    def enough(self) -> bool:
        """At least ``MIN_PAIRS`` pairs: a passing check then says the SEs fit."""
        return self.pairs >= MIN_PAIRS

    def describe(self) -> str:
        """One sentence: the variance, its interval, the tails, and what they say."""
        if self.ok and not self.enough:
            verdict = (
                f"consistent with standard normal z-scores, but {self.pairs} pairs are too "
                f"few to tell whether the standard errors fit (the check needs at least "
                f"{MIN_PAIRS})"
            )
        elif self.ok:
            verdict = "consistent with standard normal z-scores, so the standard errors fit"
        elif self.low > 1.0 or not all(t.count <= t.high for t in self.tails):
            verdict = "the standard errors look too small (a dependence they ignore)"
        else:
            verdict = "the standard errors look too large"
        tails = " and ".join(t.describe() for t in self.tails)
        verb = "repeats" if self.repeats == 1 else "repeat"
        twice = f" (not counting {self.repeats} that {verb} another as x or 1 - x)" * (
            self.repeats > 0
        )
        return (
            f"Over {self.pairs} simulated-vs-exact pairs{twice} the z-scores have variance "
            f"{self.variance:.2f} ({LEVEL * 100:g} % interval {self.low:.2f} to {self.high:.2f}, "
            f"1 if the standard errors are right), with {tails}; {verdict}."
        )


def normal_scale(z: float, df: float) -> float:
    """A t-score on the normal scale: ``sign(z) Phi^-1(1 - T_df(|z|))`` (the same tail
    probability), ``z`` itself when ``df`` is NaN (an SE known or estimated from many
    replications). A z whose SE is estimated from ``n`` replications is Student's t with
    ``n - 1`` degrees of freedom (for normal per-replication figures), whose variance
    ``df / (df - 2)`` exceeds 1 (1.4 at 8 replications, infinite at 3 or 4), so read as it
    stands it would fail a check that assumes standard normal z-scores."""
    if np.isnan(df) or np.isnan(z) or np.isinf(z):
        return z
    return float(np.copysign(stats.norm.isf(stats.t.sf(abs(z), df)), z))


def tail(z: np.ndarray, cut: float) -> Tail:
    """The count of ``|z| > cut`` against its Binomial expectation and central range."""
    n = int(z.size)
    p = float(2.0 * stats.norm.sf(cut))
    a = (1.0 - LEVEL) / 2.0
    low, high = stats.binom.ppf([a, 1.0 - a], n, p)
    return Tail(cut, int((np.abs(z) > cut).sum()), n * p, int(low), int(high))


def repeats(pairs: pd.DataFrame) -> np.ndarray:
    """True for each pair that repeats an earlier pair of the same ``run``: equal SEs, and
    ``simulated`` and ``exact`` both equal or both summing to 1 (to 1e-12); all False
    without those columns. Calibration blocks (``metric`` named as
    ``simulators.calibration_blocks`` names them) are independent by construction and
    left as they are."""
    out = np.zeros(len(pairs), dtype=bool)
    if not {"run", "simulated", "exact", "se"} <= set(pairs.columns):
        return out
    sim, ex, se = (pairs[c].to_numpy(dtype=float) for c in ("simulated", "exact", "se"))
    names = pairs["metric"] if "metric" in pairs.columns else [""] * len(pairs)
    block = np.array([parse_name(str(m)) is not None for m in names], dtype=bool)
    for rows in pairs.groupby("run", sort=False).indices.values():
        rows = rows[~block[rows]]
        for j, b in enumerate(rows):
            for a in rows[:j]:
                same = (sim[a] - sim[b], ex[a] - ex[b])
                complement = (sim[a] + sim[b] - 1.0, ex[a] + ex[b] - 1.0)
                if (
                    not out[a]
                    and abs(se[a] - se[b]) <= 1e-12
                    and any(max(abs(d) for d in diffs) <= 1e-12 for diffs in (same, complement))
                ):
                    out[b] = True
                    break
    return out


def calibration(pairs: pd.DataFrame) -> Calibration | None:
    """The calibration of the z-scores of ``pairs`` (columns ``z`` and ``se``, as
    ``reports.summary.agreement_table``, whose ``normal z`` is read when present; with
    ``run``, ``simulated`` and ``exact`` a
    repeat of another pair is counted once); None with no informative pair."""
    if not isinstance(pairs, pd.DataFrame):
        raise ReportError(f"calibration: pairs is {type(pairs).__name__}: expected a DataFrame "
                          "with columns 'z' and 'se' (agreement_table's)")  # fmt: skip
    if not {"z", "se"} <= set(pairs.columns):
        raise ReportError(f"calibration: pairs has columns {sorted(map(str, pairs.columns))}: "
                          "expected 'z' and 'se' (agreement_table's)")  # fmt: skip
    z = pairs["normal z" if "normal z" in pairs else "z"].to_numpy(dtype=float)
    se = pairs["se"].to_numpy(dtype=float)
    informative = ~np.isnan(z) & ((se > 0) | np.isinf(z))
    twice = repeats(pairs) & informative
    z = z[informative & ~twice]
    n = int(z.size)
    if n == 0:
        return None
    v = float(np.mean(z**2))
    a = (1.0 - LEVEL) / 2.0
    hi_q, lo_q = stats.chi2.ppf([1.0 - a, a], n)
    tails = tuple(tail(z, c) for c in TAILS)
    return Calibration(n, v, n * v / hi_q, n * v / lo_q, tails, int(twice.sum()))


__all__ = ["MIN_PAIRS", "Calibration", "Tail", "calibration", "normal_scale", "repeats", "tail"]
