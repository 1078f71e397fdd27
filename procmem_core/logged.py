"""A logged param read back: MLflow stores every param as a string (issue 24 item 3).

``parse_param`` is the one reading of those strings, shared by the sweep's finalize step
(``experiments.answers``, which computes the design answers from the runs it logged) and
the report (``reports.source``, which reads them): both see the same values.
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
