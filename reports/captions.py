"""Does a figure hold what its caption says? What was drawn, against the caption's claims.

``drawn(fig)`` counts what a matplotlib figure shows: data points (finite, in data
coordinates), lines (two or more finite points joined), markers and bars (error bars
of non-zero length, or bar-chart rectangles). ``claims(caption)`` reads which of lines,
bars and markers the caption describes ("bars: 95 % intervals", "the lines", "triangles
mark ..."; "not joined by lines" is no claim). ``problems`` lists the mismatches, and a
figure with no data point is always one. ``Recorder`` connects them: set as
``reports.canvas.RENDER_LISTENER`` it remembers what each PNG drew, and as
``reports.document.FIGURE_LISTENER`` it checks each ``Figure`` built from such a PNG.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import numpy as np
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure as MplFigure
from matplotlib.patches import Rectangle

CLAIMS = {
    "bars": re.compile(r"\berror bars?\b|\bbars?\b"),
    "lines": re.compile(r"\blines?\b|\bcurves?\b"),
    "markers": re.compile(r"\bmarkers?\b|\btriangles?\b|\bdots?\b|\bcircles?\b"),
}
NEGATED = re.compile(r"\b(?:not|never) (?:joined|drawn|connected) (?:by|with) (?:lines?|curves?)")


@dataclass(frozen=True)
class Drawn:
    """What a figure shows, summed over its axes."""

    points: int = 0
    lines: int = 0
    markers: int = 0
    bars: int = 0

    def has(self, claim: str) -> bool:
        return getattr(self, claim) > 0


def _finite(xy: np.ndarray) -> int:
    xy = np.asarray(xy, dtype=float).reshape(-1, 2)
    return int(np.isfinite(xy).all(axis=1).sum())


def _visible(segment: np.ndarray) -> bool:
    """A segment of two or more finite points that is not a single point."""
    s = segment.reshape(-1, 2)
    return len(s) >= 2 and bool(np.isfinite(s).all()) and float(np.ptp(s, axis=0).max()) > 0


def _counts(ax) -> tuple[int, int, int, int]:
    caps, bar_cols = set(), set()
    for c in ax.containers:
        if isinstance(c, ErrorbarContainer):
            _, cap_lines, cols = c.lines
            caps |= {id(x) for x in cap_lines}
            bar_cols |= {id(x) for x in cols}
    points = lines = markers = bars = 0
    for line in ax.lines:
        if id(line) in caps:
            continue
        n = _finite(line.get_xydata())
        data = line.get_transform() == ax.transData
        points += n if data else 0
        lines += int(n >= 2 and line.get_linestyle() not in ("None", "", " ", "none"))
        markers += int(n >= 1 and line.get_marker() not in (None, "None", "", " ", "none"))
    for col in ax.collections:
        if isinstance(col, LineCollection):
            segs = [np.asarray(s, dtype=float) for s in col.get_segments()]
            long = sum(1 for s in segs if _visible(s))
            if id(col) in bar_cols:
                bars += long
            else:
                lines += long
                points += sum(_finite(s) for s in segs)
        elif isinstance(col, PathCollection):
            n = _finite(col.get_offsets())
            points, markers = points + n, markers + int(n > 0)
    for patch in ax.patches:
        if isinstance(patch, Rectangle) and patch.get_height() and np.isfinite(patch.get_height()):
            bars, points = bars + 1, points + 1
    return points, lines, markers, bars


def drawn(fig: MplFigure) -> Drawn:
    """Points, lines, markers and bars the figure's axes show (see the module docstring)."""
    totals = np.zeros(4, dtype=int)
    for ax in fig.axes:
        totals += np.array(_counts(ax))
    return Drawn(*(int(x) for x in totals))


def claims(caption: str) -> set[str]:
    """Which of ``bars``, ``lines``, ``markers`` the caption says the figure shows."""
    text = NEGATED.sub("", caption.lower())
    return {name for name, pattern in CLAIMS.items() if pattern.search(text)}


def problems(caption: str, shown: Drawn) -> list[str]:
    """The caption's claims the figure does not bear out, and "no data" when it has none."""
    out = [] if shown.points > 0 else ["no data point is drawn"]
    return out + [f"the caption describes {c} but none are drawn" for c in
                  sorted(claims(caption)) if not shown.has(c)]  # fmt: skip


def digest(png: bytes) -> str:
    return hashlib.sha256(png).hexdigest()


class Recorder:
    """Remembers what each rendered PNG drew and checks the captions of figures built on
    them; ``found`` holds ``(figure name, problem)`` for every mismatch."""

    def __init__(self) -> None:
        self.shown: dict[str, Drawn] = {}
        self.found: list[tuple[str, str]] = []
        self.checked = 0
        self.reported = 0  # problems already reported (by the tests' fixture)

    def rendered(self, fig: MplFigure, png: bytes) -> None:
        self.shown[digest(png)] = drawn(fig)

    def figure(self, figure) -> None:
        shown = self.shown.get(digest(figure.png))
        if shown is None:  # not rendered by reports.canvas.png_bytes
            return
        self.checked += 1
        self.found += [(figure.name, p) for p in problems(figure.caption, shown)]


__all__ = ["Drawn", "Recorder", "claims", "drawn", "problems"]
