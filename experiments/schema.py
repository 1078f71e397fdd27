"""Structured configs: the typed shape of ``conf/``, registered in Hydra's ConfigStore.

The schemas are generated from the classes they configure, so there is one source of
truth for every field and default:

- ``rule``: ``ConfidenceRule``'s fields plus the prompt filter's ``threshold`` and ``limit``;
- ``users``: ``UserPopulation``; ``feedback``: ``FeedbackModel``;
- ``gate/<name>``: the gate class ``procmem_core.gates.GATES[name]`` plus ``name``;
- ``scenario/<name>``: the plain-valued fields of ``simulators.SCENARIOS[name]`` plus
  ``name``, without the fields the groups above provide (see ``experiments.build``);
- ``cost_gate``: an optional ``CostGate`` beside the main gate (default: none);
- ``explore``: the explore-rate knobs (``EXPLORE_FIELDS``) of the scenarios that withhold
  procedures; when selected they override the scenario's own values (default: none).

Hydra checks types and unknown keys while composing (OmegaConf names the full key, the
value and the type it expected); ``experiments.build.validate`` then checks every range
by building the engine objects, before any MLflow run exists.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field, make_dataclass
from typing import Any, Optional

from hydra.core.config_store import ConfigStore

from procmem_core.flat import ConfidenceRule
from procmem_core.gates import GATES
from simulators import SCENARIOS
from simulators.feedback import FeedbackModel
from simulators.users import UserPopulation

RULE_FILTER_FIELDS = ("threshold", "limit")
"""Scenario fields set by the ``rule`` group (the prompt filter) rather than ``scenario``."""

EXPLORE_FIELDS = ("explore_rate", "estimator", "confidence_level", "target_power")
"""Scenario fields the ``explore`` group overrides when it is selected (default: not)."""

PROGRESS_MODES = ("auto", "on", "off")


@dataclass
class TrackingConf:
    """Where runs go (the MLflow experiment, one per preset) and whether each job draws
    its standard figures (about half of a small job's time; the tables are always logged,
    and reports draw from them)."""

    experiment: str = "${hydra:runtime.choices.experiment}"
    figures: bool = True


@dataclass
class ProcmemConf:
    """The top of the config. Groups are ``Any`` here: each option brings its own schema."""

    task: str = "scenario"
    seed: int = 0
    resume: bool = False
    progress: str = "auto"
    scenario: Any = None
    rule: Any = None
    users: Any = None
    feedback: Any = None
    gate: Any = None
    cost_gate: Any = None
    explore: Any = None
    llm: Any = None  # group ``llm`` (procmem_core.learn.LLMConfig), chosen by llm_replay
    replay: Any = None  # the llm_replay task's settings (experiments/llm_replay.py)
    tracking: TrackingConf = field(default_factory=TrackingConf)


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
    """A structured-config dataclass named ``name`` with fields ``spec``."""
    return make_dataclass(name, spec)


def scenario_schema(name: str, cls: type) -> type:
    spec = [("name", str, name), *plain_fields(cls, skip=RULE_FILTER_FIELDS)]
    return schema(f"{cls.__name__}Conf", spec)


def gate_schema(name: str, cls: type) -> type:
    return schema(f"{cls.__name__}Conf", [("name", str, name), *plain_fields(cls)])


def rule_schema() -> type:
    filters = [("threshold", float, 0.55), ("limit", int, 6)]
    return schema("RuleConf", [*plain_fields(ConfidenceRule), *filters])


def explore_schema() -> type:
    """The explore knobs, typed and defaulted as the explore scenario has them."""
    spec = [f for f in plain_fields(SCENARIOS["explore"]) if f[0] in EXPLORE_FIELDS]
    return schema("ExploreConf", spec)


def register(store: ConfigStore | None = None) -> ConfigStore:
    """Store every schema: ``procmem_schema`` and ``<group>/<option>_schema``."""
    cs = store or ConfigStore.instance()
    cs.store(name="procmem_schema", node=ProcmemConf)
    cs.store(group="rule", name="rule_schema", node=rule_schema())
    cs.store(
        group="users", name="users_schema", node=schema("UsersConf", plain_fields(UserPopulation))
    )
    cs.store(
        group="feedback",
        name="feedback_schema",
        node=schema("FeedbackConf", plain_fields(FeedbackModel)),
    )
    cs.store(group="explore", name="explore_schema", node=explore_schema())
    cs.store(group="cost_gate", name="cost_gate_schema", node=gate_schema("cost", GATES["cost"]))
    for name, cls in GATES.items():
        cs.store(group="gate", name=f"{name}_schema", node=gate_schema(name, cls))
    for name, cls in SCENARIOS.items():
        cs.store(group="scenario", name=f"{name}_schema", node=scenario_schema(name, cls))
    return cs


register()
