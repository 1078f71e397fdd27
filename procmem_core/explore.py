"""The explore rate's rule (seed: loom-procedures.txt, "Measuring whether a procedure helps").

A pack withholds its top procedure with probability epsilon, the explore rate, so the
sessions where it was withheld form a randomized control arm (docs/statistics.md,
"Explore rate: withheld vs shown"). ``withhold_top`` is that rule on one uniform draw or
an array of them; the flat and graph packers and the simulators all call it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.errors import ParameterError, check_probability


def withhold_top(u: ArrayLike, explore_rate: float) -> np.ndarray | bool:
    """Withhold the top procedure when the uniform draw ``u`` is below ``explore_rate``."""
    explore_rate = check_probability("explore_rate", explore_rate)
    if type(u) is float:  # one pack's draw: the same comparison without an array
        return u < explore_rate
    out = np.asarray(u) < explore_rate
    return bool(out) if out.ndim == 0 else out


def check_rng(rng: object, explore_rate: float) -> np.random.Generator | None:
    """A generator is required when anything is withheld; None is allowed otherwise."""
    if rng is None and explore_rate > 0:
        raise ParameterError("rng", rng, "a numpy Generator is needed when explore_rate > 0")
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise ParameterError("rng", rng, "expected a numpy.random.Generator or None")
    return rng


def draw(rng: np.random.Generator | None) -> float:
    """One uniform per pack, whether or not anything matched (1.0, never withheld, without
    a generator), so the random stream does not depend on the store's contents."""
    return float(rng.random()) if rng is not None else 1.0
