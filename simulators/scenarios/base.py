"""The scenario base: name, replications, chunking and seeding, the shared checks, ``run``.

Every scenario is a frozen dataclass of parameters on ``Scenario``: it names itself
(``name``, which registers it in ``SCENARIOS``), checks its fields in ``__post_init__``
(``check_replications`` and the checks of ``procmem_core.errors``), draws its random
numbers chunk by chunk from ``chunks(seed)`` (chunk ``i`` from the ``i``-th spawned child
of the seed, so the numbers do not depend on the order chunks are run), and returns a
``ScenarioResult`` from ``run(seed)``. A new scenario is one new module in this package.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar

from procmem_core.errors import check_int
from procmem_core.registry import Registry
from simulators.replication import Chunk, chunks
from simulators.result import ScenarioResult

SCENARIOS: Registry[Scenario] = Registry("scenario", "simulators.scenarios")
"""Every scenario class by name (``fate``, ``confidence``, ``gate``, ``explore``, ``loop``)."""


class Scenario(ABC):
    """A simulated world with known truth (see the module docstring)."""

    name: ClassVar[str]
    replications: int
    min_replications: ClassVar[int] = 2
    inputs: ClassVar[dict[str, str]] = {}
    """Fields fed by a config group rather than the ``scenario`` node: field -> the group
    (``"users"``) or group key (``"rule.threshold"``) that sets it. A key in an optional
    group (``explore.*``) falls back to the field's own value when the group is unset."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            SCENARIOS.add(cls)

    def check_replications(self) -> None:
        """``replications`` (at least ``min_replications``) and a chunk size, if it has one."""
        check_int("replications", self.replications, minimum=self.min_replications)
        size = getattr(self, "chunk_size", None)
        if size is not None:
            check_int("chunk_size", size, minimum=1)

    @property
    def replications_per_chunk(self) -> int:
        """Replications drawn from one spawned generator (override to size chunks by work)."""
        return int(self.chunk_size)

    def chunks(self, seed: int) -> Iterator[Chunk]:
        """The replications in chunks, chunk ``i`` seeded by the ``i``-th child of ``seed``."""
        return chunks(seed, self.replications, self.replications_per_chunk)

    def new_result(self) -> ScenarioResult:
        return ScenarioResult(self.name)

    @property
    def exact_regime(self) -> bool:
        """True when the scenario's metrics have exact counterparts (``<name>_exact``)."""
        return False

    @abstractmethod
    def run(self, seed: int) -> ScenarioResult:
        """Simulate every replication from ``seed``; metrics with standard errors, tables."""
