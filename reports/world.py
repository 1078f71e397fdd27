"""The world a section simulated, stated: one compact table and one sentence (issue 30).

Every preset section opens, right after its answer, with ``world_blocks``: the scenario
parameters of its runs that describe the world (the ``scenario``, ``users`` and
``feedback`` groups: users and their heterogeneity, sessions and horizon, base rates,
lifts, feedback noise and missingness, replications), each with its value when it is
the same in every run of the section and its set (or range) of values when swept, and
a sentence naming which of them the section's prescription reads. ``reads`` is given
by each section from its own code path (the gate's design question reads the prior
rates, the ledger size, the concurrent share and the gates' ``min_drop``; the flat rule's
design reads the base rate and the lifts; ...); ``None`` says the answer is a simulation
of the whole world, so it depends on every row.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from procmem_core.logged import unset_phrase
from reports.claims import spoken_list
from reports.configs import show
from reports.document import WORLD_CAPTION, Table
from reports.source import CHECKS

WORLD_GROUPS = ("scenario", "users", "feedback")
"""Config groups whose params describe the simulated world."""
BOOKKEEPING = ("name", "chunk_size", "table_rows", "export_log", *CHECKS)
"""Last key parts that say how a run is computed, not what world it simulates."""
LISTED = 4
"""A swept number with at most this many values lists them; more: its range and count."""
CAPTION = WORLD_CAPTION


def _label(column: str) -> str:
    """``params.scenario.p_prior`` -> ``p_prior``; other groups keep their group name."""
    name = column.removeprefix("params.")
    return name.removeprefix("scenario.")


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def world_columns(
    runs: pd.DataFrame, reads: Sequence[str] = (), chosen: Sequence[str] = ()
) -> list[str]:
    """The param columns of ``runs`` that describe the world (logged by at least one run),
    then any column of ``reads`` outside the world groups (e.g. ``gate.min_drop``);
    ``chosen``: params the section chooses (a review policy), not the world."""
    cols = []
    skip = {f"params.{c}" for c in chosen}
    for c in runs.columns:
        parts = c.split(".")
        if parts[0] != "params" or len(parts) < 3 or parts[1] not in WORLD_GROUPS:
            continue
        if c in skip:
            continue
        if parts[-1] in BOOKKEEPING or runs[c].map(_missing).all():
            continue
        cols.append(c)
    cols.sort(key=lambda c: (WORLD_GROUPS.index(c.split(".")[1]), c))
    extra = [f"params.{r}" for r in reads if f"params.{r}" in runs and f"params.{r}" not in cols]
    return cols + [c for c in extra if not runs[c].map(_missing).all()]


def value_text(values: pd.Series, key: str = "") -> str:
    """One value as ``show`` writes it; several: ``swept: a, b, c`` or, for more than
    ``LISTED`` numbers, ``swept: low to high (n values)``. Unset is the scenario's own
    words (``p0 known``) or ``none``."""
    unset = unset_phrase(key) or "none"
    distinct: dict[str, object] = {}
    for v in values:
        distinct.setdefault(unset if _missing(v) else show(v), v)
    if len(distinct) == 1:
        return next(iter(distinct))
    numbers = sorted(v for v in distinct.values() if isinstance(v, int | float) and not _missing(v))
    words = [t for t, v in distinct.items() if not isinstance(v, int | float) or _missing(v)]
    if len(numbers) > LISTED:
        span = f"{show(numbers[0])} to {show(numbers[-1])} ({len(numbers)} values)"
        return "swept: " + ", ".join([*words, span])
    return "swept: " + ", ".join([*words, *(show(v) for v in numbers)])


def _logged(runs: pd.DataFrame, column: str) -> pd.Series:
    """``column`` over the runs of the scenarios that log it (a section may read runs of
    several scenarios, e.g. the A/B section: a param another scenario lacks is not
    "none" there)."""
    if "scenario" not in runs or runs["scenario"].nunique() < 2:
        return runs[column]
    logs = runs.groupby("scenario")[column].transform(lambda v: not v.map(_missing).all())
    return runs.loc[logs.astype(bool), column]


def world_table(
    runs: pd.DataFrame, reads: Sequence[str] | None, chosen: Sequence[str] = ()
) -> pd.DataFrame:
    """One row per world parameter: its name, its value(s) over ``runs``, and whether the
    section's prescription reads it (every row when ``reads`` is None)."""
    wanted = {f"params.{r}" for r in reads or ()}
    rows = [
        {
            "parameter": _label(c),
            "value": value_text(_logged(runs, c), c.split(".")[-1]),
            "prescription reads it": "yes" if reads is None or c in wanted else "",
        }
        for c in world_columns(runs, reads or (), chosen)
    ]
    return pd.DataFrame(rows, columns=["parameter", "value", "prescription reads it"])


def world_sentence(
    runs: pd.DataFrame,
    reads: Sequence[str] | None,
    what: str,
    exact: bool = True,
    chosen: Sequence[str] = (),
    how: Mapping[str, str] | None = None,
) -> str:
    """Which world parameters ``what`` (the section's prescription) depends on; ``exact``:
    it is computed from ``reads`` alone (else it is chosen from simulated runs, which
    every other parameter also shaped); ``how``: for a read key, how the prescription
    reads it (e.g. "the smallest swept"), said before its values."""
    if reads is None:
        return (
            f"{what} is read from the simulation of this whole world, so it depends on "
            "every parameter above; it holds for these values only."
        )
    present = [c for c in (f"params.{r}" for r in reads) if c in runs]
    if not present:
        return f"{what} reads none of the world's parameters above."
    how = how or {}
    named = [
        f"{_label(c)} ({how.get(c.removeprefix('params.'), '')}"
        f"{value_text(_logged(runs, c), c.split('.')[-1])})"
        for c in present
    ]
    listed = spoken_list(named)
    rest = [_label(c) for c in world_columns(runs, reads, chosen) if c not in present]
    others = ", ".join(rest)
    if not rest:
        tail = "."
    elif exact:
        tail = f"; the others ({others}) change only the simulated evidence below, not it."
    else:
        tail = (
            f"; it is chosen from simulated runs, so it holds only at the values shown for "
            f"the others ({others})."
        )
    return f"{what} depends on {listed}" + tail


def world_blocks(
    runs: pd.DataFrame,
    reads: Sequence[str] | None,
    what: str = "The prescription",
    exact: bool = True,
    chosen: Sequence[str] = (),
    how: Mapping[str, str] | None = None,
) -> list[Table | str]:
    """The world table and the dependency sentence, to open a section (module docstring);
    nothing when the runs logged no world parameter."""
    table = world_table(runs, reads, chosen)
    if table.empty:
        return []
    return [Table(CAPTION, table), world_sentence(runs, reads, what, exact, chosen, how)]
