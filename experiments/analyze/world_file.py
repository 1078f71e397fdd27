"""Reading a fitted world (``world.json``, written by ``python -m experiments.analyze``)
for the design questions' ``--world``; a file without what they need is refused naming
the field."""

from __future__ import annotations

import json
from pathlib import Path

from procmem_core.errors import ParameterError
from procmem_core.logs.world import Param


def load_world(path: str | Path) -> dict:
    """``{"rates": {"mean": Param, "concentration": Param}, "lifts": {"mean", "sd"},
    "users": {"user_sd", "icc"}}`` (the last two when fitted) from ``world.json``
    (an SE written null, unknown, becomes NaN: the draws then keep the estimate)."""
    p = Path(path)
    try:
        data = json.loads(p.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ParameterError("--world", str(p), f"a world.json file ({exc})") from None
    out: dict = {}
    parts = (("rates", ("mean", "concentration")), ("lifts", ("mean", "sd")),
             ("users", ("user_sd", "icc")))  # fmt: skip
    for part, names in parts:
        if part not in data:
            if part == "rates":
                raise ParameterError("--world", str(p), "a world.json with 'rates'")
            continue
        out[part] = {}
        for name in names:
            field = data[part].get(name)
            if not isinstance(field, dict) or not isinstance(field.get("value"), int | float):
                raise ParameterError(f"{part}.{name}", field, "{'value': number, 'se': number}")
            se = field.get("se")
            out[part][name] = Param(float(field["value"]), float("nan") if se is None else se)
    return out
