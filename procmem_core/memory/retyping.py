"""The procedural retyping rule (seed: loom-procedures.txt): "A procedural row written with
memory.set that is not a procedure body ... is stored as semantic". ``procedure_body`` says
what a procedure body is (the rule, once); ``procedural_text`` is the text a retyped row is
stored and embedded with; ``plain_value`` keeps the row itself as JSON-able metadata.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from procmem_core.graph.keys import check_metadata, check_tags
from procmem_core.memory.records import RETYPED_TAG


def procedure_body(value: Any) -> tuple[str, tuple[str, ...]] | None:
    """``(situation, steps)`` when ``value`` is a procedure body: a mapping with a non-empty
    ``situation`` and at least two non-empty ``steps``; None for anything else."""
    if not isinstance(value, Mapping):
        return None
    situation, steps = value.get("situation"), value.get("steps")
    if not isinstance(situation, str) or not situation.strip():
        return None
    if isinstance(steps, str) or not isinstance(steps, Sequence) or len(steps) < 2:
        return None
    if not all(isinstance(s, str) and s.strip() for s in steps):
        return None
    return situation, tuple(steps)


def procedural_text(value: Any) -> str:
    """The text a retyped procedural row is stored and embedded with."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        parts = [str(value[k]) for k in ("name", "situation") if str(value.get(k) or "").strip()]
        steps = value.get("steps")
        if isinstance(steps, Sequence) and not isinstance(steps, str):
            parts += [str(s) for s in steps if str(s).strip()]
        elif isinstance(steps, str) and steps.strip():
            parts.append(steps)
        return ". ".join(parts)
    return ""


def plain_value(value: Any) -> Any:
    """``value`` as JSON-able data (for the retyped row's metadata)."""
    return check_metadata({"v": value if not isinstance(value, tuple) else list(value)})["v"]


def retyped_fields(
    value: Any, tags: Sequence[str], metadata: Mapping[str, Any] | None
) -> tuple[list[str], dict[str, Any]]:
    """The tags and metadata of a retyped procedural row: ``RETYPED_TAG`` added, the row
    itself kept as ``metadata["procedural_body"]``."""
    return [*check_tags(tags), RETYPED_TAG], {
        **check_metadata(metadata),
        "procedural_body": plain_value(value),
    }
