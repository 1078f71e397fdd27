"""A logged param read back: MLflow stores every param as a string (issue 24 item 3).

``parse_param`` is the one reading of those strings, shared by the sweep's finalize step
(``experiments.answers``, which computes the design answers from the runs it logged) and
the report (``reports.source``, which reads them): both see the same values.
``unset_phrase`` gives the words an unset scenario field stands for (``p0 known``).
"""

from __future__ import annotations

import math


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
