"""What a fixed ledger alone can support: the one-sample bound on any gate's power
(``ledger_power_bound``) and the ledger size it needs (``ledger_needed``)."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
from scipy import stats

if TYPE_CHECKING:
    from procmem_core.gates.question import DesignQuestion

LEDGER_LIMIT = 20_000


def ledger_power_bound(ledger: int, p0: float, drop: float, alpha: float) -> float:
    """Power of the most powerful level-``alpha`` test of the ledger alone: with the
    revision's rate ``r = p0 - drop`` known, H0 "the prior's rate is r" against H1 "it is
    p0" from ``S ~ Binomial(ledger, .)``; reject for large ``S``, randomized at the edge
    (Neyman-Pearson). No gate on a fixed ledger of this size has more power. Remembered
    per argument: a design question asks it of every fixed-ledger family's note."""
    return _power_bound(int(ledger), float(p0), float(drop), float(alpha))


@lru_cache(maxsize=4096)
def _power_bound(ledger: int, p0: float, drop: float, alpha: float) -> float:
    r = p0 - drop
    s = np.arange(ledger + 2)
    tail = stats.binom.sf(s - 1, ledger, r)  # P_r(S >= s)
    c = int(np.flatnonzero(tail <= alpha)[0])
    gamma = 0.0 if c == 0 else (alpha - tail[c]) / stats.binom.pmf(c - 1, ledger, r)
    return float(stats.binom.sf(c - 1, ledger, p0) + gamma * stats.binom.pmf(c - 1, ledger, p0))


def ledger_needed(q: DesignQuestion, grid: np.ndarray) -> int | None:
    """The smallest ledger whose one-sample bound reaches ``1 - beta`` over the grid."""

    def enough(n: int) -> bool:
        return min(ledger_power_bound(n, p, q.min_drop, q.alpha) for p in grid) >= 1 - q.beta

    hi = max(q.ledger, 1)
    while not enough(hi):
        hi *= 2
        if hi > LEDGER_LIMIT:
            return None
    lo = max(q.ledger, 1) - 1 if hi == max(q.ledger, 1) else hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi
