"""What identifies a job: its flattened config, its config hash and the seed derived from both.

A job's identity is the part of the resolved config it reads (the task, the seed, its
scenario and the groups that feed it), never the keys that say *how* it is run
(``resume``, ``progress``, ``tracking``, ``budget``) nor the ``hydra`` node. The
config hash is the first 16 hex digits of SHA-256 over that config as canonical JSON, so
it is the same whatever the launcher, the job order, the output folder or the machine.

The job's seed is drawn from ``numpy.random.SeedSequence([seed, *hash words])``: the
configured seed and the config hash together, never the job number (docs/statistics.md,
"Monte Carlo hygiene").

Everything here is a function of plain data (``job_container`` turns a config into it):
``experiments.spec`` reads a job's config once and calls these to build its ``JobSpec``.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, ListConfig, OmegaConf

from procmem_core.logged import CHECK_FIELDS
from simulators.scenarios.base import unset_phrase

RUN_CONTROL_KEYS = ("resume", "progress", "tracking", "budget", "workers")
"""Top-level keys that change how a job runs, not what it computes (left out of the hash)."""

SCENARIO_TASK = "scenario"
"""The task of a job that runs a scenario (``experiments.build`` names the others)."""

PARAM_VALUE_LIMIT = 6000
"""MLflow's longest param value; longer values are cut (the full config is an artifact)."""

ROOT = Path(__file__).resolve().parents[1]


def job_container(cfg: DictConfig | Mapping[str, Any]) -> dict[str, Any]:
    """The resolved config as plain containers, without ``hydra``."""
    data = {}
    for key in cfg:
        if key == "hydra":  # Hydra's own node holds job-only interpolations
            continue
        value = cfg[key]
        if isinstance(value, DictConfig | ListConfig):
            value = OmegaConf.to_container(value, resolve=True, throw_on_missing=True)
        data[str(key)] = value
    return data


HASHED_WHEN_SET = (("users", "world"), ("feedback", "informative_missing"))
"""Optional nodes added after jobs were first logged: hashed only when set, so adding
one (a fitted world, a feedback channel) keeps every existing job's identity and seed."""


def identity_of(config: Mapping[str, Any], groups: Sequence[str]) -> dict[str, Any]:
    """The part of a job's plain config (``job_container``) that determines its numbers:
    the task, the seed, the ``scenario`` node (for a scenario job) and the ``groups`` it
    reads (``experiments.build.groups_read``); a group the job does not read cannot
    change its numbers, so it is left out."""
    data = dict(config)
    for group, key in HASHED_WHEN_SET:  # unset: the job hashes as before the node existed
        node = data.get(group)
        if isinstance(node, dict) and node.get(key) is None:
            data[group] = {k: v for k, v in node.items() if k != key}
    keep = {"task", "seed", *groups}
    if data.get("task") == SCENARIO_TASK:
        keep.add("scenario")
    return {k: v for k, v in data.items() if k in keep and k not in RUN_CONTROL_KEYS}


def digest(identity: Mapping[str, Any]) -> str:
    """The config hash: 16 hex digits of SHA-256 over ``identity`` as sorted, compact JSON."""
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def seed_digest(identity: Mapping[str, Any], unseeded: Sequence[str]) -> str:
    """The digest a job's seed is drawn from: ``identity``'s without the scenario fields
    ``unseeded`` (``Scenario.unseeded``: added after the scenario's jobs were first
    logged, changing none of a run's own numbers), so every existing job keeps its seed
    while its config hash, which says what the run logged, takes them in."""
    node = identity.get("scenario")
    if not unseeded or not isinstance(node, Mapping):
        return digest(identity)
    kept = {k: v for k, v in node.items() if k not in unseeded}
    return digest({**identity, "scenario": kept})


def job_seed(seed: int, digest: str) -> int:
    """A 63-bit seed from the configured ``seed`` and the config hash ``digest``.

    ``SeedSequence([seed, w0, w1])`` with ``w0, w1`` the two 32-bit words of the hash,
    then its first 64 random bits with the top bit cleared (a non-negative int).
    """
    words = [int(digest[i : i + 8], 16) for i in range(0, len(digest), 8)]
    state = np.random.SeedSequence([int(seed), *words]).generate_state(2, dtype=np.uint32)
    return int(((int(state[0]) << 32) | int(state[1])) & ((1 << 63) - 1))


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": "1"}``; lists become JSON; values cut at the limit."""
    out: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, f"{name}."))
            continue
        text = json.dumps(value) if isinstance(value, list | tuple | Mapping) else str(value)
        out[name] = text[:PARAM_VALUE_LIMIT]
    return out


@cache
def git_commit(root: Path = ROOT) -> tuple[str, bool]:
    """``(commit, dirty)``: the checked-out commit (``unknown`` outside git), uncommitted edits."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown", False
    if head.returncode != 0:
        return "unknown", False
    return head.stdout.strip(), bool(status.returncode == 0 and status.stdout.strip())


ACRONYMS = {"sprt": "SPRT", "ipw": "IPW", "aipw": "AIPW", "dim": "DiM", "ht": "HT", "llr": "LLR"}
"""Values written as their acronym in run names."""
EMPTY = ("None", "null", "")


NAME_DIGITS = 4
"""Significant digits of a float in a run name (a search's 0.056099363343358924 reads
0.0561); the params keep every digit."""


def _word(value: str) -> str:
    """A value as a run name writes it: acronyms (``ACRONYMS``), and a float with more
    than ``NAME_DIGITS`` significant digits rounded to them."""
    try:
        number = float(value)
    except ValueError:
        return ACRONYMS.get(value.lower(), value)
    digits = value.lstrip("-+0.").replace(".", "").split("e")[0].split("E")[0]
    if "." in value and len(digits) > NAME_DIGITS and number == number:
        return f"{number:.{NAME_DIGITS}g}"
    return value


def run_name(label: str, params: Mapping[str, str], vary: Sequence[str]) -> str:
    """What a run is, in words: ``gate: SPRT, ledger size 20``.

    ``label`` is the scenario (or task); ``params`` the job's flattened identity; ``vary``
    the param keys that tell the jobs of a sweep apart (``varying_keys``: ``label:key``
    for the jobs of one label, a bare ``key`` for any). A group's ``name`` is written as
    its value, any other key as its last part and the value; a scenario field left unset
    as the scenario's words for it (``unset_phrase``: "p0 known"); other keys the job does
    not have, or has unset, are left out.
    """
    parts = []
    for entry in vary:
        owner, _, key = entry.rpartition(":")
        value = params.get(key)
        if owner and owner != label:
            continue
        leaf = key.rsplit(".", 1)[-1]
        if value is None or value in EMPTY:
            words = unset_phrase(leaf) if key.startswith("scenario.") else None
            if words is not None and key in params:
                parts.append(words)
            continue
        parts.append(_word(value) if leaf == "name" else f"{leaf.replace('_', ' ')} {_word(value)}")
    return f"{label}: {', '.join(parts)}" if parts else label


def varying_keys(jobs: Sequence[tuple[str, Mapping[str, str]]]) -> list[str]:
    """``label:key`` for each param key that tells apart the jobs of one label (scenario),
    over ``(label, flattened params)`` pairs: it takes two or more values, or some jobs
    have it and others do not (a feedback channel switched on), unless a group ``name``
    that varies explains that (an SPRT's alpha beside a margin gate), and never for the
    fields that only say how a run checks its SEs (``CHECK_FIELDS``). Names first."""
    by_label: dict[str, list[Mapping[str, str]]] = {}
    for label, params in jobs:
        by_label.setdefault(label, []).append(params)
    out = []
    for label, group in by_label.items():
        keys = sorted({k for params in group for k in params})
        seen = {k: [params.get(k) for params in group] for k in keys}
        named = {k.rsplit(".", 1)[0] for k in keys if k.endswith(".name") and len(set(seen[k])) > 1}
        for key in keys:
            if key.rsplit(".", 1)[-1] in CHECK_FIELDS:
                continue  # how the run checks its SEs, not what it is
            values = seen[key]
            partial = None in values and key.split(".", 1)[0] not in named
            if len(set(v for v in values if v is not None)) > 1 or (partial and len(group) > 1):
                out.append(f"{label}:{key}")
    return sorted(out, key=lambda e: (not e.endswith(".name"), e))


VERSIONED = ("procmem", "numpy", "scipy", "pandas", "mlflow", "hydra-core", "omegaconf")
"""The packages whose versions a run records (tag ``procmem.versions``)."""


@cache
def package_versions() -> str:
    """``name version`` of the packages that can change a run's numbers or its records,
    and Python's, comma-separated."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    found = [f"python {platform.python_version()}"]
    for name in VERSIONED:
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} not installed")
    return ", ".join(found)
