"""Reading a fitted world (``world.json``, written by ``python -m experiments.analyze``)
for the design questions' ``--world`` and ``users=fitted``; a file that is missing, not a
world.json of the supported version, or without a parameter the caller needs is refused
before any work, naming the file, the field and what is allowed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from procmem_core.errors import ParameterError, is_number
from procmem_core.logs.world import Param

WORLD_VERSION = 1
"""The ``schema_version`` of world.json: written by ``experiments.analyze``, read here."""
PARTS = {
    "rates": ("mean", "concentration"),
    "lifts": ("mean", "sd"),
    "users": ("user_sd", "icc", "cluster_size"),
    "ratings": ("missing_rate", "delay_mean"),
}
"""The parameters read, by part (the rest of the file is for reading, not for the tools)."""
RATES = ("rates.mean", "rates.concentration")
"""What the bootstrap of the fitted rates needs (``procmem_core.logs.prescribe.draws``)."""
PARAM = "{'value': number, 'se': number or null}"


def _read(p: Path) -> dict:
    """The file's JSON object of the supported version, else a ``ParameterError``."""
    what = f"a world.json written by python -m experiments.analyze (schema_version {WORLD_VERSION})"
    try:
        data = json.loads(p.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ParameterError("--world", str(p), f"{what} ({p}: {exc})") from None
    if not isinstance(data, dict):  # the path in full: a quoted value is cut at 80 characters
        raise ParameterError("--world", str(p), f"{what} ({p}: not a JSON object)")
    version = data.get("schema_version")
    if isinstance(version, bool) or version != WORLD_VERSION:
        raise ParameterError(f"--world {p}: schema_version", version, f"{WORLD_VERSION}")
    return data


def _param(p: Path, data: dict, part: str, name: str) -> Param | None:
    """``part.name`` as a ``Param`` (None when absent; an SE written null becomes NaN)."""
    group = data.get(part)
    if group is not None and not isinstance(group, dict):
        raise ParameterError(f"--world {p}: {part}", group, "an object of parameters")
    if group is None or name not in group:
        return None
    field = group[name]
    value = field.get("value") if isinstance(field, dict) else None
    se = field.get("se", None) if isinstance(field, dict) else None
    if not is_number(value) or not (se is None or is_number(se)):
        raise ParameterError(f"--world {p}: {part}.{name}", field, PARAM)
    return Param(float(value), float("nan") if se is None else float(se))


def load_world(path: str | Path, needs: tuple[str, ...] = RATES) -> dict:
    """``{"rates": {"mean", "concentration"}, "lifts": {"mean", "sd"}, "users":
    {"user_sd", "icc", "cluster_size"}, "ratings": {"missing_rate", "delay_mean"}}`` of
    ``Param`` (the parts and names present) from ``world.json``; every
    ``part.name`` in ``needs`` must be there (a world fitted to logs without withheld
    sessions has no ``lifts``, one without ``user_id`` no ``users``)."""
    p = Path(path)
    data = _read(p)
    out: dict = {}
    for part, names in PARTS.items():
        for name in names:
            param = _param(p, data, part, name)
            if param is not None:
                out.setdefault(part, {})[name] = param
    for need in needs:
        part, name = need.split(".")
        if name not in out.get(part, {}):
            raise ParameterError(f"--world {p}: {need}", None,
                                 f"{PARAM}; this question needs {', '.join(needs)}")  # fmt: skip
    return out


def world_draws(world: dict, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The parametric bootstrap of the fitted rates every ``--world`` question uses:
    ``procmem_core.logs.prescribe.draws`` (``DRAWS`` draws of the mean and concentration),
    from ``SeedSequence(seed)``."""
    from procmem_core.logs.prescribe import draws

    return draws(world["rates"], np.random.default_rng(np.random.SeedSequence(seed)))


def world_bases(world: dict, seed: int = 0) -> np.ndarray:
    """The withheld success rate at each of ``world_draws``' draws, as the analysis's
    flat-rule prescription draws it (``procmem_core.logs.prescribe.base_draws``, from the
    same generator after the rates)."""
    from procmem_core.logs.prescribe import base_draws, draws

    rng = np.random.default_rng(np.random.SeedSequence(seed))
    ms, _ = draws(world["rates"], rng)
    return base_draws(world, ms, rng)


def world_parameter_draws(world: dict, seed: int = 0) -> dict[str, np.ndarray]:
    """Every fitted parameter's draws (``procmem_core.logs.prescribe.parameter_draws``)
    from ``SeedSequence(seed)``: its rates and bases are ``world_draws``' and
    ``world_bases``'."""
    from procmem_core.logs.prescribe import parameter_draws

    return parameter_draws(world, np.random.default_rng(np.random.SeedSequence(seed)))
