"""What a designed flat rule must achieve (``flat.design``): the helpful and harmful
procedures' lifts over the base success rate, the shares to keep and to exclude, and the
horizon in sessions."""

from __future__ import annotations

from dataclasses import dataclass

from procmem_core.errors import ParameterError, check_int, check_number, check_probability


@dataclass(frozen=True)
class RuleTargets:
    """What the rule must achieve (checked before any work: one ``ParameterError``)."""

    helpful_lift: float = 0.10
    harmful_lift: float = -0.10
    base: float = 0.6
    keep: float = 0.9
    exclude: float = 0.9
    within: int = 30

    def __post_init__(self) -> None:
        base = check_probability("base", self.base)
        for name in ("helpful_lift", "harmful_lift"):
            lift = check_number(name, getattr(self, name), minimum=-1.0, maximum=1.0)
            if not 0.0 <= base + lift <= 1.0:
                raise ParameterError(name, lift, f"base + {name} in [0, 1] (base={base:g})")
        if not self.harmful_lift < self.helpful_lift:
            raise ParameterError(
                "harmful_lift", self.harmful_lift, f"below helpful_lift ({self.helpful_lift:g})"
            )
        check_probability("keep", self.keep, open_low=True, open_high=True)
        check_probability("exclude", self.exclude, open_low=True, open_high=True)
        check_int("within", self.within, minimum=1)

    @property
    def p_helpful(self) -> float:
        return self.base + self.helpful_lift

    @property
    def p_harmful(self) -> float:
        return self.base + self.harmful_lift

    def describe(self) -> str:
        return (
            f"keep >= {self.keep:g} of helpful ({self.helpful_lift:+g}) and exclude >= "
            f"{self.exclude:g} of harmful ({self.harmful_lift:+g}) procedures within "
            f"{self.within} sessions at base {self.base:g}"
        )
