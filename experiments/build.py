"""From a composed config to the engine objects and the scenario they drive.

Each group builds one engine object, and the engine's own ``__post_init__`` checks do
the range validation (one rule, one check): ``rule`` -> ``ConfidenceRule`` (plus the
prompt filter's ``threshold`` and ``limit``), ``users`` -> ``UserPopulation``,
``feedback`` -> ``FeedbackModel``, ``gate`` -> ``make_gate(name, ...)``, ``cost_gate``
-> ``CostGate`` (optional). The scenario class ``simulators.SCENARIOS[scenario.name]``
then receives, for each of its fields, the group object of the field's type (the rule's
``threshold``/``limit`` and ``cost_gate`` by name), else the ``explore`` group's value
for an explore knob when that group is selected, else the value under ``scenario``.
Every error is re-raised as ``ParameterError`` with the full config key (``gate.alpha``,
``scenario.sessions``, ``explore.explore_rate``), the value and what is allowed.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from experiments.schema import EXPLORE_FIELDS, PROGRESS_MODES, RULE_FILTER_FIELDS
from procmem_core.errors import ParameterError, check_int, check_probability
from procmem_core.flat import ConfidenceRule
from procmem_core.gates import GATES, CostGate, Gate, make_gate
from simulators import SCENARIOS
from simulators.feedback import FeedbackModel
from simulators.users import UserPopulation

TASKS_DIR = Path(__file__).resolve().parent
SCENARIO_TASK = "scenario"


def _node(cfg: DictConfig | Mapping[str, Any], key: str) -> dict[str, Any]:
    value = cfg.get(key) if isinstance(cfg, Mapping | DictConfig) else None
    if value is None:
        raise ParameterError(key, None, f"the config group '{key}' must be selected")
    if isinstance(value, DictConfig):
        return OmegaConf.to_container(value, resolve=True)
    return dict(value)


def _within(group: str, make: Callable[[], Any]) -> Any:
    """Run ``make()``; re-raise its ParameterError with the key prefixed by ``group``."""
    try:
        return make()
    except ParameterError as exc:
        field = exc.field if exc.field.startswith(f"{group}.") else f"{group}.{exc.field}"
        raise ParameterError(field, exc.value, exc.allowed) from None
    except TypeError as exc:  # an unknown or missing keyword
        raise ParameterError(group, None, f"bad keys: {exc}") from None


def build_rule(cfg: DictConfig | Mapping[str, Any]) -> tuple[ConfidenceRule, float, int]:
    """The ``rule`` group: ``(ConfidenceRule, threshold, limit)``."""
    node = _node(cfg, "rule")
    threshold = node.pop("threshold")
    limit = node.pop("limit")
    rule = _within("rule", lambda: ConfidenceRule(**node))
    threshold = _within("rule", lambda: check_probability("threshold", threshold))
    limit = _within("rule", lambda: check_int("limit", limit, minimum=1))
    return rule, threshold, limit


def build_groups(cfg: DictConfig | Mapping[str, Any]) -> dict[str, Any]:
    """Every group's engine object: rule, threshold, limit, users, feedback, gate, cost_gate."""
    rule, threshold, limit = build_rule(cfg)
    users = _node(cfg, "users")
    feedback = _node(cfg, "feedback")
    gate = _node(cfg, "gate")
    name = gate.pop("name", None)
    if name not in GATES:
        raise ParameterError("gate.name", name, f"one of {sorted(GATES)}")
    cost = _optional_node(cfg, "cost_gate")
    if cost is not None:
        cost.pop("name", None)
    return {
        "rule": rule,
        "threshold": threshold,
        "limit": limit,
        "users": _within("users", lambda: UserPopulation(**users)),
        "feedback": _within("feedback", lambda: FeedbackModel(**feedback)),
        "gate": _within("gate", lambda: make_gate(name, **gate)),
        "cost_gate": None if cost is None else _within("cost_gate", lambda: CostGate(**cost)),
    }


def _optional_node(cfg: DictConfig | Mapping[str, Any], key: str) -> dict[str, Any] | None:
    return None if cfg.get(key) is None else _node(cfg, key)


def group_of(field_name: str, hint: Any) -> str | None:
    """Which group feeds a scenario field: by its type, ``threshold``/``limit`` and
    ``cost_gate`` by name (``X | None`` counts as ``X``)."""
    if field_name in RULE_FILTER_FIELDS or field_name == "cost_gate":
        return field_name
    members = tuple(m for m in (typing.get_args(hint) or (hint,)) if m is not type(None))
    if members == (ConfidenceRule,):
        return "rule"
    if members == (UserPopulation,):
        return "users"
    if members == (FeedbackModel,):
        return "feedback"
    if members == (Gate,) or all(m in GATES.values() for m in members):
        return "gate"
    return None


def group_fields(cls: type) -> dict[str, str]:
    """``{scenario field: group}`` for every field of ``cls`` that a group provides."""
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        group = group_of(f.name, hints[f.name]) if f.init else None
        if group is not None:
            out[f.name] = group
    return out


def build_scenario(cfg: DictConfig | Mapping[str, Any]) -> Any:
    """The scenario object the config describes (validated by its constructor)."""
    groups = build_groups(cfg)
    node = _node(cfg, "scenario")
    name = node.pop("name", None)
    if name not in SCENARIOS:
        raise ParameterError("scenario.name", name, f"one of {sorted(SCENARIOS)}")
    cls = SCENARIOS[name]
    provided = group_fields(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.init} - set(provided)
    for key, value in node.items():
        if key not in names:
            raise ParameterError(f"scenario.{key}", value, f"a field of {name}: {sorted(names)}")
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in node.items()}
    keys = {}  # scenario field -> the config key that set it (for error messages)
    for f, g in provided.items():
        if groups[g] is None:  # an optional group left unselected: the scenario's default
            continue
        kwargs[f] = groups[g]
        keys[f] = f"rule.{f}" if g in RULE_FILTER_FIELDS else g
    explore = _optional_node(cfg, "explore") or {}
    for f in EXPLORE_FIELDS:
        if f in names and explore.get(f) is not None:
            kwargs[f], keys[f] = explore[f], f"explore.{f}"
    try:
        return cls(**kwargs)
    except ParameterError as exc:
        key = keys.get(exc.field, f"scenario.{exc.field}")
        raise ParameterError(key, exc.value, exc.allowed) from None


def available_tasks() -> list[str]:
    """``scenario`` and every module ``experiments/<task>.py`` that defines ``run_task``."""
    found = [
        p.stem
        for p in sorted(TASKS_DIR.glob("*.py"))
        if "\ndef run_task(" in p.read_text(encoding="utf-8")
    ]
    return [SCENARIO_TASK, *found]


def validate(cfg: DictConfig | Mapping[str, Any]) -> Any:
    """Check every value of a job's config; return the scenario (None for other tasks).

    A task module may define ``validate_config(cfg)`` (raising ``ParameterError``) to have
    its own keys checked here too, before any run exists.

    Raises ``ParameterError`` naming the key, the value and what is allowed.
    """
    task = cfg.get("task")
    tasks = available_tasks()
    if task not in tasks:
        raise ParameterError("task", task, f"one of {tasks}")
    progress = cfg.get("progress")
    if progress not in PROGRESS_MODES:
        raise ParameterError("progress", progress, f"one of {list(PROGRESS_MODES)}")
    check_int("seed", cfg.get("seed"), minimum=0)
    if task != SCENARIO_TASK:
        build_groups(cfg)
        check = getattr(task_module(task), "validate_config", None)
        if check is not None:  # the task's own keys (e.g. llm_replay's llm and replay)
            check(cfg)
        return None
    return build_scenario(cfg)


def task_module(task: str) -> Any:
    """The module ``experiments.<task>`` (its ``run_task(cfg, out_dir)`` runs the job)."""
    spec = importlib.util.find_spec(f"experiments.{task}")
    if spec is None:
        raise ParameterError("task", task, f"one of {available_tasks()}")
    return importlib.import_module(f"experiments.{task}")
