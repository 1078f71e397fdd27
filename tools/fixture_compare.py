"""Compare re-computed numbers with a stored fixture, at a stated tolerance.

Why a tolerance: numpy's reductions (pairwise sums in SIMD blocks) and BLAS pick their
kernels at run time by CPU (SSE, AVX2, AVX-512), and a kernel with wider registers adds
in another order. The same double can then differ in its last one or two bits from one
CPU to another (seen: 0.003257648381867229 against 0.0032576483818672303, a relative
difference of 4e-16). Floating point promises no more across machines.

The rule (``close``):

- a float matches when ``|got - want| <= REL * max(|got|, |want|)`` with ``REL = 1e-12``,
  or both are within ``ABS = 1e-300`` of zero (only for underflow); ``REL`` is four
  thousand times the largest difference seen across CPUs (about 2.3e-16, one unit in the
  last place), and a million times smaller than the last digit any report prints;
- a value the fixture holds as a whole number (a count, a share of replications that is
  exactly 0 or 1) must be equal exactly: counts are sums of integers, the same on any CPU;
- NaN matches NaN (stored as ``None`` in JSON), strings and booleans match exactly.

On one machine the numbers stay bit-for-bit equal: ``tests/experiments`` checks that the
same config and seed give identical metrics whatever the launcher and job order.
"""

from __future__ import annotations

import math
from typing import Any

REL = 1e-12
ABS = 1e-300


def close(got: Any, want: Any) -> bool:
    """True when ``got`` matches the stored ``want`` under the rule above."""
    if want is None or got is None:
        return _nan(got) and _nan(want)
    if isinstance(want, str | bool) or isinstance(got, str | bool):
        return got == want
    g, w = float(got), float(want)
    if math.isnan(g) or math.isnan(w):
        return math.isnan(g) and math.isnan(w)
    if w.is_integer() or math.isinf(w):
        return g == w
    return abs(g - w) <= max(REL * max(abs(g), abs(w)), ABS)


def _nan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def mismatches(got: dict[str, Any], want: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """``{key: (got, want)}`` for every stored key whose value does not match."""
    return {k: (got.get(k), w) for k, w in want.items() if k not in got or not close(got[k], w)}


def column_mismatches(got: list[Any], want: list[Any]) -> list[tuple[int, Any, Any]]:
    """``[(row, got, want)]`` where a stored column differs (a length change is row -1)."""
    if len(got) != len(want):
        return [(-1, len(got), len(want))]
    return [(i, g, w) for i, (g, w) in enumerate(zip(got, want, strict=True)) if not close(g, w)]
