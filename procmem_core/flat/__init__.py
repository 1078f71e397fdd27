"""The flat design (seed: notebook-procedural-memory.txt): a confidence per procedure, a
rule that moves it by outcomes, a prompt filter, the prompt, its pack and its exact fate."""

from procmem_core.flat.fate import FlatFate, flat_fate
from procmem_core.flat.pack import FlatPack, pack_flat
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
    DEFAULT_RULE,
    FLAT_RULES,
    GRID_DECIMALS,
    THRESHOLD_TOLERANCE,
    ConfidenceRule,
    FlatRule,
    passes_threshold,
    snap,
)

__all__ = [
    "BASE_PROMPT",
    "DEFAULT_FILTER",
    "DEFAULT_LIMIT",
    "DEFAULT_RULE",
    "DEFAULT_THRESHOLD",
    "FLAT_RULES",
    "GRID_DECIMALS",
    "PROCEDURES_HEADING",
    "THRESHOLD_TOLERANCE",
    "ConfidenceRule",
    "FlatFate",
    "FlatPack",
    "FlatRule",
    "Procedure",
    "PromptFilter",
    "build_system_prompt",
    "flat_fate",
    "pack_flat",
    "passes_threshold",
    "prompt_order",
    "shown_mask",
    "snap",
]
