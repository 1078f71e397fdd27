"""A gate's error targets and the checks of the fields every sequential gate shares.

``ErrorTargets(alpha, beta, min_drop)``: the false-revert rate a gate (or a design
question) allows, the missed-regression rate at a drop of ``min_drop`` (None: the gate
states no power target, the anytime-valid mixture gate) and that drop. The gates and the
design question (``gates.question``) validate these three fields here and nowhere else;
``check_fields`` adds the run cap (``1 <= min_runs <= max_runs``) for a gate that has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from procmem_core.display import record_html
from procmem_core.errors import ParameterError, check_int, check_probability, is_number
from procmem_core.gates.defaults import ALPHA, BETA, MIN_DROP


@dataclass(frozen=True)
class ErrorTargets:
    """What a gate promises: false revert ``<= alpha`` when nothing changed, missed
    regression ``<= beta`` at a drop of ``min_drop`` (Wald 1945's A and B need
    ``alpha + beta < 1``: ``ln B < 0 < ln A``). Each value is in (0, 1); ``beta=None``
    states no power target."""

    alpha: float = ALPHA
    beta: float | None = BETA
    min_drop: float = MIN_DROP

    def __post_init__(self) -> None:
        alpha = _rate("alpha", self.alpha)
        object.__setattr__(self, "alpha", alpha)
        if self.beta is not None:
            beta = _rate("beta", self.beta)
            if alpha + beta >= 1.0:
                raise ParameterError(
                    "alpha", (alpha, beta), "need alpha + beta < 1 (so ln B < 0 < ln A)"
                )
            object.__setattr__(self, "beta", beta)
        drop = _rate("min_drop", self.min_drop)
        object.__setattr__(self, "min_drop", drop)

    def _repr_html_(self) -> str:
        """A notebook's view: the three fields as a table."""
        return record_html(self)


def _rate(field: str, value: Any) -> float:
    """``value`` as a float in (0, 1); a string or a bool is refused, not converted."""
    if not is_number(value):
        raise ParameterError(field, value, f"a number in (0, 1), not {type(value).__name__}")
    return check_probability(field, value, open_low=True, open_high=True)


def check_runs(min_runs: Any, max_runs: Any, limit: tuple[int, str] | None = None) -> None:
    """``min_runs >= 1`` and ``max_runs >= min_runs``, both integers; with ``limit``
    ``(largest, why)``, ``max_runs <= largest`` (a family's exact analysis holds up to it)."""
    check_int("min_runs", min_runs, minimum=1)
    check_int("max_runs", max_runs, minimum=int(min_runs))
    if limit is not None and max_runs > limit[0]:
        raise ParameterError("max_runs", max_runs, f"an integer <= {limit[0]} {limit[1]}")


def targets_of(obj: Any) -> ErrorTargets | None:
    """``ErrorTargets`` of a gate's (or a question's) ``alpha``, ``beta`` (None when it
    has none) and ``min_drop`` fields; None when it has no ``alpha``: it states none."""
    if not hasattr(obj, "alpha"):
        return None
    return ErrorTargets(obj.alpha, getattr(obj, "beta", None), obj.min_drop)


def check_fields(obj: Any) -> None:
    """The fields gates and the design question share, checked here once: the error
    targets (``targets_of``), then the run cap (``check_runs``, within the class's
    ``max_runs_limit`` where it has one) when it has ``min_runs``."""
    targets_of(obj)
    if hasattr(obj, "min_runs"):
        check_runs(obj.min_runs, obj.max_runs, getattr(obj, "max_runs_limit", None))


__all__ = ["ErrorTargets", "check_fields", "check_runs", "targets_of"]
