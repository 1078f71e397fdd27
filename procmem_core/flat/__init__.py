"""The flat design (seed: notebook-procedural-memory.txt): a confidence per procedure, a
rule that moves it by outcomes, a prompt filter, the prompt, its pack and its exact fate."""

from procmem_core.flat.baseline import BaselineRule, prior_weighted_rate
from procmem_core.flat.fate import FlatFate, flat_fate
from procmem_core.flat.pack import FlatPack, pack_flat
from procmem_core.flat.posterior import PosteriorRule
from procmem_core.flat.procedure import Procedure
from procmem_core.flat.prompt import (
    BASE_PROMPT,
    DEFAULT_FILTER,
    DEFAULT_LIMIT,
    DEFAULT_THRESHOLD,
    PROCEDURES_HEADING,
    PromptFilter,
    build_system_prompt,
    prompt_order,
    shown_mask,
)
from procmem_core.flat.rule import (
    ARITHMETICS,
    DEFAULT_RULE,
    FLAT_RULES,
    GRID_DECIMALS,
    ConfidenceRule,
    FlatRule,
    StepRule,
    passes_threshold,
    snap,
)

__all__ = [
    "ARITHMETICS",
    "BASE_PROMPT",
    "DEFAULT_FILTER",
    "DEFAULT_LIMIT",
    "DEFAULT_RULE",
    "DEFAULT_THRESHOLD",
    "FLAT_RULES",
    "GRID_DECIMALS",
    "PROCEDURES_HEADING",
    "BaselineRule",
    "ConfidenceRule",
    "FlatFate",
    "FlatPack",
    "FlatRule",
    "PosteriorRule",
    "Procedure",
    "PromptFilter",
    "StepRule",
    "build_system_prompt",
    "flat_fate",
    "pack_flat",
    "passes_threshold",
    "prior_weighted_rate",
    "prompt_order",
    "shown_mask",
    "snap",
]
