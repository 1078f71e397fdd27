"""Matplotlib set-up shared by every report figure: the Agg backend, colours, PNG bytes,
and the simulated-with-error-bars and exact-curve marks most figures draw.

The same gate (or rule) configuration gets the same colour in every figure:
``palette(labels)`` assigns colours in sorted label order, and the report builds it once
per family and passes it to each figure function.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Callable, Iterable
from contextvars import ContextVar

import matplotlib
import pandas as pd

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

TARGET_COLOUR = "#888888"
EXACT_STYLE = {"linestyle": "-", "linewidth": 1.4, "alpha": 0.9}


def palette(labels: Iterable[str]) -> dict[str, tuple[float, float, float, float]]:
    """A fixed colour per label (tab10 up to 10 labels, tab20 up to 20, then a colormap)."""
    names = sorted({str(x) for x in labels})
    if len(names) <= 10:
        cmap, n = plt.get_cmap("tab10"), 10
    elif len(names) <= 20:
        cmap, n = plt.get_cmap("tab20"), 20
    else:
        cmap, n = plt.get_cmap("turbo"), len(names)
    return {name: cmap(i % n if n <= 20 else i / max(n - 1, 1)) for i, name in enumerate(names)}


def new_figure(width: float = 7.5, height: float = 4.2, ncols: int = 1) -> tuple[Figure, list]:
    """A figure with ``ncols`` axes side by side (always returned as a list)."""
    fig, axes = plt.subplots(1, ncols, figsize=(width, height), squeeze=False, layout="constrained")
    return fig, list(axes[0])


RENDER_LISTENER: ContextVar[Callable[[Figure, bytes], None] | None] = ContextVar(
    "RENDER_LISTENER", default=None
)
"""Called as ``listener(fig, png)`` for every figure rendered (``reports.captions``
checks captions against what was drawn); the reports never set it, tests do."""


def png_bytes(fig: Figure, dpi: int = 100) -> bytes:
    """Render ``fig`` to PNG bytes and close it (figures are never shown interactively)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    png = buf.getvalue()
    listener = RENDER_LISTENER.get()
    if listener is not None:
        listener(fig, png)
    plt.close(fig)
    return png


LEGEND_WIDTH = 46
"""Characters per legend line: a long label (every parameter that tells it apart) wraps
instead of squeezing the axes."""


def legend_outside(ax, title: str | None = None) -> None:
    """A legend to the right of the axes, so it never hides data; labels wrapped at
    ``LEGEND_WIDTH`` characters."""
    handles, labels = ax.get_legend_handles_labels()
    labels = [textwrap.fill(x, LEGEND_WIDTH, subsequent_indent="  ") for x in labels]
    if handles:
        ax.legend(
            handles,
            labels,
            title=title,
            fontsize=7,
            title_fontsize=8,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            frameon=False,
        )


def simulated_points(
    ax, x: pd.Series, y: pd.Series, se: pd.Series, colour, label: str, joined: bool = False
) -> None:
    """Simulated values with 95 % Monte Carlo error bars (``y ± 1.96 se``; a missing SE
    draws no bar); ``joined`` draws a line through the points."""
    style = {"marker": "o"} if joined else {"fmt": "o"}
    ax.errorbar(x, y, yerr=1.96 * se.fillna(0), color=colour, ms=4, capsize=3, label=label, **style)


def simulated_and_exact(
    ax,
    points: pd.DataFrame,
    exact: pd.DataFrame,
    x: str,
    y: str,
    config: str,
    colour,
    exact_y: str | None = None,
) -> None:
    """One configuration's simulated ``y`` (± 1.96 ``<y>_se``) against ``x``, labelled
    "<config> (simulated)", with the exact curve over it: the rows of ``exact`` of that
    ``config``, column ``exact_y`` (default ``y``), in ``x`` order."""
    simulated_points(ax, points[x], points[y], points[f"{y}_se"], colour, f"{config} (simulated)")
    curve = exact[exact["config"] == config] if not exact.empty else exact
    if not curve.empty:
        curve = curve.sort_values(x)
        ax.plot(curve[x], curve[exact_y or y], color=colour, **EXACT_STYLE)


def exact_legend(ax, exact: pd.DataFrame, label: str) -> None:
    """One black legend entry for the exact curves, when there are any."""
    if not exact.empty:
        ax.plot([], [], color="black", **EXACT_STYLE, label=label)
