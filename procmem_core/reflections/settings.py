"""The distill worker's settings (seed: ``LOOM_REFLECTION_DISTILL_*``), as config values
or from the environment (``PROCMEM_REFLECTION_DISTILL_*`` or the seed's
``LOOM_REFLECTION_DISTILL_*``; one setting under both names with different values is
refused naming both, ``procmem_core.env``). No model client is loaded here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace

from procmem_core.env import env_flag, env_float, env_int, env_text, from_env
from procmem_core.errors import check_bool, check_choice, check_int, check_probability, check_text

ENV_PREFIX = "PROCMEM_REFLECTION_DISTILL_"
MATCH_ON = ("text", "situation")
"""What pairing embeds: the session's text (the seed's reading) or its situation alone."""


@dataclass(frozen=True)
class DistillSettings:
    """The worker's settings (config values or ``PROCMEM_REFLECTION_DISTILL_*``)."""

    enabled: bool = False
    max_pairs: int = 10
    similarity_floor: float = 0.5
    min_confidence: float = 0.8
    model: str | None = None
    match_on: str = "text"

    def __post_init__(self) -> None:
        check_bool("enabled", self.enabled)
        check_choice("match_on", self.match_on, MATCH_ON)
        check_int("max_pairs", self.max_pairs, minimum=1)
        check_probability("similarity_floor", self.similarity_floor)
        check_probability("min_confidence", self.min_confidence)
        if self.model is not None:
            check_text("model", self.model)

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, base: DistillSettings | None = None
    ) -> DistillSettings:
        """``base`` (the defaults) with every ``PROCMEM_REFLECTION_DISTILL_<FIELD>`` (or
        ``LOOM_REFLECTION_DISTILL_<FIELD>``) set in ``environ`` (``os.environ`` by
        default) applied: ENABLED (true/false/1/0), MAX_PAIRS, SIMILARITY_FLOOR,
        MIN_CONFIDENCE, MODEL, MATCH_ON."""
        parsers = {
            "enabled": env_flag,
            "max_pairs": env_int,
            "similarity_floor": env_float,
            "min_confidence": env_float,
            "model": env_text,
            "match_on": env_text,
        }
        names = {f: (ENV_PREFIX + f.upper(), parse) for f, parse in parsers.items()}
        changes = from_env(os.environ if environ is None else environ, names)
        return replace(base or cls(), **changes)
