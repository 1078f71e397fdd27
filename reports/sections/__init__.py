"""Report sections, one module each: a function ``(sweep, options) -> Section | None``
registered with ``@report_section(name, order)``. ``build_report`` asks every registered
section, in order, for what it has to say about a sweep (None: nothing). A new scenario
family's section is one new module here; it is found without editing any list.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reports.document import Section
    from reports.options import ReportOptions
    from reports.source import Sweep

Builder = Callable[["Sweep", "ReportOptions"], "Section | None"]


@dataclass(frozen=True)
class ReportSection:
    """A registered section: its name, where it goes (lower first) and its builder."""

    name: str
    order: int
    build: Builder


_SECTIONS: dict[str, ReportSection] = {}


def report_section(name: str, order: int) -> Callable[[Builder], Builder]:
    """Register the decorated builder as section ``name`` at position ``order``."""

    def register(build: Builder) -> Builder:
        _SECTIONS[name] = ReportSection(name, order, build)
        return build

    return register


def sections() -> list[ReportSection]:
    """Every section (after importing this package's modules), in report order."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    return sorted(_SECTIONS.values(), key=lambda s: (s.order, s.name))
