"""A sweep as planned before launch: every job's overrides and config, checked.

Everything here runs in the launching process before any MLflow run exists, so a
mistake stops the command with one line: a bad value (the key, the value and what is
allowed, with the job's overrides), a sweep that expands to no job, a launcher told to
run 0 jobs at a time, a sweep folder that cannot be written. ``preset_question`` reads a
preset's question from its header comment (the parent run's description).
"""

from __future__ import annotations

import copy
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf

from experiments.identity import ROOT, flatten, run_name, varying_keys
from experiments.spec import JobSpec, build_spec
from procmem_core.errors import ParameterError, check_int

BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"
PRESETS = ROOT / "conf" / "experiment"


@dataclass
class PlannedJob:
    """One job of the sweep as planned before launch."""

    num: int
    overrides: list[str]
    config_hash: str
    label: str  # the scenario or task name
    params: dict[str, str]  # the flattened identity (``identity.flatten(JobSpec.identity)``)
    skipped_by: str | None = None  # the finished run that makes resume skip it
    name: str = ""  # the run's name (``identity.run_name``)
    status: str = "planned"  # then finished, failed, skipped or missing
    run_id: str | None = None
    reason: str = ""  # why it did not finish


def sweep_params(config: DictConfig) -> dict[str, str]:
    """The preset's ``hydra.sweeper.params`` as ``{key: sweep expression}``."""
    params = OmegaConf.select(config, "hydra.sweeper.params")
    return {} if params is None else dict(OmegaConf.to_container(params, resolve=False))


def sweep_overrides(config: DictConfig) -> list[list[str]]:
    """Every job's overrides, in the order the basic sweeper launches them."""
    target = OmegaConf.select(config, "hydra.sweeper._target_")
    if target != BASIC_SWEEPER:
        raise ParameterError(
            "hydra.sweeper._target_", target, f"the basic sweeper ({BASIC_SWEEPER})"
        )
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    arguments = [f"{k}={v}" for k, v in sweep_params(config).items()]
    arguments += list(OmegaConf.to_container(config.hydra.overrides.task, resolve=False))
    loader = GlobalHydra.instance().config_loader()
    parsed = OverridesParser.create(config_loader=loader).parse_overrides(arguments)
    return BasicSweeper.split_arguments(parsed, None)[0]


def plan_jobs(config: DictConfig) -> list[tuple[list[str], JobSpec]]:
    """Compose every job's config and build its ``JobSpec`` (``experiments.spec``: the
    values checked, the identity derived, as the job itself will); raise on the first
    invalid one.

    Hydra composes a job from the defaults list (group choices such as ``gate=margin``)
    and then applies the value overrides (``gate.alpha=0.1``) to the result. Composing is
    slow (about 0.1-0.3 s), so each distinct set of group choices is composed once and
    the value overrides are applied to a copy of its job part (without ``hydra``) with
    Hydra's own function: the same job config Hydra will build, in milliseconds.
    """
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    loader = GlobalHydra.instance().config_loader()
    parser = OverridesParser.create(config_loader=loader)
    composed: dict[tuple[str, ...], DictConfig] = {}
    is_group: dict[str, bool] = {}
    planned = []
    for overrides in sweep_overrides(config):
        parsed = parser.parse_overrides(list(overrides))
        for o in parsed:
            if o.key_or_group not in is_group:  # the look-up is slow: once per key
                is_group[o.key_or_group] = bool(loader.get_group_options(o.key_or_group))
        groups = [o for o in parsed if is_group[o.key_or_group] or o.key_or_group[:5] == "hydra"]
        values = [o for o in parsed if o not in groups]
        choice = tuple(o.input_line for o in groups)
        if choice not in composed:
            full = loader.load_sweep_config(master_config=config, sweep_overrides=list(choice))
            composed[choice] = OmegaConf.masked_copy(full, [k for k in full if k != "hydra"])
            OmegaConf.set_struct(composed[choice], True)
        job_cfg = copy.deepcopy(composed[choice])
        try:
            ConfigLoaderImpl._apply_overrides_to_config(values, job_cfg)
            spec = build_spec(job_cfg)
        except ParameterError as exc:
            where = f"{exc.allowed} (sweep job: {' '.join(overrides) or 'no overrides'})"
            raise ParameterError(exc.field, exc.value, where) from None
        planned.append((list(overrides), spec))
    return planned


class ComposedOnce:
    """Hydra's config loader, composing each sweep job's config once per sweep.

    Hydra composes a job's config twice in the launching process (its sweeper's
    ``validate_batch_is_legal``, then the launcher), and the local launcher did it a
    third time in the job's process; a composition costs about 0.1-0.3 s of CPU. Here
    the first ``load_sweep_config`` for a job's overrides composes as Hydra does and
    keeps the result pickled; a later call for the same master config and overrides
    returns an unpickled copy (about 2 ms), so no caller shares an object another one
    changes (a launcher sets ``hydra.job.num`` on its copy). Pickled, this is the plain
    loader (a job process gets no cache). ``install_composed_once`` puts it in place.
    """

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.master: DictConfig | None = None
        self.composed: dict[tuple[tuple[str, ...], tuple[str, ...]], bytes] = {}

    def __getattr__(self, name: str) -> Any:
        if name == "loader":  # not set yet (an instance being built): no recursion
            raise AttributeError(name)
        return getattr(self.loader, name)

    def __reduce__(self) -> tuple:
        return (ComposedOnce, (self.loader,))

    def load_sweep_config(
        self, master_config: DictConfig, sweep_overrides: list[str]
    ) -> DictConfig:
        """The job's sweep config, as ``ConfigLoaderImpl.load_sweep_config`` composes it."""
        if master_config is not self.master:  # another sweep: nothing kept applies
            self.master, self.composed = master_config, {}
        hydra_overrides = OmegaConf.to_container(master_config.hydra.overrides.hydra)
        key = (tuple(hydra_overrides), tuple(sweep_overrides))
        if key in self.composed:
            return pickle.loads(self.composed[key])
        config = self.loader.load_sweep_config(master_config, list(sweep_overrides))
        self.composed[key] = pickle.dumps(config)
        return config


def install_composed_once() -> None:
    """Make the running Hydra compose each sweep job once (``ComposedOnce``): its sweeper
    and launcher take this loader when the sweep starts, after ``on_multirun_start``."""
    hydra = GlobalHydra.instance().hydra
    if hydra is not None and not isinstance(hydra.config_loader, ComposedOnce):
        hydra.config_loader = ComposedOnce(hydra.config_loader)


def planned_jobs(config: DictConfig) -> list[PlannedJob]:
    """``plan_jobs`` as ``PlannedJob`` records; refuses a sweep that expands to no job."""
    planned = plan_jobs(config)
    if not planned:
        swept = " ".join(f"{k}={v}" for k, v in sweep_params(config).items())
        given = [o for o in config.hydra.overrides.task if "," in o or "(" in o]
        raise ParameterError(
            "sweep",
            " ".join([swept, *given]).strip(),
            "a sweep of at least one job; these values expand to none (an empty range?)",
        )
    jobs = []
    for num, (overrides, spec) in enumerate(planned):
        params = flatten(spec.identity)
        jobs.append(PlannedJob(num, overrides, spec.config_hash, spec.label, params))
    vary = varying_keys([(job.label, job.params) for job in jobs])
    for job in jobs:
        job.name = run_name(job.label, job.params, vary)
    return jobs


def mark_skipped(jobs: list[PlannedJob], finished: dict[str, str]) -> int:
    """Jobs whose config hash has a FINISHED run (``resume=true``) are skipped; how many."""
    for job in jobs:
        job.skipped_by = finished.get(job.config_hash)
        if job.skipped_by:
            job.status, job.run_id = "skipped", job.skipped_by
    return sum(job.skipped_by is not None for job in jobs)


def check_launcher(config: DictConfig) -> None:
    """``hydra.launcher.n_jobs``, where the launcher has it: at least 1 (or -1, all cores)."""
    n_jobs = OmegaConf.select(config, "hydra.launcher.n_jobs")
    if n_jobs is not None and n_jobs != -1:
        check_int("hydra.launcher.n_jobs", n_jobs, minimum=1)


def check_writable(folder: Path, key: str = "hydra.sweep.dir") -> None:
    """Create ``folder`` and write a file in it, or raise naming the key and the reason."""
    probe = folder / f".procmem-write-check-{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise ParameterError(
            key, str(folder), f"a folder that can be written ({exc.strerror})"
        ) from None


def preset_question(preset: str) -> str:
    """The question a preset answers: its header comment, without the ``# @package``
    line, the preset's name and the example commands."""
    path = PRESETS / f"{preset}.yaml"
    if not path.is_file():
        return ""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("#").strip()
        if text.startswith(("@package", "python ", "Wider:")):
            continue
        lines.append(text)
    question = " ".join(lines).removeprefix(f"{preset}:").strip()
    return question[:1].upper() + question[1:]
