"""The records of a session log (docs/logs.md): ``Table`` (one file as a reader read it),
``Text`` (a string column as dictionary codes), the checked ``Sessions`` and ``Log``, and
``LogError``, which names the file, the row, the column, the value and what is allowed.
``schema.check_log`` turns tables into a log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from procmem_core.errors import ProcmemError


class LogError(ProcmemError):
    """A log refused: where (file, row, column), the value and what is allowed."""

    def __init__(self, file: str, row: int | None, column: str | None, value: Any, allowed: str):
        self.file, self.row, self.column = file, row, column
        self.value, self.allowed = value, allowed
        where = file + ("" if row is None else f", row {row}")
        where += "" if column is None else f", column {column!r}"
        super().__init__(f"{where}: {value!r} is not allowed: {allowed}")


@dataclass(frozen=True)
class Text:
    """A string column as dictionary codes (``-1``: empty or null) and its strings."""

    codes: np.ndarray
    values: np.ndarray

    @classmethod
    def encode(cls, raw: np.ndarray) -> Text:
        """Codes of an object array of strings (None, NaN and "" become -1)."""
        a = np.asarray(raw, dtype=object)
        empty = np.array([v is None or v != v or v == "" for v in a], dtype=bool) if a.size else a
        values, codes = np.unique(np.where(empty, "", a).astype(str), return_inverse=True)
        codes = np.where(empty, -1, codes)
        keep = values != ""
        remap = np.cumsum(keep) - 1
        return cls(np.where(codes >= 0, remap[np.maximum(codes, 0)], -1), values[keep])

    @classmethod
    def from_codes(cls, codes: np.ndarray, values: np.ndarray, empty: int | None = None) -> Text:
        """Dictionary codes (``-1``: null) and their strings, "" folded into -1;
        ``empty``: the index of "" in ``values`` (-1: none) when the caller knows it."""
        values = np.asarray(values, dtype=object)
        if empty is None:
            hits = np.flatnonzero(values == "")
            empty = int(hits[0]) if hits.size else -1
        codes = np.asarray(codes, dtype=np.int64)
        if empty < 0:
            return cls(codes, values)
        keep = np.ones(values.size, bool)
        keep[empty] = False
        remap = np.append(np.where(keep, np.cumsum(keep) - 1, -1), -1)
        return cls(remap[np.where(codes >= 0, codes, -1)], values[keep])

    def value(self, row: int) -> str:
        c = int(self.codes[row])
        return "" if c < 0 else str(self.values[c])

    def strings(self) -> np.ndarray:
        """One string per row ("" where empty)."""
        return np.where(self.codes >= 0, np.append(self.values, "")[self.codes], "")


@dataclass(frozen=True)
class Table:
    """One file of a log as a reader read it (raw columns, not yet checked)."""

    name: str
    file: str
    rows: int
    columns: dict[str, Any]
    extras: tuple[str, ...] = ()
    """Columns outside the schema: kept in the file, ignored by the analysis."""


@dataclass(frozen=True)
class Sessions:
    """The checked sessions. ``top`` indexes ``keys`` (-1: no match); ``time`` and
    ``rated_at`` in seconds (timestamps) or the log's own integer ticks (``time_unit``)."""

    file: str
    session_id: Text
    time: np.ndarray
    top: np.ndarray
    keys: np.ndarray
    withheld: np.ndarray
    explore_rate: np.ndarray
    outcome: np.ndarray
    optional: dict[str, Any]
    time_unit: str

    @property
    def n(self) -> int:
        return int(self.top.size)

    @property
    def user(self) -> Text | None:
        return self.optional.get("user_id")

    @property
    def covariate(self) -> np.ndarray | None:
        return self.optional.get("covariate")


@dataclass(frozen=True)
class Log:
    """A checked log: its sessions and, when present, its runs and revisions (each a dict
    of checked columns)."""

    sessions: Sessions
    runs: dict[str, Any] | None
    revisions: dict[str, Any] | None
