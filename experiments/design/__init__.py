"""Design tools: ``python -m experiments.design <question> [options]``.

Each module of this package is one question (``gate``, ``explore``, ``rule``, ...): it
defines ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int`` (print the
answer, return the exit status), and calls the engine's own exact design functions
(numpy/scipy, ``procmem_core``), so an agent can ask the same question in code. The
command finds the modules by itself.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def questions() -> dict[str, ModuleType]:
    """Every design question by name (the modules of this package)."""
    out = {}
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            out[info.name] = importlib.import_module(f"{__name__}.{info.name}")
    return dict(sorted(out.items()))
