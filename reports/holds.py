"""A prescription's "holds if / breaks when" table and sentence (issue 30), rendered from
the exact rows the sweep computed (``procmem_core.holds.SensitivityRow``; reports only
read): one row per assumption moved, its exact figures, and whether the prescription
still meets its targets there; the sentence (``breaks_sentence``, the one every section
uses, the gate's included) names the assumption that breaks it with the smallest relative
move (``first_break``)."""

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


def short_of(words: str, meets: bool, target: str, below: bool = True) -> str:
    """A figure told against its target: ``"precision 0.868, below the 0.9 target"`` when
    it misses (``below``: the target is a floor; else a ceiling), ``words`` alone when it
    meets it. ``meets`` is the prescription's own test (its tolerance included)."""
    if meets:
        return words
    return f"{words}, {'below' if below else 'above'} the {target} target"


def breaks_sentence(
    subject: str,
    rows: Sequence[SensitivityRow],
    figures: Callable[[SensitivityRow], str],
    world: str = "as assumed",
) -> str:
    """One sentence on where ``subject`` (a lower-case noun phrase: "the prescribed gate")
    holds, the one rule every section's "holds if / breaks when" rows are told by:

    - it misses in ``rows[0]`` (the world assumed): "Even {world}, {subject} falls short:
      {figures} (exact)";
    - else the smallest numeric move that breaks it (``first_break``), and every break
      without a numeric move (a p0 range: it cannot be ranked), with ``figures`` there:
      "{Subject} holds {world} but breaks first when the {assumption} moves to {value}
      ({shift} of the assumed): {figures} (exact)";
    - else "{Subject} holds {world} and at every move tried ({moves}; exact)";
    - the assumptions without an exact answer close it: "; the {assumption} has no exact
      answer".
    """
    if not rows:
        return ""
    missing = list(dict.fromkeys(f"the {r.assumption}" for r in rows if r.holds is None))
    verb = "has" if len(missing) == 1 else "have"
    tail = f"; {_listed(missing)} {verb} {NO_ANSWER}" if missing else ""
    lead = subject[:1].upper() + subject[1:]
    if rows[0].holds is False:
        return f"Even {world}, {subject} falls short: {figures(rows[0])} (exact){tail}."
    first = first_break(rows)
    unranked = [r for r in rows[1:] if r.holds is False and math.isnan(r.shift)]
    if first is None and not unranked:
        moves = _moves([r for r in rows[1:] if r.holds])
        tried = f" and at every move tried ({moves}; exact)" if moves else " (exact)"
        return f"{lead} holds {world}{tried}{tail}."
    said = []
    if first is not None:
        said.append(
            f"breaks first when the {first.assumption} moves to {first.value} "
            f"({first.shift:+.0%} of the assumed): {figures(first)}"
        )
    also = "also " if said else ""
    said += [f"{also}breaks when the {r.assumption} is {r.value}: {figures(r)}" for r in unranked]
    return f"{lead} holds {world} but {'; it '.join(said)} (exact){tail}."


def _listed(items: Sequence[str], word: str = "and") -> str:
    """``a``, ``a and b``, ``a, b and c`` (``word``: "and" or "or")."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {word} {items[-1]}"


def _moves(rows: Sequence[SensitivityRow]) -> str:
    """The moves tried, by assumption: ``"true drop 0.2 or 0.25; p0 range [0.1, 0.95]"``."""
    by: dict[str, list[str]] = {}
    for r in rows:
        by.setdefault(r.assumption, []).append(r.value)
    return "; ".join(f"{a} {_listed(v, 'or')}" for a, v in by.items())


def rows_of(data: Sequence[Mapping]) -> tuple[SensitivityRow, ...]:
    """Rows back from the sweep's JSON (``SensitivityRow.to_json``)."""
    return tuple(SensitivityRow.from_json(r) for r in data)
