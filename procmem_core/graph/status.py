"""Trust statuses of a graph procedure (seed: loom-procedures.txt, "Matching").

``trust_status``, ``meets_template_bar`` and ``should_quarantine`` take scalars or arrays,
so the simulators apply the store's own rules to arrays of procedures; a scalar call (the
store's, once per run or match) skips numpy but evaluates the same rule: the status is
one precedence (``_precedence``), which a scalar call asks and the arrays' table
(``STATUS_TABLE``) is built from, and the template bar and quarantine are one expression
each, evaluated on Python numbers or on arrays.

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


def _precedence(quarantined: bool, template: bool, ran: bool, candidate: bool) -> int:
    """quarantined > template > exercised (runs > 0) > candidate (machine-mined, never
    run) > authored (registered, never run)."""
    if quarantined:
        return QUARANTINED
    if template:
        return TEMPLATE
    if ran:
        return EXERCISED
    return CANDIDATE if candidate else AUTHORED


_FLAGS = (False, True)
STATUS_TABLE = np.array(
    [[[[_precedence(q, t, r, c) for c in _FLAGS] for r in _FLAGS] for t in _FLAGS] for q in _FLAGS],
    dtype=np.int64,
)
"""``STATUS_TABLE[quarantined, template, runs > 0, candidate]``: the status code."""


_SCALAR_TYPES = (int, float, np.generic)  # bool is an int


def _scalars(*values: object) -> bool:
    return all(isinstance(v, _SCALAR_TYPES) for v in values)


def status_code(runs: int, candidate: bool, template: bool, quarantined: bool) -> int:
    """``trust_status`` of one procedure: the precedence ``STATUS_TABLE`` is built from,
    asked directly (no numpy, no table)."""
    return _precedence(quarantined, template, runs > 0, candidate)


def trust_status(
    runs: ArrayLike, candidate: ArrayLike, template: ArrayLike, quarantined: ArrayLike
) -> np.ndarray | int:
    """Status code (index into ``STATUSES``) by ``STATUS_TABLE``: quarantined > template >
    exercised (runs > 0) > candidate (machine-mined, never run) > authored."""
    if _scalars(runs, candidate, template, quarantined):
        return status_code(runs, candidate, template, quarantined)
    flags = (quarantined, template, np.asarray(runs) > 0, candidate)
    out = STATUS_TABLE[tuple(np.asarray(f, dtype=bool).astype(np.intp) for f in flags)]
    return int(out) if np.ndim(out) == 0 else out


def _template_bar(s: ArrayLike, n: ArrayLike, stable: ArrayLike) -> ArrayLike:
    # s >= 0.8 n is rate >= 0.8 without dividing by zero
    return (s >= TEMPLATE_MIN_SUCCESSES) & (s >= TEMPLATE_MIN_RATE * n) & stable


def meets_template_bar(
    successes: ArrayLike, runs: ArrayLike, topology_stable: ArrayLike
) -> np.ndarray | bool:
    """Template bar: ``successes >= 5``, ``successes / runs >= 0.8`` and a stable topology."""
    if _scalars(successes, runs, topology_stable):
        return bool(_template_bar(float(successes), float(runs), bool(topology_stable)))
    out = _template_bar(
        np.asarray(successes, dtype=float),
        np.asarray(runs, dtype=float),
        np.asarray(topology_stable, bool),
    )
    return bool(out) if out.ndim == 0 else out


def _quarantine(streak: ArrayLike, strike_limit: int) -> ArrayLike:
    return (strike_limit > 0) & (streak >= max(strike_limit, 1))


def should_quarantine(failure_streak: ArrayLike, strike_limit: int) -> np.ndarray | bool:
    """Quarantine when the last ``strike_limit`` runs all failed; ``strike_limit = 0`` is off."""
    if _scalars(failure_streak):
        return bool(_quarantine(failure_streak, strike_limit))
    out = _quarantine(np.asarray(failure_streak), strike_limit)
    return bool(out) if np.ndim(out) == 0 else out
