"""Structured configs: the typed shape of ``conf/``, registered in Hydra's ConfigStore.

The schemas are generated from the registries and the classes they hold, so there is
one source of truth for every field and default, and a new part gets its schema without
an edit here:

- ``rule/<name>_schema``: each flat rule (``FLAT_RULES``) plus ``name`` and the prompt
  filter's ``threshold`` and ``limit`` (``PromptFilter``);
- ``users/users_schema``: ``UserPopulation``;
- ``feedback/feedback_schema``: one optional node per feedback channel (``CHANNELS``);
- ``gate/<name>_schema`` and ``cost_gate/<name>_schema``: each gate (``GATES``) plus ``name``;
  ``gate/prescribed_schema``: the design question (``DesignQuestion``) plus ``name``;
- ``quarantine/<name>_schema``: each quarantine exit policy (``QUARANTINE_POLICIES``);
- ``scenario/<name>_schema``: each scenario's plain fields except the ones a group feeds
  (``Scenario.inputs``);
- ``explore/explore_schema``: every ``explore.*`` input of a scenario, typed and defaulted
  as the first scenario declaring it has it.

Hydra checks types and unknown keys while composing (OmegaConf names the full key, the
value and the type it expected); ``experiments.build.validate`` then checks every range
by building the engine objects, before any MLflow run exists.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from dataclasses import dataclass, field, make_dataclass
from typing import Any, Optional

from hydra.core.config_store import ConfigStore

from experiments.build import PROGRESS_MODES  # noqa: F401 (re-exported for callers)
from procmem_core.flat import FLAT_RULES, PromptFilter
from procmem_core.gates import GATES, DesignQuestion
from procmem_core.gates.prescribed import PRESCRIBED
from procmem_core.quarantine import QUARANTINE_POLICIES
from simulators import CHANNELS, SCENARIOS, UserPopulation


@dataclass
class TrackingConf:
    """Where runs go (the MLflow experiment, one per preset) and whether each job draws
    its standard figures (the tables are always logged, and reports draw from them).

    ``uri`` (else ``$MLFLOW_TRACKING_URI``, else the repo's ``mlflow.db``), ``parent`` and
    ``vary`` are set for every job of a sweep by its main process
    (``experiments.callbacks``), so a worker never reads them from its own environment."""

    experiment: str = "${hydra:runtime.choices.experiment}"
    figures: bool = False  # python -m experiments.figures draws them from the tables
    uri: Optional[str] = None  # noqa: UP045 (OmegaConf reads typing.Optional)
    parent: Optional[str] = None  # noqa: UP045
    vary: Optional[list[str]] = None  # noqa: UP045


@dataclass
class BudgetConf:
    """The most one job may ask for, checked from the scenario's own estimate before it
    starts (``Scenario.check_budget``): ``memory_gb`` if set, else ``memory_fraction`` of
    this machine's memory; ``hours`` of estimated run time (null: no limit)."""

    memory_fraction: float = 0.5
    memory_gb: Optional[float] = None  # noqa: UP045 (OmegaConf reads typing.Optional)
    hours: Optional[float] = 24.0  # noqa: UP045


@dataclass
class ProcmemConf:
    """The top of the config. Groups are ``Any`` here: each option brings its own schema."""

    task: str = "scenario"
    seed: int = 0
    resume: bool = False
    progress: str = "auto"
    workers: str = "auto"  # processes one job's chunks use; the numbers do not depend on it
    calibration_cache: Optional[str] = ".procmem/calibrations"  # noqa: UP045 (experiments.calcache)
    objective: Optional[str] = None  # noqa: UP045 (the metric an Optuna search optimizes)
    scenario: Any = None
    rule: Any = None
    users: Any = None
    feedback: Any = None
    gate: Any = None
    cost_gate: Any = None
    quarantine: Any = None  # group ``quarantine`` (procmem_core.quarantine), read by the loop
    explore: Any = None
    llm: Any = None  # group ``llm`` (procmem_core.learn.LLMConfig), chosen by llm_replay
    replay: Any = None  # the llm_replay task's settings (experiments/tasks/llm_replay.py)
    live: Any = None  # group ``live``: the live loop's settings (experiments/tasks/live.py)
    tracking: TrackingConf = field(default_factory=TrackingConf)
    budget: BudgetConf = field(default_factory=BudgetConf)


def omegaconf_type(hint: Any) -> Any | None:
    """The OmegaConf type for a dataclass field hint, or None when it is not a plain value."""
    if hint in (bool, int, float, str):
        return hint
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple and args:
        items = args[:1] if args[-1] is Ellipsis else args
        inner = omegaconf_type(items[0])
        same = all(a == items[0] for a in items)
        return list[inner] if inner is not None and same else None
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if set(rest) == {int, float}:
            return float
        if len(rest) == 1 and len(args) == 2:
            inner = omegaconf_type(rest[0])
            return Optional[inner] if inner is not None else None  # noqa: UP045 (OmegaConf)
    return None


def plain_fields(cls: type, skip: tuple[str, ...] = ()) -> list[tuple[str, Any, Any]]:
    """``(name, type, default)`` of the init fields of ``cls`` that hold plain values."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if not f.init or f.name in skip:
            continue
        kind = omegaconf_type(hints[f.name])
        if kind is None:
            continue
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        if isinstance(default, tuple):
            default = field(default_factory=lambda d=default: list(d))
        out.append((f.name, kind, default))
    return out


def schema(name: str, spec: list[tuple[str, Any, Any]]) -> type:
    """A structured-config dataclass named ``name`` with fields ``spec``.

    It is made an attribute of this module, so pickle finds it by name: a job process
    that receives Hydra's config store (the local launcher sends it) gets the class with
    its fields, where a class pickled by value would arrive without them (a nested
    optional node such as ``feedback.flips`` would then refuse its own keys)."""
    cls = make_dataclass(name, spec)
    cls.__module__ = __name__
    cls.__qualname__ = name
    setattr(sys.modules[__name__], name, cls)
    return cls


def named_schema(
    name: str, cls: type, extra: list[tuple[str, Any, Any]] = (), group: str = ""
) -> type:
    """``name`` plus the plain fields of ``cls`` (and ``extra``); ``group`` keeps the class
    names of two groups built from one class apart (``gate`` and ``cost_gate``)."""
    title = "".join(part.title() for part in group.split("_"))
    spec = [("name", str, name), *plain_fields(cls), *extra]
    return schema(f"{cls.__name__}{title}Conf", spec)


def scenario_schema(name: str, cls: type) -> type:
    spec = [("name", str, name), *plain_fields(cls, skip=tuple(cls.inputs))]
    return schema(f"{cls.__name__}Conf", spec)


def feedback_schema() -> type:
    """One optional node per channel: ``feedback.flips.false_negative`` and so on."""
    spec = []
    for name, cls in CHANNELS.items():
        node = schema(f"{cls.__name__}Conf", plain_fields(cls))
        spec.append((name, Optional[node], None))  # noqa: UP045 (OmegaConf)
    return schema("FeedbackConf", spec)


def explore_schema() -> type:
    """The ``explore.*`` inputs of the scenarios, typed and defaulted from the first one."""
    spec, seen = [], set()
    for cls in SCENARIOS.values():
        wanted = {f: s.split(".", 1)[1] for f, s in cls.inputs.items() if s.startswith("explore.")}
        for name, kind, default in plain_fields(cls):
            key = wanted.get(name)
            if key is not None and key not in seen:
                seen.add(key)
                spec.append((key, kind, default))
    return schema("ExploreConf", spec)


USERS_WORLD = ("world", Optional[str], None)  # noqa: UP045 (OmegaConf reads typing.Optional)


def register(store: ConfigStore | None = None) -> ConfigStore:
    """Store every schema: ``procmem_schema`` and ``<group>/<option>_schema``."""
    cs = store or ConfigStore.instance()
    cs.store(name="procmem_schema", node=ProcmemConf)
    prompt = plain_fields(PromptFilter)
    for name, cls in FLAT_RULES.items():
        cs.store(group="rule", name=f"{name}_schema", node=named_schema(name, cls, prompt))
    cs.store(
        group="users",
        name="users_schema",
        # world: a fitted world.json (docs/logs.md) the population is matched to (users=fitted)
        node=schema("UsersConf", [*plain_fields(UserPopulation), USERS_WORLD]),
    )
    cs.store(group="feedback", name="feedback_schema", node=feedback_schema())
    cs.store(group="explore", name="explore_schema", node=explore_schema())
    for name, cls in GATES.items():
        cs.store(group="gate", name=f"{name}_schema", node=named_schema(name, cls))
        node = named_schema(name, cls, group="cost_gate")
        cs.store(group="cost_gate", name=f"{name}_schema", node=node)
    # the gate the design tool prescribes: its node is the design question
    prescribed = named_schema(PRESCRIBED, DesignQuestion, group="gate")
    cs.store(group="gate", name=f"{PRESCRIBED}_schema", node=prescribed)
    for name, cls in QUARANTINE_POLICIES.items():
        cs.store(group="quarantine", name=f"{name}_schema", node=named_schema(name, cls))
    for name, cls in SCENARIOS.items():
        cs.store(group="scenario", name=f"{name}_schema", node=scenario_schema(name, cls))
    return cs


register()
