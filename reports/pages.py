"""``write_report``: every page of a report, its figures and its tables, written to a
folder (the main page from ``reports.document``, the appendix from ``reports.appendix``;
this module sits above both, so neither imports the other)."""

from __future__ import annotations

from pathlib import Path

from procmem_core.errors import ParameterError
from reports.appendix import render_appendix_html, render_appendix_markdown
from reports.document import APPENDIX, Report, Table, moved_blocks, render_html, render_markdown


def write_report(report: Report, out: Path) -> dict[str, Path]:
    """Write ``index.html`` and ``report.md`` (the main page), ``appendix.html`` and
    ``appendix.md`` (the moved blocks), ``tables/*.csv`` (each moved table's data),
    ``summary.csv``, every figure's PNG and every section's ``files`` to ``out``."""
    names = [f.name for s in report.sections for f in s.figures]
    names += [n for s in report.sections for n in s.files]
    if len(names) != len(set(names)):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ParameterError("figure names", dup, "unique names across the report")
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for s in report.sections:
        for f in s.figures:
            path = out / f"{f.name}.png"
            path.write_bytes(f.png)
            written[path.name] = path
    pages = (
        ("index.html", render_html(report)),
        ("report.md", render_markdown(report)),
        (f"{APPENDIX}.html", render_appendix_html(report)),
        (f"{APPENDIX}.md", render_appendix_markdown(report)),
    )
    for name, text in pages:
        (out / name).write_text(text, encoding="utf-8")
        written[name] = out / name
    for m in moved_blocks(report):
        if m.csv is not None and isinstance(m.block, Table):
            (out / m.csv).parent.mkdir(exist_ok=True)
            m.block.frame.to_csv(out / m.csv, index=False)
            written[m.csv] = out / m.csv
    report.summary.to_csv(out / "summary.csv", index=False)
    written["summary.csv"] = out / "summary.csv"
    for s in report.sections:
        for name, text in s.files.items():
            (out / name).write_text(text, encoding="utf-8")
            written[name] = out / name
    return written
