"""A logged param read back: MLflow stores every param as a string (issue 24 item 3).

``parse_param`` is the one reading of those strings, shared by the sweep's finalize step
(``experiments.answers``, which computes the design answers from the runs it logged) and
the report (``reports.source``, which reads them): both see the same values.
``unset_phrase`` gives the words an unset scenario field stands for (``p0 known``).
``row_value`` and ``rule_from_params`` read a run's flat rule back from its ``rule.*``
params, ``gate_from_params`` its gate from its ``gate.*`` params, and ``rule_key`` names a
rule in the sweep's answers, for both of them too. ``parse_name`` and ``figure_name`` are
the calibration blocks' metric names, ``CHECK_FIELDS`` the fields that only say how a run
checks its standard errors.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from procmem_core.errors import ProcmemError
from procmem_core.flat import DEFAULT_FILTER, DEFAULT_RULE, FLAT_RULES, FlatRule
from procmem_core.gates import GATES, Gate, make_gate


def parse_param(text: object) -> object:
    """An MLflow param string back to a Python value: int, float, bool, None or the text
    (``"none"``, ``"null"``, ``"~"``, ``""`` and NaN are None)."""
    if not isinstance(text, str):
        return text
    low = text.strip().lower()
    if low in ("none", "null", "~", ""):
        return None
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return text
    return value if not math.isnan(value) else None


UNSET_WORDS: dict[str, str] = {"ledger_size": "p0 known"}
"""What an unset scenario field means, in words, for the report's labels: the scenarios'
own ``unset_words`` (``simulators.scenarios``; ``GateScenario``: no prior ledger, the gate
is given the true rate), copied here so a report reads them without importing a scenario
(``tests/reports/test_reports_only_read.py`` checks the copy equals them)."""


def unset_phrase(field: str) -> str | None:
    """The words for the scenario field ``field`` (a config key's last part) when unset,
    or None (``UNSET_WORDS``)."""
    return UNSET_WORDS.get(field)


def row_value(row: Mapping[str, Any], column: str | None) -> object:
    """A param's value in a row of runs (None when missing or NaN; a whole float back to
    an int, since a column with missing values is float)."""
    if column is None:
        return None
    v = row.get(column)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return int(v) if isinstance(v, float) and v.is_integer() and abs(v) >= 1 else v


def gate_from_params(value: Callable[[str], object]) -> Gate | None:
    """The gate a run used, rebuilt by the registry from its logged params; ``value(field)``
    is its parsed ``gate.<field>`` (None when not logged: the gate's default). None when
    the name is not registered or the values do not build a gate."""
    name = value("name")
    if name not in GATES:
        return None
    params = {}
    for f in dataclasses.fields(GATES[name]):
        v = value(f.name)
        if v is None:
            continue
        integral = "int" in str(f.type) and "float" not in str(f.type)
        if integral and isinstance(v, float) and v.is_integer():
            v = int(v)  # a column of ints with gaps is read back as floats
        params[f.name] = v
    try:
        return make_gate(name, **params)
    except (ProcmemError, TypeError):
        return None


def rule_from_params(value: Callable[[str], object]) -> tuple[FlatRule, float, int]:
    """``(rule, threshold, limit)`` of a run; ``value(field)`` is its logged ``rule.<field>``
    (None when not logged: the engine's default)."""
    name = value("name") or DEFAULT_RULE.name
    cls = FLAT_RULES.get(name, "rule.name")
    params = {}
    for f in dataclasses.fields(cls):
        v = value(f.name)
        if f.init and v is not None:
            params[f.name] = float(v) if isinstance(v, int | float) else v
    t, k = value("threshold"), value("limit")
    threshold = DEFAULT_FILTER.threshold if t is None else float(t)
    limit = DEFAULT_FILTER.limit if k is None else int(k)
    return FLAT_RULES.build(name, **params), threshold, limit


def rule_key(rule: FlatRule) -> dict:
    """A flat rule as the sweep's answers name it: its registry name and init fields."""
    fields = {f.name: getattr(rule, f.name) for f in dataclasses.fields(rule) if f.init}
    return {"name": rule.name, "fields": fields}


# The calibration blocks' logged names (``simulators.calibration_blocks`` writes them, the
# report's calibration check reads them): one convention, read by both.
CHECK_FIELDS = ("calibration_blocks", "calibration_replications")
"""The scenario fields that say how a run checks its standard errors, not what world it
simulates: run names, sweep factors and world tables leave them out."""

CALIBRATION_NAME = re.compile(r"^cal(\d+)_(\w+)_s(\d+)$")


@dataclass(frozen=True)
class CalibrationFigure:
    """One calibration figure: ``metric`` of the scenario run over ``sessions`` sessions."""

    metric: str
    sessions: int


def figure_name(index: int, figure: CalibrationFigure) -> str:
    """The logged name of block ``index``'s figure: ``cal07_p_excluded_s12``."""
    return f"cal{index:02d}_{figure.metric}_s{figure.sessions}"


def parse_name(name: str) -> tuple[int, CalibrationFigure] | None:
    """``(index, CalibrationFigure)`` of a calibration metric's name (without ``_se``/``_exact``),
    else None."""
    m = CALIBRATION_NAME.match(name)
    if m is None:
        return None
    return int(m.group(1)), CalibrationFigure(m.group(2), int(m.group(3)))
