"""Matplotlib set-up shared by every report figure: the Agg backend, colours, PNG bytes.

The same gate (or rule) configuration gets the same colour in every figure:
``palette(labels)`` assigns colours in sorted label order, and the report builds it once
per family and passes it to each figure function.
"""

from __future__ import annotations

import io
from collections.abc import Iterable

import matplotlib

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


def png_bytes(fig: Figure, dpi: int = 100) -> bytes:
    """Render ``fig`` to PNG bytes and close it (figures are never shown interactively)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return buf.getvalue()


def legend_outside(ax, title: str | None = None) -> None:
    """A legend to the right of the axes, so it never hides data."""
    handles, labels = ax.get_legend_handles_labels()
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
