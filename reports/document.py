"""The report as data: sections of figures, tables and text, written as HTML and Markdown.

The main page is ``index.html`` (one self-contained file: figures embedded as base64 PNG,
tables as HTML) and ``report.md`` (linking the PNG files written beside it): the answers,
the key figures and the sentences. The blocks a section marks as detail (``is_detail``:
every table unless ``detail=False``, ``Figure(detail=True)``, ``Detail`` paragraphs) move
to ``appendix.html`` / ``appendix.md`` (``reports.appendix``), linked from where they
stood, each table's data in ``tables/*.csv``; the provenance (which run, when, the exact
commands, commit, package versions, replications and seeds: ``reports.provenance``)
closes the appendix. ``summary.csv`` holds one row per child run.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field

import pandas as pd

from procmem_core.errors import ParameterError
from reports.length import split_opening


@dataclass(frozen=True)
class Figure:
    """A rendered figure: ``name`` is its file stem (``<name>.png``)."""

    name: str
    png: bytes
    caption: str
    detail: bool = False
    """True: a supporting figure, drawn on the appendix page (``reports.appendix``)."""

    def __post_init__(self) -> None:
        if not self.name or any(c in self.name for c in "/\\ "):
            raise ParameterError("name", self.name, "a non-empty file stem without / \\ or spaces")
        listener = FIGURE_LISTENER.get()
        if listener is not None:
            listener(self)


FIGURE_LISTENER: ContextVar[Callable[[Figure], None] | None] = ContextVar(
    "FIGURE_LISTENER", default=None
)
"""Called with every ``Figure`` built (``reports.captions.Recorder`` checks its caption
against what its PNG drew); the reports never set it, tests do."""


@dataclass(frozen=True)
class Table:
    """A table with a caption; floats are shown with four significant digits."""

    caption: str
    frame: pd.DataFrame
    detail: bool = True
    """True (the default): the table moves to the appendix page and ``tables/*.csv``,
    linked from where it stood; False keeps a small key table on the main page."""


@dataclass(frozen=True)
class Preformatted:
    """Text shown as it is (a prompt, a transcript, an error): ``<pre>`` in HTML, a fenced
    block in Markdown."""

    caption: str
    text: str
    detail: bool = False


class Detail(str):
    """A paragraph of detail (an explanation, a derivation, where a file is): a ``str``
    that moves to the appendix page, linked from where it stood."""

    __slots__ = ()


Block = Figure | Table | Preformatted | str


def is_detail(block: Block) -> bool:
    """Whether ``block`` goes to the appendix: a ``Detail`` paragraph, or a table, figure
    or preformatted text whose ``detail`` is True (tables by default)."""
    return isinstance(block, Detail) or bool(getattr(block, "detail", False))


WORLD_CAPTION = "The world simulated (one value: the same in every run; several: swept)"
"""The caption of the world table a section opens with (``reports.world.world_blocks``)."""


@dataclass
class Section:
    """One question the report answers: ``answer`` opens it in at most
    ``reports.length.OPENING_SENTENCES`` sentences (issue 30); what a section says beyond
    them follows as its first paragraph (after the world table and its sentence when the
    section opens with them), moved there when the section is built."""

    key: str
    title: str
    answer: str
    blocks: list[Block] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    """Extra files the section writes beside ``index.html`` (name -> text), e.g. the gate
    section's ``recommendations.json``."""
    pick: dict[str, object] = field(default_factory=dict)
    """The section's recommendation as named values (``label`` and numbers), logged to the
    sweep's parent run; empty: the first row of its "Recommended" table is used."""

    more: str = field(default="", repr=False)
    """What the answer said beyond its opening sentences: the section's first paragraph.
    Set by the cut, not by callers; ``dataclasses.replace`` carries it over."""

    def __post_init__(self) -> None:
        opening, rest = split_opening(self.answer)
        if rest:  # after the world the section opens with, else first
            b = self.blocks
            at = 2 if b and isinstance(b[0], Table) and b[0].caption == WORLD_CAPTION else 0
            self.answer, self.more, self.blocks = opening, rest, [*b[:at], rest, *b[at:]]

    @property
    def said(self) -> str:
        """The whole answer as built: the opening and the paragraph after it."""
        return f"{self.answer} {self.more}".strip()

    @property
    def figures(self) -> list[Figure]:
        return [b for b in self.blocks if isinstance(b, Figure)]


@dataclass
class Report:
    """Everything written for one sweep."""

    experiment: str
    parent_id: str
    heading: str
    sections: list[Section]
    summary: pd.DataFrame
    provenance: list[Table | str] = field(default_factory=list)
    chosen: str = ""  # which run was reported and why

    def _repr_html_(self) -> str:
        """A notebook shows the report as the HTML page ``write_report`` writes."""
        return render_html(self)


APPENDIX = "appendix"
PROVENANCE = "Where these numbers come from"
PROVENANCE_LINK = (
    f"{PROVENANCE} (which run, when, the exact commands, commit, package versions, "
    "replications and seeds)"
)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return "" if value != value else f"{value:.4g}"
    return "" if value is None else str(value)


def table_html(frame: pd.DataFrame) -> str:
    """An HTML table with escaped cells and compact floats."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = []
    for _, r in frame.iterrows():
        cells = "".join(f"<td>{html.escape(_cell(v))}</td>" for v in r.tolist())
        rows.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def table_markdown(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (pipes in cells escaped)."""

    def esc(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    head = "| " + " | ".join(esc(str(c)) for c in frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = [
        "| " + " | ".join(esc(_cell(v)) for v in r.tolist()) + " |" for _, r in frame.iterrows()
    ]
    return "\n".join([head, rule, *body])


STYLE = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.45}
h1{font-size:1.6em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
p.answer{font-size:1.08em;background:#f4f7fb;border-left:4px solid #3b6ea5;padding:.5em .8em}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eee}
figcaption{font-size:.9em;color:#555}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0;display:block;overflow-x:auto}
th,td{border:1px solid #ddd;padding:.25em .5em;text-align:right}th{background:#f2f2f2}
caption{caption-side:top;text-align:left;font-weight:600;padding:.3em 0}
div.provenance{font-size:.85em;color:#444;border:1px solid #e4e4e4;padding:.2em .8em}
nav ul{columns:2}
pre{background:#f7f7f7;border:1px solid #ddd;padding:.6em;white-space:pre-wrap;
font-size:.85em}
"""


def _block_html(b: Block, label: str = "") -> str:
    """One block as HTML; ``label`` (``A3.``) prefixes its caption on the appendix page."""
    tag = f"<strong>{html.escape(label)}</strong> " if label else ""
    if isinstance(b, Figure):
        data = base64.b64encode(b.png).decode("ascii")
        return (
            f"<figure><img alt='{html.escape(b.caption)}' "
            f"src='data:image/png;base64,{data}'>"
            f"<figcaption>{tag}{html.escape(b.caption)}</figcaption></figure>"
        )
    if isinstance(b, Table):
        return f"<p>{tag}<strong>{html.escape(b.caption)}</strong></p>{table_html(b.frame)}"
    if isinstance(b, Preformatted):
        head = f"<p>{tag}<strong>{html.escape(b.caption)}</strong></p>"
        return f"{head}<pre>{html.escape(b.text)}</pre>"
    return f"<p>{tag}{html.escape(b)}</p>"


def _block_markdown(b: Block, label: str = "") -> list[str]:
    """One block as Markdown lines; ``label`` (``A3.``) prefixes its caption."""
    tag = f"**{label}** " if label else ""
    if isinstance(b, Figure):
        return [f"![{b.name}]({b.name}.png)", "", f"{tag}*{b.caption}*", ""]
    if isinstance(b, Table):
        return [f"{tag}**{b.caption}**", "", table_markdown(b.frame), ""]
    if isinstance(b, Preformatted):
        fence = "```"
        while fence in b.text:
            fence += "`"
        return [f"{tag}**{b.caption}**", "", fence, b.text.rstrip("\n"), fence, ""]
    return [f"{tag}{b}", ""]


_KIND = {Table: "Table", Figure: "Figure", Preformatted: "Text"}


@dataclass(frozen=True)
class Moved:
    """A block moved to the appendix: numbered A1, A2, ... in reading order."""

    number: int
    title: str  # the section it came from
    block: Block

    @property
    def anchor(self) -> str:
        return f"a{self.number}"

    @property
    def label(self) -> str:
        return f"A{self.number}."

    @property
    def short(self) -> str:
        """The caption's (or paragraph's) first clause, at most 6 words."""
        text = self.block if isinstance(self.block, str) else self.block.caption
        head = re.split(r": |; | \(| \[|\. ", str(text), maxsplit=1)[0].strip()
        words = head.split()
        return " ".join(words[:6]) + (" …" if len(words) > 6 else "")

    @property
    def link_text(self) -> str:
        kind = _KIND.get(type(self.block), "detail")
        return f"{kind.lower()} A{self.number}: {self.short}"

    @property
    def csv(self) -> str | None:
        """``tables/a<n>_<slug>.csv`` for a table, else None."""
        if not isinstance(self.block, Table):
            return None
        slug = re.sub(r"[^a-z0-9]+", "_", self.short.lower()).strip("_")[:40]
        return f"tables/{self.anchor}_{slug}.csv"


def moved_blocks(report: Report) -> list[Moved]:
    """Every block ``is_detail`` marks, sections first, then the provenance."""
    places = [(s.title, s.blocks) for s in report.sections] + [(PROVENANCE, report.provenance)]
    found = [(title, b) for title, blocks in places for b in blocks if is_detail(b)]
    return [Moved(i, title, b) for i, (title, b) in enumerate(found, 1)]


def _grouped(blocks: list[Block], moved: dict[int, Moved]) -> list[Block | list[Moved]]:
    """The blocks in order, each run of consecutive moved blocks as one list."""
    out: list[Block | list[Moved]] = []
    for b in blocks:
        m = moved.get(id(b))
        if m is None:
            out.append(b)
        elif out and isinstance(out[-1], list):
            out[-1].append(m)
        else:
            out.append([m])
    return out


def _main_html(blocks: list[Block], moved: dict[int, Moved]) -> list[str]:
    parts = []
    for g in _grouped(blocks, moved):
        if isinstance(g, list):
            links = ", ".join(
                f"<a href='{APPENDIX}.html#{m.anchor}'>{html.escape(m.link_text)}</a>" for m in g
            )
            parts.append(f"<p class='moved'>&rarr; In the appendix: {links}.</p>")
        else:
            parts.append(_block_html(g))
    return parts


def _main_markdown(blocks: list[Block], moved: dict[int, Moved]) -> list[str]:
    lines = []
    for g in _grouped(blocks, moved):
        if isinstance(g, list):
            links = ", ".join(f"[{m.link_text}]({APPENDIX}.md#{m.anchor})" for m in g)
            lines += [f"→ In the appendix: {links}.", ""]
        else:
            lines += _block_markdown(g)
    return lines


def render_html(report: Report) -> str:
    """The main page as one self-contained HTML page: each moved block is a link to its
    place on ``appendix.html``; the provenance closes the page."""
    moved = {id(m.block): m for m in moved_blocks(report)}
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{html.escape(report.heading)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(report.heading)}</h1>",
        "<nav><ul>",
        *(f"<li><a href='#{s.key}'>{html.escape(s.title)}</a></li>" for s in report.sections),
        f"<li><a href='{APPENDIX}.html'>Appendix: large tables and details</a></li>",
        "</ul></nav>",
    ]
    for s in report.sections:
        parts.append(f"<section id='{s.key}'><h2>{html.escape(s.title)}</h2>")
        parts.append(f"<p class='answer'>{html.escape(s.answer)}</p>")
        parts += _main_html(s.blocks, moved)
        parts.append("</section>")
    if report.provenance:
        link = f"<a href='{APPENDIX}.html#provenance'>in the appendix</a>"
        parts.append(f"<p class='moved'>&rarr; {html.escape(PROVENANCE_LINK)}: {link}.</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def render_markdown(report: Report) -> str:
    """The main page as Markdown, figures linked as ``<name>.png`` beside it, each moved
    block a link to its anchor on ``appendix.md``; the provenance closes the page."""
    moved = {id(m.block): m for m in moved_blocks(report)}
    lines = [f"# {report.heading}", ""]
    for s in report.sections:
        lines += [f"## {s.title}", "", s.answer, ""]
        lines += _main_markdown(s.blocks, moved)
    if report.provenance:
        lines += [
            "---",
            "",
            f"→ {PROVENANCE_LINK}: [in the appendix]({APPENDIX}.md#provenance).",
            "",
        ]
    return "\n".join(lines)
