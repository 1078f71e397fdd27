"""The appendix page: the blocks a section marks as detail (``reports.document.is_detail``:
large tables, supporting figures, detail paragraphs), numbered A1, A2, ... in reading
order, each at an anchor that the main page links from where the block stood; each moved
table's data is also written as ``tables/a<n>_<slug>.csv``. The provenance closes the
appendix. Issue 30: the main page keeps the answers, the key figures and the sentences
within its word budget (``reports.length``).
"""

from __future__ import annotations

import html

from reports.document import (
    PROVENANCE,
    STYLE,
    Block,
    Moved,
    Report,
    _block_html,
    _block_markdown,
    moved_blocks,
)


def _appendix_places(report: Report) -> list[tuple[str, list[Block | Moved]]]:
    """(title, blocks) per place with moved blocks, in order: each moved block as its
    ``Moved``; the provenance last and whole (its text too)."""
    moved = {id(m.block): m for m in moved_blocks(report)}
    places = [
        (s.title, [moved[id(b)] for b in s.blocks if id(b) in moved]) for s in report.sections
    ]
    places.append((PROVENANCE, [moved.get(id(b), b) for b in report.provenance]))
    return [(title, blocks) for title, blocks in places if blocks]


def render_appendix_markdown(report: Report) -> str:
    """The moved blocks under their sections' titles, each at its anchor with its data
    file (tables); the provenance closes it."""
    lines = [f"# Appendix: {report.heading}", "", APPENDIX_INTRO.format(page="report.md"), ""]
    for title, blocks in _appendix_places(report):
        lines += ['<a id="provenance"></a>', ""] if title == PROVENANCE else []
        lines += [f"## {title}", ""]
        for m in blocks:
            if not isinstance(m, Moved):
                lines.append(f"- {m}")
                continue
            lines += ["", f'<a id="{m.anchor}"></a>', "", *_block_markdown(m.block, m.label)]
            lines += [f"Data: [{m.csv}]({m.csv})", ""] if m.csv else []
        lines.append("")
    return "\n".join(lines)


def render_appendix_html(report: Report) -> str:
    """``render_appendix_markdown`` as one self-contained HTML page."""
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>Appendix: {html.escape(report.heading)}</title><style>{STYLE}</style>",
        f"</head><body><h1>Appendix: {html.escape(report.heading)}</h1>",
        f"<p>{html.escape(APPENDIX_INTRO.format(page='index.html'))}</p>",
    ]
    for title, blocks in _appendix_places(report):
        key = " id='provenance'" if title == PROVENANCE else ""
        parts.append(f"<h2{key}>{html.escape(title)}</h2>")
        for m in blocks:
            if not isinstance(m, Moved):
                parts.append(_block_html(m))
                continue
            data = f"<p>Data: <a href='{m.csv}'>{m.csv}</a></p>" if m.csv else ""
            parts.append(f"<div id='{m.anchor}'>{_block_html(m.block, m.label)}{data}</div>")
    parts.append("</body></html>")
    return "\n".join(parts)


APPENDIX_INTRO = (
    "The large tables and the details of the main page ({page}), in its order: each is "
    "linked from where it stood there, and each table's data is in tables/ as CSV."
)
