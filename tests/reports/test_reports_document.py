"""The writers: self-contained HTML, Markdown with linked PNGs, summary.csv; bad input."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pandas as pd
import pytest

from procmem_core.errors import ParameterError
from reports.canvas import new_figure, palette, png_bytes
from reports.document import (
    Figure,
    Report,
    Section,
    Table,
    render_html,
    table_markdown,
    write_report,
)


def tiny_png() -> bytes:
    fig, (ax,) = new_figure(2, 2)
    ax.plot([0, 1], [0, 1])
    return png_bytes(fig)


def test_write_report_files_and_embedding(tmp_path):
    png = tiny_png()
    frame = pd.DataFrame({"a|b": [0.123456, float("nan")], "c": ["x<y", None]})
    report = Report(
        "exp",
        "0" * 32,
        "procmem report: exp",
        [
            Section(
                "s",
                "Question?",
                "Answer.",
                [Figure("fig_one", png, "A caption"), Table("T", frame), "text & more"],
            )
        ],
        pd.DataFrame({"run_id": ["r1", "r2"], "x": [1.0, 2.0]}),
    )
    written = write_report(report, tmp_path)
    assert set(written) == {"fig_one.png", "index.html", "report.md", "summary.csv"}
    html = (tmp_path / "index.html").read_text()
    assert base64.b64encode(png).decode() in html
    assert "x&lt;y" in html and "text &amp; more" in html and "0.1235" in html
    md = (tmp_path / "report.md").read_text()
    assert "![fig_one](fig_one.png)" in md and "a\\|b" in md
    assert (tmp_path / "fig_one.png").read_bytes() == png
    assert len(pd.read_csv(tmp_path / "summary.csv")) == 2
    assert render_html(report).count("<section") == 1


def test_markdown_table_shape():
    md = table_markdown(pd.DataFrame({"x": [1, 2], "y": ["a", "b"]}))
    assert md.splitlines() == ["| x | y |", "|---|---|", "| 1 | a |", "| 2 | b |"]


def test_palette_is_stable_per_label():
    a = palette(["b", "a", "c"])
    b = palette(["c", "a", "b", "a"])
    assert a == b and len(set(a.values())) == 3
    many = palette([f"g{i}" for i in range(30)])
    assert len(set(many.values())) == 30


def _dup_report():
    png = tiny_png()
    s = Section("s", "t", "a.", [Figure("same", png, "c"), Figure("same", png, "d")])
    return Report("e", "p", "h", [s], pd.DataFrame())


BAD = [
    (lambda: Figure("has space", b"", "c"), ParameterError, "name='has space'"),
    (lambda: Figure("", b"", "c"), ParameterError, "name=''"),
    (lambda: Figure("a/b", b"", "c"), ParameterError, "name='a/b'"),
    (lambda: write_report(_dup_report(), Path("/nonexistent/never")), ParameterError,
     "figure names=['same']"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "error", "fragment"), BAD)
def test_invalid_inputs(call, error, fragment):
    with pytest.raises(error, match=re.escape(fragment)):
        call()


def test_power_is_defined_for_the_section_that_uses_it_first():
    """The quickstart's gate section says "power >= 0.800" (reverting at the min drop) and
    is the first to use the word: its definition must fit a gate, not only an A/B read."""
    from reports.provenance import define_terms

    gate = Section("gates", "Gates", "exact worst cases: false revert <= 0.05, power >= 0.8", [])
    ab = Section("ab", "A/B", "the share of deployments finding an effect (power) is 0.35", [])
    first, second = define_terms([gate, ab])
    terms = first.blocks[-1]
    assert terms.startswith("Terms. ") and "power: " in terms
    said = terms.split("power: ")[1]
    assert "dropped by min_drop (1 - missed regression rate)" in said
    assert "whose interval excludes 0" in said  # the A/B reading, in the same definition
    assert not any(isinstance(b, str) and "power: " in b for b in second.blocks)  # once
