"""A prescription's "holds if / breaks when" table and sentence (issue 30), rendered from
the exact rows the sweep computed (``procmem_core.holds.SensitivityRow``; reports only
read): one row per assumption moved, its exact figures, and whether the prescription
still meets its targets there; the sentence names the assumption that breaks it with the
smallest relative move (``first_break``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import pandas as pd

from procmem_core.holds import SensitivityRow, first_break
from reports.document import Table

TITLE = "Holds if / breaks when"
NO_ANSWER = "no exact answer"


def verdict(row: SensitivityRow) -> str:
    """``holds``, ``breaks``, or ``no exact answer``."""
    return NO_ANSWER if row.holds is None else ("holds" if row.holds else "breaks")


def holds_table(
    what: str,
    rows: Sequence[SensitivityRow],
    columns: Mapping[str, tuple[str, Callable[[float], str]]],
    targets: str,
) -> Table | None:
    """The table: ``columns`` maps a figure's name to its header and format (a row
    without the figure shows ``NO_ANSWER``, with its note); ``what`` ends the caption."""
    if not rows:
        return None
    frame = pd.DataFrame(
        {"assumption": [r.assumption for r in rows], "value": [r.value for r in rows]}
        | {
            head: [
                show(r.figure(name)) if not math.isnan(r.figure(name)) else (r.note or NO_ANSWER)
                for r in rows
            ]
            for name, (head, show) in columns.items()
        }
        | {f"holds ({targets})?": [verdict(r) for r in rows]}
    )
    return Table(f"{TITLE}: {what}", frame)


def breaks_sentence(
    subject: str, rows: Sequence[SensitivityRow], figures: Callable[[SensitivityRow], str]
) -> str:
    """One sentence: which assumption breaks ``subject`` first (the smallest relative
    move), with its exact figures there (``figures``), or that it holds at every move
    tried; the assumptions without an exact answer are named."""
    if not rows:
        return ""
    missing = sorted({r.assumption for r in rows if r.holds is None})
    unsaid = f" ({', '.join(missing)}: {NO_ANSWER})" if missing else ""
    if rows[0].holds is False:
        return f"{subject} misses its targets as assumed ({figures(rows[0])}, exact){unsaid}."
    first = first_break(rows)
    if first is None:
        return f"{subject} holds at every move tried (exact){unsaid}."
    return (
        f"{subject} breaks first when the {first.assumption} moves to {first.value} "
        f"({first.shift:+.0%} of the assumed): {figures(first)} (exact){unsaid}."
    )


def rows_of(data: Sequence[Mapping]) -> tuple[SensitivityRow, ...]:
    """Rows back from the sweep's JSON (``SensitivityRow.to_json``)."""
    return tuple(SensitivityRow.from_json(r) for r in data)
