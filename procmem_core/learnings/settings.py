"""The queue's settings: assistant-turn learnings (off by default), from config or the
environment (``PROCMEM_MEMORY_EXTRACT_AGENT_LEARNINGS`` or the seed's name
``LOOM_MEMORY_EXTRACT_AGENT_LEARNINGS``; both set to different values is refused naming
both, ``procmem_core.env``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace

from procmem_core.env import env_flag, from_env
from procmem_core.errors import check_bool

AGENT_LEARNINGS_ENV = "PROCMEM_MEMORY_EXTRACT_AGENT_LEARNINGS"


@dataclass(frozen=True)
class LearningsSettings:
    """``agent_learnings``: extraction files the assistant's rules about itself as
    ``assistant_turn`` candidates (off by default: such rules are then not filed)."""

    agent_learnings: bool = False

    def __post_init__(self) -> None:
        check_bool("agent_learnings", self.agent_learnings)

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, base: LearningsSettings | None = None
    ) -> LearningsSettings:
        """``base`` with ``PROCMEM_MEMORY_EXTRACT_AGENT_LEARNINGS`` (or
        ``LOOM_MEMORY_EXTRACT_AGENT_LEARNINGS``) applied when set."""
        env = os.environ if environ is None else environ
        changes = from_env(env, {"agent_learnings": (AGENT_LEARNINGS_ENV, env_flag)})
        return replace(base or cls(), **changes)
