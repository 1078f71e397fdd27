"""From a composed config to the engine objects and the scenario they drive.

Each config group has one builder (``GROUP_BUILDERS``), and each builder asks a registry
for the class the config names, so no code here decodes a config by type or by field
names: ``rule`` -> ``FLAT_RULES[rule.name]`` (its ``threshold`` and ``limit`` are the prompt
filter's), ``users`` -> ``UserPopulation``, ``feedback`` -> one channel per key
(``CHANNELS``) in a ``Feedback``, ``gate`` / ``cost_gate`` -> ``make_gate`` (``name:
prescribed``: ``prescribed_gate``, the design tool's pick for the node's question), ``quarantine``
-> ``make_quarantine_policy``, ``explore`` -> plain values. A scenario
(``SCENARIOS[scenario.name]``) declares which of its fields a group feeds
(``Scenario.inputs``); every other field comes from the ``scenario`` node. A task
(``TASKS``) is a module of ``experiments.tasks`` with ``run_task`` and the ``GROUPS`` it
reads. The engine's own ``__post_init__`` checks do the range validation
(one rule, one check); every error is re-raised as ``ParameterError`` with the full
config key (``gate.alpha``, ``scenario.sessions``, ``explore.explore_rate``).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import pkgutil
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from omegaconf import DictConfig, OmegaConf

from experiments.identity import SCENARIO_TASK
from experiments.stores import check_experiment_name
from procmem_core.errors import (
    ParameterError,
    check_choice,
    check_int,
    check_number,
    check_probability,
)
from procmem_core.flat import FLAT_RULES, PromptFilter
from procmem_core.gates import make_gate
from procmem_core.gates.prescribed import PRESCRIBED, prescribed_gate
from procmem_core.quarantine import make_quarantine_policy
from simulators import CHANNELS, SCENARIOS, Feedback, UserPopulation
from simulators.scenarios.base import Budget

PROGRESS_MODES = ("auto", "on", "off")
FILTER_KEYS = tuple(f.name for f in dataclasses.fields(PromptFilter))
"""Keys of the ``rule`` group that belong to the prompt filter (threshold, limit)."""


def node_of(cfg: DictConfig | Mapping[str, Any], key: str) -> dict[str, Any] | None:
    """The group ``key`` as a plain dict (None when the group is unset)."""
    value = cfg.get(key) if isinstance(cfg, Mapping | DictConfig) else None
    if value is None:
        return None
    if isinstance(value, DictConfig):
        return OmegaConf.to_container(value, resolve=True)
    return dict(value)


def within(group: str, make: Callable[[], Any]) -> Any:
    """Run ``make()``; re-raise its ParameterError with the key prefixed by ``group``."""
    try:
        return make()
    except ParameterError as exc:
        field = exc.field if exc.field.startswith(f"{group}.") else f"{group}.{exc.field}"
        raise ParameterError(field, exc.value, exc.allowed) from None
    except TypeError as exc:  # an unknown or missing keyword
        raise ParameterError(group, None, f"bad keys: {exc}") from None


def _rule(node: dict[str, Any]) -> Any:
    params = {k: v for k, v in node.items() if k not in (*FILTER_KEYS, "name")}
    within("rule", lambda: PromptFilter(**{k: node[k] for k in FILTER_KEYS if k in node}))
    return within("rule", lambda: FLAT_RULES.build(node.get("name", "confidence"), **params))


def _feedback(node: dict[str, Any]) -> Feedback:
    channels = []
    for name, params in node.items():
        if params is None:
            continue
        key = f"feedback.{name}"
        check_choice("feedback", name, CHANNELS.names())
        channels.append(within(key, lambda n=name, p=params: CHANNELS.build(n, **p)))
    return Feedback(tuple(channels))


def _users(node: dict[str, Any]) -> UserPopulation:
    """``UserPopulation`` from the node; with ``world`` (``users=fitted``), the population
    matched to that fitted world (``simulators.fitted``), ``interference`` kept."""
    node = dict(node)
    world = node.pop("world", None)
    if world is None:
        return UserPopulation(**node)
    from experiments.analyze.world_file import load_world
    from simulators.fitted import fitted_population

    return fitted_population(load_world(world), interference=node.get("interference", 0.0))


def _gate(group: str) -> Callable[[dict[str, Any]], Any]:
    """A gate from its node: ``make_gate``, or for ``name: prescribed`` the design tool's
    pick for the node's question (``procmem_core.gates.prescribed``)."""

    def build(node: dict[str, Any]) -> Any:
        make = prescribed_gate if node.get("name") == PRESCRIBED else make_gate
        return within(group, lambda: make(**node))

    return build


GROUP_BUILDERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "rule": _rule,
    "users": lambda node: within("users", lambda: _users(node)),
    "feedback": _feedback,
    "gate": _gate("gate"),
    "cost_gate": _gate("cost_gate"),
    "quarantine": lambda node: within("quarantine", lambda: make_quarantine_policy(**node)),
    "explore": dict,
}
"""Config group -> the function that builds its object from the group's node."""


def build_group(cfg: DictConfig | Mapping[str, Any], group: str) -> Any:
    """The object of one config group (None when the group is unset)."""
    node = node_of(cfg, group)
    return None if node is None else GROUP_BUILDERS[group](node)


def scenario_class(cfg: DictConfig | Mapping[str, Any]) -> type:
    node = node_of(cfg, "scenario") or {}
    return SCENARIOS.get(node.get("name"), "scenario.name")


def used_groups(cfg: DictConfig | Mapping[str, Any]) -> tuple[str, ...]:
    """The config groups a job reads: its scenario's inputs, or its task's ``GROUPS``."""
    task = str(cfg.get("task"))
    return groups_read(task, scenario_class(cfg) if task == SCENARIO_TASK else None)


def groups_read(task: str, cls: type | None) -> tuple[str, ...]:
    """The groups a job of ``task`` reads: those the scenario class ``cls`` declares in
    ``inputs`` (sorted), or, for another task, its module's ``GROUPS``."""
    if task == SCENARIO_TASK and cls is not None:
        return tuple(sorted({source.partition(".")[0] for source in cls.inputs.values()}))
    return tuple(getattr(task_module(task), "GROUPS", ()))


def _inputs(cfg: DictConfig | Mapping[str, Any], cls: type) -> tuple[dict, dict]:
    """``(kwargs, config key of each)`` for the fields the scenario's groups feed."""
    built: dict[str, Any] = {}
    kwargs, keys = {}, {}
    for field, source in cls.inputs.items():
        group, _, key = source.partition(".")
        if group not in built:
            built[group] = build_group(cfg, group)
        if built[group] is None:  # an optional group left unset: the field's default
            continue
        if key:
            value = (node_of(cfg, group) or {}).get(key)
            if value is None:
                continue
            kwargs[field], keys[field] = value, source
        else:
            kwargs[field], keys[field] = built[group], group
    return kwargs, keys


def build_scenario(cfg: DictConfig | Mapping[str, Any]) -> Any:
    """The scenario object the config describes (validated by its constructor)."""
    cls = scenario_class(cfg)
    node = node_of(cfg, "scenario") or {}
    node.pop("name", None)
    names = {f.name for f in dataclasses.fields(cls) if f.init} - set(cls.inputs)
    for key, value in node.items():
        if key not in names:
            raise ParameterError(
                f"scenario.{key}", value, f"a field of {cls.name}: {sorted(names)}"
            )
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in node.items()}
    fed, keys = _inputs(cfg, cls)
    kwargs.update(fed)
    try:
        return cls(**kwargs)
    except ParameterError as exc:
        key = keys.get(exc.field, f"scenario.{exc.field}")
        raise ParameterError(key, exc.value, exc.allowed) from None


def task_names() -> list[str]:
    """``scenario`` and the name of every module of ``experiments.tasks``, sorted, without
    importing them (a task module may load heavy clients: ``llm_replay`` loads ``openai``)."""
    import experiments.tasks as package

    return sorted([SCENARIO_TASK, *(info.name for info in pkgutil.iter_modules(package.__path__))])


def tasks() -> dict[str, ModuleType | None]:
    """``scenario`` and every module of ``experiments.tasks`` (each defines ``run_task``),
    imported."""
    return {name: None if name == SCENARIO_TASK else task_module(name) for name in task_names()}


def task_module(task: str) -> ModuleType:
    """The module ``experiments.tasks.<task>`` (its ``run_task(cfg, out_dir)`` runs the job)."""
    names = task_names()
    if task == SCENARIO_TASK or task not in names:
        raise ParameterError("task", task, f"one of {names}")
    return importlib.import_module(f"experiments.tasks.{task}")


def machine_memory() -> float:
    """Bytes of memory of this machine (Linux/Unix ``sysconf``)."""
    return float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def budget_of(cfg: DictConfig | Mapping[str, Any]) -> Budget:
    """The job's ``Budget`` from ``budget.*`` (defaults: half the machine, 24 hours)."""
    node = node_of(cfg, "budget") or {}
    fraction, gb, hours = (node.get(k) for k in ("memory_fraction", "memory_gb", "hours"))
    fraction = 0.5 if fraction is None else fraction
    check_probability("budget.memory_fraction", fraction, open_low=True)
    if gb is not None:
        memory = check_number("budget.memory_gb", gb, minimum=0, open_low=True) * 1e9
        source = f" (budget.memory_gb={gb:g}"
    else:
        memory = fraction * machine_memory()
        source = f" (budget.memory_fraction={fraction:g} of this machine's memory"
    if hours is not None:
        hours = check_number("budget.hours", hours, minimum=0, open_low=True)
    source += "; budget.hours=" + ("null" if hours is None else f"{hours:g}") + ")"
    return Budget(memory, None if hours is None else hours * 3600.0, source)


def validate(cfg: DictConfig | Mapping[str, Any]) -> Any:
    """Check every value of a job's config; return the scenario (None for other tasks):
    ``validate_job`` without the budget."""
    return validate_job(cfg)[0]


def validate_job(cfg: DictConfig | Mapping[str, Any]) -> tuple[Any, Budget]:
    """Check every value of a job's config; return ``(scenario, budget)`` (the scenario
    None for other tasks; ``budget``: ``budget_of``).

    A task module may define ``validate_config(cfg)`` (raising ``ParameterError``) to have
    its own keys checked here too, before any run exists. Raises ``ParameterError``
    naming the key, the value and what is allowed. Every group that is set is checked,
    whether this job reads it or not: a bad value is a mistake wherever it is. A
    scenario's own estimate of its memory and time must fit ``budget.*`` (``budget_of``).
    """
    task = cfg.get("task")
    check_choice("task", task, task_names())
    check_choice("progress", cfg.get("progress"), PROGRESS_MODES)
    workers = cfg.get("workers", "auto")
    if str(workers) != "auto" and not (str(workers).isdigit() and int(str(workers)) >= 1):
        raise ParameterError("workers", workers, "auto or an integer >= 1")
    check_int("seed", cfg.get("seed"), minimum=0)
    tracking = cfg.get("tracking")
    if tracking is not None:  # absent in a bare scenario config
        check_experiment_name(tracking.get("experiment"))
    budget = budget_of(cfg)
    for group in GROUP_BUILDERS:  # every group set, read by this job or not
        build_group(cfg, group)
    if task != SCENARIO_TASK:
        check = getattr(task_module(task), "validate_config", None)
        if check is not None:  # the task's own keys (e.g. llm_replay's llm and replay)
            check(cfg)
        return None, budget
    scenario = build_scenario(cfg)
    try:
        scenario.check_budget(budget)
    except ParameterError as exc:
        raise ParameterError(f"scenario.{exc.field}", exc.value, exc.allowed) from None
    return scenario, budget
