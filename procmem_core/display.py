"""HTML for notebooks, with no pandas: ``_repr_html_`` of the engine's records (``FlatFate``,
``OperatingPoint``, ``OperatingCurve``, the design answers) is a two-column table of
fields, or a table with one column per array, built here."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

import numpy as np

MAX_ROWS = 40
"""Rows shown of a column table; the rest are summarised in one line."""


def cell(value: Any) -> str:
    """A value as escaped cell text (floats to 4 significant digits)."""
    if isinstance(value, float | np.floating) and not isinstance(value, bool):
        return f"{float(value):.4g}"
    if hasattr(value, "fmt") and callable(value.fmt):
        return html.escape(value.fmt())
    return html.escape(str(value))


def field_table(title: str, fields: Mapping[str, Any]) -> str:
    """``<table>`` with a caption ``title`` and one ``name | value`` row per field."""
    rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{cell(v)}</td></tr>" for k, v in fields.items()
    )
    return f"<table><caption>{html.escape(title)}</caption>{rows}</table>"


def column_table(title: str, columns: Mapping[str, Sequence[Any] | np.ndarray]) -> str:
    """``<table>`` with one column per entry of ``columns`` (equal lengths), at most
    ``MAX_ROWS`` rows and a last row saying how many more there are."""
    lists = {k: v.tolist() if isinstance(v, np.ndarray) else list(v) for k, v in columns.items()}
    n = max((len(v) for v in lists.values()), default=0)
    head = "".join(f"<th>{html.escape(k)}</th>" for k in lists)
    body = "".join(
        "<tr>" + "".join(f"<td>{cell(v[i])}</td>" for v in lists.values()) + "</tr>"
        for i in range(min(n, MAX_ROWS))
    )
    if n > MAX_ROWS:
        body += f'<tr><td colspan="{len(lists)}">... {n - MAX_ROWS} more rows</td></tr>'
    return f"<table><caption>{html.escape(title)}</caption><tr>{head}</tr>{body}</table>"


def record_html(record: Any, title: str | None = None) -> str:
    """A dataclass record as HTML: its scalar fields as a field table, then its 1-D array
    fields of the most common length as one column table (other arrays by shape)."""
    scalars: dict[str, Any] = {}
    arrays: dict[str, np.ndarray] = {}
    for f in fields(record):
        value = getattr(record, f.name)
        if isinstance(value, np.ndarray) and value.ndim == 1 and value.size > 1:
            arrays[f.name] = value
        elif isinstance(value, np.ndarray) and value.size != 1:
            scalars[f.name] = f"array of shape {value.shape}"
        else:
            scalars[f.name] = value.item() if isinstance(value, np.ndarray) else value
    sizes = [a.size for a in arrays.values()]
    common = max(set(sizes), key=sizes.count) if sizes else 0
    for name, a in list(arrays.items()):
        if a.size != common:
            scalars[name] = f"array of {a.size} values"
            del arrays[name]
    title = title or type(record).__name__
    out = field_table(title, scalars)
    return out + column_table(f"{title}: by {next(iter(arrays))}", arrays) if arrays else out
