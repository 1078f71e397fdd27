"""``backend``: the memory store, the learnings queue and a procedure store, in memory or
sharing one SQLite file; ``backend.reopen()`` closes and reopens the SQLite ones in
place (nothing to do in memory), so every test runs against both stores and can check
that what it wrote survives a restart."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from procmem_core.graph import ProcedureStore
from procmem_core.learnings import LearningsQueue, LearningsSettings
from procmem_core.memory import MemoryStore


@dataclass
class Backend:
    kind: str
    path: Path | None
    settings: LearningsSettings
    procedures: ProcedureStore
    memory: MemoryStore
    queue: LearningsQueue

    @classmethod
    def make(cls, kind: str, path: Path | None, settings: LearningsSettings) -> Backend:
        if path is None:
            procedures = ProcedureStore()
            memory = MemoryStore(procedures=procedures)
            return cls(kind, None, settings, procedures, memory, LearningsQueue(memory, settings))
        procedures = ProcedureStore.open(path)
        memory = MemoryStore.open(path, procedures=procedures)
        return cls(
            kind, path, settings, procedures, memory, LearningsQueue.open(path, memory, settings)
        )

    def reopen(self) -> Backend:
        """Close and reopen the SQLite stores in place (nothing to do in memory)."""
        if self.path is not None:
            self.close()
            fresh = Backend.make(self.kind, self.path, self.settings)
            self.procedures, self.memory, self.queue = fresh.procedures, fresh.memory, fresh.queue
        return self

    def close(self) -> None:
        for s in (self.queue, self.memory, self.procedures):
            s.close()


@pytest.fixture(params=["memory", "sqlite"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """Both stores (and a queue with assistant-turn learnings on), empty."""
    path = None if request.param == "memory" else tmp_path / "procmem.db"
    b = Backend.make(request.param, path, LearningsSettings(agent_learnings=True))
    yield b
    b.close()
