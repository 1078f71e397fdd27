"""A job's config read once: ``build_spec(cfg, ctx)`` -> a validated, frozen ``JobSpec``.

This is the one module that turns a job's composed config into what the job does, in
one pass and before any work (no MLflow run, no store, no simulation yet):

1. ``experiments.build.validate_job`` checks every value and builds the scenario (a
   ``ParameterError`` names the full config key: ``gate.alpha``, ``scenario.sessions``);
2. ``experiments.identity`` turns the plain config into the job's identity: the groups it
   reads, the config hash, the job's seed, the flattened params;
3. the run's name, its tags and its tracking target (the experiment, the store, the
   sweep's parent run) from the identity and the job's runtime context (``JobContext``);
4. how it runs: workers, progress bar, ``resume``, the budget.

``experiments.job`` then reads only the spec (``run_spec``): it runs ``spec.scenario``
at ``spec.job_seed`` (or the task) and logs ``spec.params``, ``spec.tags`` and the result
to ``spec.tracking``. ``experiments.plan`` builds every job's spec before a sweep starts.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any

from omegaconf import DictConfig, OmegaConf

from experiments import tracking as tr
from experiments.build import groups_read, task_module, used_groups, validate_job
from experiments.calcache import DEFAULT_CACHE, use_cache
from experiments.identity import (
    SCENARIO_TASK,
    digest,
    flatten,
    git_commit,
    identity_of,
    job_container,
    job_seed,
    package_versions,
    run_name,
    seed_digest,
)
from procmem_core.errors import ParameterError
from simulators.parallel import available_cores
from simulators.scenarios.base import Budget, unset_phrase

ADDED_PREFIX = "++tracking."
"""Overrides the sweep callback adds to every job (left out of what the runs show as theirs)."""

SHOWN_OVERRIDES = ("experiment=", "tracking.", "++tracking.", "hydra", "progress=", "resume=")
"""Command-line keys that never name a single run (how it runs, not what it computes)."""


@dataclass
class JobContext:
    """Where and how a job runs (from Hydra's runtime config, or set by a benchmark)."""

    out_dir: Path
    multirun: bool = False
    sweep_dir: str | None = None
    job_num: int = 0
    overrides: list[str] = field(default_factory=list)
    concurrent_jobs: int = 1


@dataclass(frozen=True)
class TrackingTarget:
    """Where the job's run is logged: the MLflow ``experiment``, the configured store
    ``uri`` (None: ``$MLFLOW_TRACKING_URI`` or the repo's), the sweep's ``parent`` run
    (None for a single run) and whether figures are drawn."""

    experiment: str
    uri: str | None
    parent: str | None
    figures: bool


@dataclass(frozen=True)
class JobSpec:
    """One job, validated and frozen: what it runs, who it is, where it is logged.

    ``scenario`` is the built scenario (None for a task, then ``task`` names
    ``task_module``, which reads ``task_config``: the job's config, read-only);
    ``groups`` the config groups it reads; ``identity`` the part of the config that
    determines its numbers and ``config_hash`` its hash; ``job_seed`` the seed drawn
    from ``seed`` and the hash; ``params`` the flattened identity and ``resume`` (what the
    run logs); ``config`` the whole resolved config (``config.yaml``).
    """

    task: str
    label: str
    scenario: Any
    task_module: ModuleType | None
    task_config: DictConfig | None
    groups: tuple[str, ...]
    identity: Mapping[str, Any]
    config_hash: str
    seed: int
    job_seed: int
    params: Mapping[str, str]
    name: str
    tags: Mapping[str, str]
    tracking: TrackingTarget
    budget: Budget
    workers: int
    progress: str
    resume: bool
    config: Mapping[str, Any]


def build_spec(cfg: DictConfig | Mapping[str, Any], ctx: JobContext | None = None) -> JobSpec:
    """Validate ``cfg`` and read it, once, into a ``JobSpec`` (``ctx``: how the job is
    run; None for a single run with no overrides). Raises ``ParameterError`` naming the
    full key before any work."""
    ctx = ctx or JobContext(out_dir=Path.cwd())
    use_cache(cfg.get("calibration_cache", DEFAULT_CACHE))  # before the gate is built
    scenario, budget = validate_job(cfg)
    config = job_container(cfg)
    task = str(config["task"])
    label = str(config["scenario"]["name"]) if task == SCENARIO_TASK else task
    groups = groups_read(task, type(scenario) if scenario is not None else None)
    identity = identity_of(config, groups)
    hashed = digest(identity)
    unseeded = getattr(type(scenario), "unseeded", ())
    seed = job_seed(int(config["seed"]), seed_digest(identity, unseeded))
    params = flatten(identity | {"resume": config.get("resume")})
    tracking = tracking_target(config, ctx)
    tags = run_tags(config, ctx, label, hashed, seed)
    if tracking.parent is not None:
        tags[tr.TAG_PARENT] = tracking.parent
    module = None if task == SCENARIO_TASK else task_module(task)
    return JobSpec(
        task=task,
        label=label,
        scenario=scenario,
        task_module=module,
        task_config=None if module is None else read_only(cfg),
        groups=tuple(groups),
        identity=MappingProxyType(identity),
        config_hash=hashed,
        seed=int(config["seed"]),
        job_seed=seed,
        params=MappingProxyType(params),
        name=job_name(config, ctx, label, params),
        tags=MappingProxyType(tags),
        tracking=tracking,
        budget=budget,
        workers=job_workers(config.get("workers", "auto"), ctx.concurrent_jobs),
        progress="off" if ctx.multirun else str(config.get("progress")),
        resume=bool(config.get("resume")),
        config=MappingProxyType(config),
    )


def read_only(cfg: DictConfig | Mapping[str, Any]) -> DictConfig:
    """A read-only copy of the job's config, for a task's ``run_task``."""
    frozen = copy.deepcopy(cfg) if isinstance(cfg, DictConfig) else OmegaConf.create(dict(cfg))
    OmegaConf.set_readonly(frozen, True)
    return frozen


def identity_container(cfg: DictConfig | Mapping[str, Any]) -> dict[str, Any]:
    """The identity of any config, validated or not (``identity.identity_of`` over
    ``job_container`` and ``build.used_groups``): what ``JobSpec.identity`` holds."""
    return identity_of(job_container(cfg), used_groups(cfg))


def config_hash(cfg: DictConfig | Mapping[str, Any]) -> str:
    """The config hash of any config, validated or not: ``JobSpec.config_hash``."""
    return digest(identity_container(cfg))


def tracking_target(config: Mapping[str, Any], ctx: JobContext) -> TrackingTarget:
    """The job's ``TrackingTarget`` from ``tracking.*``; a sweep's job must have
    ``tracking.parent`` (the sweep callback, ``experiments.callbacks.SweepTracking``,
    passes it to every job)."""
    node = config.get("tracking") or {}
    parent = node.get("parent") if ctx.multirun else None
    if ctx.multirun and not parent:
        raise ParameterError(
            "tracking.parent",
            parent,
            "the sweep's parent run id: a sweep's jobs get it from the sweep callback "
            "(hydra.callbacks.tracking: experiments.callbacks.SweepTracking)",
        )
    uri = node.get("uri")
    return TrackingTarget(
        experiment=str(node.get("experiment")),
        uri=None if uri is None else str(uri),
        parent=None if parent is None else str(parent),
        figures=bool(node.get("figures")),
    )


def own_overrides(overrides: Sequence[str]) -> list[str]:
    """The overrides without the ones the sweep callback added (``ADDED_PREFIX``)."""
    return [o for o in overrides if not o.startswith(ADDED_PREFIX)]


def job_name(
    config: Mapping[str, Any], ctx: JobContext, label: str, params: Mapping[str, str]
) -> str:
    """The run's name: what tells it apart from the other jobs of its sweep (the keys the
    sweep callback passes as ``tracking.vary``), or, for a single run, the values given
    on the command line (``identity.run_name``)."""
    vary = (config.get("tracking") or {}).get("vary")
    if vary is None:
        keys = [o.split("=", 1)[0].lstrip("+~") for o in ctx.overrides if "=" in o]
        vary = [k for k in keys if not k.startswith(SHOWN_OVERRIDES)]
    return run_name(label, params, list(vary))


def run_tags(
    config: Mapping[str, Any], ctx: JobContext, label: str, hashed: str, seed: int
) -> dict[str, str]:
    """The run's tags (docs/experiments.md, "Tracking"), without the parent's."""
    commit, dirty = git_commit()
    return {
        tr.TAG_ROLE: "child" if ctx.multirun else "single",
        tr.TAG_HASH: hashed,
        tr.TAG_SCENARIO: label,
        "procmem.task": str(config["task"]),
        tr.TAG_SEED: str(config["seed"]),
        tr.TAG_JOB_SEED: str(seed),
        tr.TAG_PRESET: str((config.get("tracking") or {}).get("experiment")),
        tr.TAG_OVERRIDES: " ".join(own_overrides(ctx.overrides)),
        "procmem.job_num": str(ctx.job_num),
        tr.TAG_COMMIT: commit,
        "procmem.git_dirty": str(dirty).lower(),
        "procmem.versions": package_versions(),
        **unset_tags(config),
    }


def unset_tags(config: Mapping[str, Any]) -> dict[str, str]:
    """``procmem.<field>``: what an unset scenario field means, in words, where the
    scenario says (``unset_phrase``: an unset ``ledger_size`` is ``p0 known``), so a run
    whose params read ``gate.prior=plugin, scenario.ledger_size=None`` says what it is."""
    node = config.get("scenario")
    if not isinstance(node, Mapping):
        return {}
    out = {}
    for key in node:
        words = unset_phrase(str(key)) if node.get(key) is None else None
        if words is not None:
            out[f"procmem.{key}"] = words
    return out


def job_workers(setting: Any, concurrent_jobs: int = 1) -> int:
    """Processes a job spreads its chunks over: ``workers`` (an integer, or ``auto``: the
    cores the job was given, i.e. this process's cores over the jobs that run at once).
    The numbers do not depend on it (``simulators.parallel``)."""
    if str(setting) == "auto":
        return max(1, available_cores() // max(1, concurrent_jobs))
    try:
        value = int(str(setting))
    except ValueError:
        value = 0
    if value < 1:
        raise ParameterError("workers", setting, "auto or an integer >= 1")
    return value
