"""Trust statuses of a graph procedure (seed: loom-procedures.txt, "Matching").

``trust_status``, ``meets_template_bar`` and ``should_quarantine`` are vectorized, so the
simulators apply the store's own rules to arrays of procedures.

- template: at least 5 successful runs, a success rate of at least 0.8, and a topology
  evolve no longer changes;
- exercised: at least one recorded run; authored: registered and never run;
- candidate: machine-mined and never run;
- quarantined: its last ``strike_limit`` runs all failed; the next success lifts it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

STATUSES = ("authored", "candidate", "exercised", "template", "quarantined")
"""Trust statuses; ``trust_status`` returns indices into this tuple."""
AUTHORED, CANDIDATE, EXERCISED, TEMPLATE, QUARANTINED = range(5)

TEMPLATE_MIN_SUCCESSES = 5
TEMPLATE_MIN_RATE = 0.8


def trust_status(
    runs: ArrayLike, candidate: ArrayLike, template: ArrayLike, quarantined: ArrayLike
) -> np.ndarray | int:
    """Status code (index into ``STATUSES``): quarantined > template > exercised (runs > 0)
    > candidate (machine-mined, never run) > authored (registered, never run)."""
    never_run = np.where(candidate, CANDIDATE, AUTHORED)
    out = np.where(template, TEMPLATE, np.where(np.asarray(runs) > 0, EXERCISED, never_run))
    out = np.where(quarantined, QUARANTINED, out)
    return int(out) if out.ndim == 0 else out


def meets_template_bar(
    successes: ArrayLike, runs: ArrayLike, topology_stable: ArrayLike
) -> np.ndarray | bool:
    """Template bar: ``successes >= 5``, ``successes / runs >= 0.8`` and a stable topology."""
    s = np.asarray(successes, dtype=float)
    n = np.asarray(runs, dtype=float)
    rate_ok = s >= TEMPLATE_MIN_RATE * n  # = rate >= 0.8 without dividing by zero
    out = (s >= TEMPLATE_MIN_SUCCESSES) & rate_ok & np.asarray(topology_stable, bool)
    return bool(out) if out.ndim == 0 else out


def should_quarantine(failure_streak: ArrayLike, strike_limit: int) -> np.ndarray | bool:
    """Quarantine when the last ``strike_limit`` runs all failed; ``strike_limit = 0`` is off."""
    out = (strike_limit > 0) & (np.asarray(failure_streak) >= max(strike_limit, 1))
    return bool(out) if np.ndim(out) == 0 else out
