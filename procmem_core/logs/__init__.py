"""The procmem session log (docs/logs.md): its schema and checks, and the analyses of a
checked log (every procedure's lift, the gate and rule replays, a fitted world), on
numpy arrays so an agent can run them on its own logs. Reading files is in
``experiments.analyze``.
"""

from procmem_core.logs.lifts import COLUMNS, Lifts, estimate_lifts, withheld_needed
from procmem_core.logs.schema import (
    SCHEMA_VERSION,
    Log,
    LogError,
    Sessions,
    Table,
    Text,
    check_log,
    columns,
    required,
    schema,
)

__all__ = [
    "COLUMNS",
    "SCHEMA_VERSION",
    "Lifts",
    "Log",
    "LogError",
    "Sessions",
    "Table",
    "Text",
    "check_log",
    "columns",
    "estimate_lifts",
    "required",
    "schema",
    "withheld_needed",
]
