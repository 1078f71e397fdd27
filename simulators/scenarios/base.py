"""The scenario base: name, replications, chunking and seeding, the shared checks, ``run``.

Every scenario is a frozen dataclass of parameters on ``Scenario``: it names itself
(``name``, which registers it in ``SCENARIOS``), checks its fields in ``__post_init__``
(``check_replications`` and the checks of ``procmem_core.errors``), draws its random
numbers chunk by chunk from ``chunks(seed)`` (chunk ``i`` from the ``i``-th spawned child
of the seed, so the numbers do not depend on the order chunks are run), and returns a
``ScenarioResult`` from ``run(seed)``. A new scenario is one new module in this package.

The budget verb: ``work()`` estimates, from the parameters alone, the memory and the time
``run`` needs (each scenario counts its own units of work and the bytes it keeps per
replication and per chunk; ``units_per_second`` is its measured throughput, set low so
the time is not underestimated), and ``check_budget`` refuses a run past a ``Budget``
with the estimate and the limit in the message, before anything is allocated.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, ClassVar, TypeVar

from procmem_core.errors import ParameterError, check_int
from procmem_core.logged import parse_param
from procmem_core.registry import Registry
from simulators.parallel import map_chunks
from simulators.replication import Chunk, chunks
from simulators.result import ScenarioResult

T = TypeVar("T")

SCENARIOS: Registry[Scenario] = Registry("scenario", "simulators.scenarios")
"""Every scenario class by name (``fate``, ``confidence``, ``gate``, ``explore``, ``loop``)."""


@dataclass(frozen=True)
class Work:
    """What a run needs, estimated from its parameters: bytes held at once, seconds, and
    the parameters the estimate grows with."""

    memory_bytes: float
    seconds: float
    drivers: tuple[str, ...] = ("replications",)


@dataclass(frozen=True)
class Budget:
    """The most one run may ask for: ``memory_bytes``, and ``seconds`` unless None;
    ``source`` says where the limits come from (for the message)."""

    memory_bytes: float
    seconds: float | None = None
    source: str = ""


def size_text(n: float) -> str:
    """Bytes for reading: ``12.3 GB``."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n / 1e3:,.1f} kB"


def time_text(seconds: float) -> str:
    """Seconds for reading: ``3.2 hours``, ``41 years``."""
    for unit, scale in (("years", 3.156e7), ("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= scale:
            return f"{seconds / scale:,.1f} {unit}"
    return f"{seconds:.1f} s"


class Scenario(ABC):
    """A simulated world with known truth (see the module docstring)."""

    name: ClassVar[str]
    replications: int
    min_replications: ClassVar[int] = 2
    units_per_second: ClassVar[float] = 1e6
    """Throughput of ``run`` in the scenario's own units of work (``work``)."""
    inputs: ClassVar[dict[str, str]] = {}
    """Fields fed by a config group rather than the ``scenario`` node: field -> the group
    (``"users"``) or group key (``"rule.threshold"``) that sets it. A key in an optional
    group (``explore.*``) falls back to the field's own value when the group is unset."""

    key_metrics: ClassVar[tuple[str, ...]] = ()
    """The headline metrics (names in ``ScenarioResult.metrics``) a sweep's summary and
    progress lines show for this scenario; () shows the first three with an SE."""

    unseeded: ClassVar[tuple[str, ...]] = ()
    """Fields left out of what a job's seed is drawn from (``experiments.identity.
    seed_digest``): fields added after the scenario's jobs were first logged that change
    none of a run's own numbers (the calibration blocks' fields of the explore and
    reflections scenarios), so adding them keeps every job's seed and numbers."""

    unset_words: ClassVar[dict[str, str]] = {}
    """What a field left unset means, in words, for run names and report labels
    (``{"ledger_size": "p0 known"}``: no prior ledger, the gate is given the true rate)."""

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

    def map_chunks(self, seed: int, fn: Callable[[Chunk], T]) -> list[T]:
        """``[fn(chunk) for chunk in self.chunks(seed)]``, spread over ``CHUNK_WORKERS``
        processes when set (``simulators.parallel``): the same numbers on any number of
        workers. ``fn`` is a bound method of the scenario (frozen, so picklable)."""
        return map_chunks(fn, seed, self.replications, self.replications_per_chunk)

    def chunks(self, seed: int) -> Iterator[Chunk]:
        """The replications in chunks, chunk ``i`` seeded by the ``i``-th child of ``seed``."""
        return chunks(seed, self.replications, self.replications_per_chunk)

    def estimate(
        self,
        units: float,
        kept_per_replication: float,
        per_chunk_replication: float,
        drivers: Sequence[str] = ("replications",),
    ) -> Work:
        """``Work`` from the units of work, the bytes kept per replication until the end,
        and the bytes of working arrays per replication of a chunk."""
        chunk = min(self.replications, self.replications_per_chunk)
        memory = self.replications * kept_per_replication + chunk * per_chunk_replication
        return Work(float(memory), float(units) / self.units_per_second, tuple(drivers))

    def work(self) -> Work:
        """Memory and time ``run`` needs, from the parameters (each scenario overrides)."""
        raise NotImplementedError(f"{type(self).__name__} does not estimate its work")

    def check_budget(self, budget: Budget) -> Work:
        """The estimate, or ``ParameterError`` with it when it is past the budget."""
        work = self.work()
        over_time = budget.seconds is not None and work.seconds > budget.seconds
        if work.memory_bytes <= budget.memory_bytes and not over_time:
            return work
        sizes = ", ".join(f"{k}={getattr(self, k)!r}" for k in work.drivers)
        limit = size_text(budget.memory_bytes) + (
            f" and {time_text(budget.seconds)}" if budget.seconds is not None else ""
        )
        raise ParameterError(
            "replications",
            self.replications,
            f"a run within the budget: with {sizes} it needs about "
            f"{size_text(work.memory_bytes)} of memory and {time_text(work.seconds)} "
            f"(estimated before it starts), past the budget of {limit}{budget.source}",
        )

    def new_result(self) -> ScenarioResult:
        """An empty result that carries the scenario's ``logged_params``."""
        return ScenarioResult(self.name, params=self.logged_params())

    def logged_params(self) -> dict[str, Any]:
        """The params a job of this scenario logs, by dotted config key, as a sweep read
        from MLflow holds them: ``scenario.<field>``, and each field of ``inputs`` at its
        group key (``rule.name``, ``rule.reward``, ``rule.threshold``, ``gate.alpha``,
        ``users.base_rate``, ``feedback.<channel>.<field>``), each value as MLflow's text
        reads back (``experiments.identity.flatten``, then ``parse_param``). So a
        notebook's ``Sweep.from_results`` shows the world the result was simulated in."""
        out: dict[str, Any] = {"scenario.name": self.name}
        for f in fields(self):  # type: ignore[arg-type]  # every scenario is a dataclass
            key = self.inputs.get(f.name, f"scenario.{f.name}")
            out |= _params_at(key, getattr(self, f.name))
        return out

    @property
    def exact_regime(self) -> bool:
        """True when the scenario's metrics have exact counterparts (``<name>_exact``)."""
        return False

    @abstractmethod
    def run(self, seed: int) -> ScenarioResult:
        """Simulate every replication from ``seed``; metrics with standard errors, tables."""


def unset_phrase(field: str) -> str | None:
    """The words a scenario gives its field ``field`` (a config key's last part) when
    unset, or None: the one source of labels such as "p0 known"."""
    for name in SCENARIOS.names():
        words = SCENARIOS[name].unset_words.get(field)
        if words is not None:
            return words
    return None


def _params_at(key: str, value: Any) -> dict[str, Any]:
    """``value`` at config key ``key``: a component (a rule, a gate, a population) by its
    ``name`` and init fields, ``Feedback`` by channel, anything else as one param."""
    if hasattr(value, "channels"):  # Feedback: its config node is keyed by channel name
        return {k: v for c in value.channels for k, v in _params_at(f"{key}.{c.name}", c).items()}
    if is_dataclass(value) and not isinstance(value, type):
        named = {f"{key}.name": value.name} if isinstance(getattr(value, "name", None), str) else {}
        for f in fields(value):
            if f.init:
                named |= _params_at(f"{key}.{f.name}", getattr(value, f.name))
        return named
    return {key: _logged(value)}


def _logged(value: Any) -> Any:
    """A value as it reads back from MLflow: lists as JSON text, the rest parsed back."""
    if isinstance(value, list | tuple):
        return json.dumps([v.item() if hasattr(v, "item") else v for v in value], default=str)
    return parse_param(str(value))
