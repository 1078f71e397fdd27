"""``GateRecord``: one gate decision as logged, one schema whoever writes it.

The store writes one record per gate per deciding evolve (``graph.revision``); the gate
scenario writes the same columns for every simulated replication (plus the truth it
knows: ``replication``, ``true_drop``, ...). ``DECISION_COLUMNS`` is the order of the
columns of every ``gate_decisions`` table.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from procmem_core.frozen import quick_init


@quick_init
@dataclass(frozen=True, kw_only=True)
class GateRecord:
    """One decision: which procedure and revisions, which gate, its verdict, reason code
    (``verdicts.REASONS``) and sentence, the runs and statistic at the decision, the p0 it
    compared with, both revisions' counts, and the combined ``outcome`` ("accepted",
    "reverted" or "pending")."""

    key: str
    namespace: str
    prior_revision: int
    revision: int
    gate: str
    verdict: str
    reason: str
    runs_used: int
    statistic: float
    prior_runs: int
    prior_successes: int
    revision_runs: int
    revision_successes: int
    outcome: str
    reason_code: str = ""
    p0_used: float = math.nan

    def row(self) -> dict[str, Any]:
        """The record as a table row (``DECISION_COLUMNS``): ``dataclasses.asdict`` without
        its deep copy (every field is a str, an int or a float)."""
        return {name: getattr(self, name) for name in DECISION_COLUMNS}


DECISION_COLUMNS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(GateRecord))
"""The columns of every ``gate_decisions`` table, in order."""
