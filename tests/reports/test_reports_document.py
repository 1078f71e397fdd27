"""The writers: self-contained HTML, Markdown with linked PNGs, summary.csv; bad input."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pandas as pd
import pytest

from procmem_core.errors import ParameterError
from reports.canvas import new_figure, palette, png_bytes
from reports.document import Figure, Report, Section, Table, render_html, table_markdown
from reports.pages import write_report


def tiny_png() -> bytes:
    fig, (ax,) = new_figure(2, 2)
    ax.plot([0, 1], [0, 1])
    return png_bytes(fig)


def test_write_report_files_and_embedding(tmp_path):
    png = tiny_png()
    frame = pd.DataFrame({"a|b": [0.123456, float("nan")], "c": ["x<y", None]})
    key = Table("Key", pd.DataFrame({"k": [7]}), detail=False)
    report = Report(
        "exp",
        "0" * 32,
        "procmem report: exp",
        [
            Section(
                "s",
                "Question?",
                "Answer.",
                [Figure("fig_one", png, "A caption"), Table("T", frame), "text & more", key],
            )
        ],
        pd.DataFrame({"run_id": ["r1", "r2"], "x": [1.0, 2.0]}),
        ["Reported: run 0.", Table("Runs", pd.DataFrame({"runs": [2]}))],
    )
    written = write_report(report, tmp_path)
    assert set(written) == {
        "fig_one.png", "index.html", "report.md", "summary.csv", "appendix.html",
        "appendix.md", "tables/a1_t.csv", "tables/a2_runs.csv",
    }  # fmt: skip
    html = (tmp_path / "index.html").read_text()
    assert base64.b64encode(png).decode() in html
    assert "text &amp; more" in html and "<td>7</td>" in html  # kept on the main page
    assert "x&lt;y" not in html and "0.1235" not in html and "Reported: run 0." not in html
    assert "<a href='appendix.html#a1'>table A1: T</a>" in html
    appendix = (tmp_path / "appendix.html").read_text()
    assert "x&lt;y" in appendix and "0.1235" in appendix and "Reported: run 0." in appendix
    assert "<div id='a1'>" in appendix and "id='provenance'" in appendix
    md = (tmp_path / "report.md").read_text()
    assert "![fig_one](fig_one.png)" in md and "| 7 |" in md and "a\\|b" not in md
    assert "→ In the appendix: [table A1: T](appendix.md#a1)." in md
    assert md.rstrip().endswith("[in the appendix](appendix.md#provenance).")
    amd = (tmp_path / "appendix.md").read_text()
    assert '<a id="a1"></a>' in amd and "a\\|b" in amd and "| 0.1235 | x<y |" in amd
    assert "Data: [tables/a1_t.csv](tables/a1_t.csv)" in amd
    assert amd.index("## Question?") < amd.index("## Where these numbers come from")
    assert "- Reported: run 0." in amd and '<a id="a2"></a>' in amd
    data = pd.read_csv(tmp_path / "tables/a1_t.csv")
    assert list(data.columns) == ["a|b", "c"] and data["a|b"].iloc[0] == 0.123456
    assert (tmp_path / "fig_one.png").read_bytes() == png
    assert len(pd.read_csv(tmp_path / "summary.csv")) == 2
    assert render_html(report).count("<section") == 1


def test_detail_blocks_move_in_order_and_group_their_links():
    """Consecutive moved blocks share one link line, placed where the first stood; a
    ``Detail`` paragraph and a ``Figure(detail=True)`` move, a plain sentence stays."""
    from reports.appendix import moved_blocks
    from reports.document import Detail, render_markdown

    fig = Figure("side", tiny_png(), "Side view: more", detail=True)
    blocks = ["First.", Detail("Why it is so: because."), fig, "Last."]
    report = Report("e", "p", "h", [Section("s", "Q", "A.", blocks)], pd.DataFrame())
    assert [m.label for m in moved_blocks(report)] == ["A1.", "A2."]
    md = render_markdown(report)
    link = (
        "→ In the appendix: [detail A1: Why it is so](appendix.md#a1), "
        "[figure A2: Side view](appendix.md#a2)."
    )
    assert md.index("First.") < md.index(link) < md.index("Last.")
    assert "because" not in md and "![side]" not in md


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


def test_a_term_only_moved_blocks_use_is_defined_on_the_appendix_page():
    """A glossary term used only in a table that moves to the appendix is defined there
    (a detail), not on the main page; once the main page uses it, it is defined there."""
    from reports.document import Table, is_detail
    from reports.provenance import define_terms

    moved = Table("Runs until the gate decides", pd.DataFrame({"LLR": [1.0]}))
    first = Section("gates", "Gates", "Use the SPRT.", [moved])
    later = Section("loop", "Loop", "The LLR crosses the boundary.", [])
    a, b = define_terms([first, later])
    terms = a.blocks[-1]
    assert is_detail(terms) and "LLR: log-likelihood ratio" in terms
    assert not any(isinstance(x, str) and x.startswith("Terms. ") for x in a.blocks)
    assert b.blocks[-1].startswith("Terms. LLR: log-likelihood ratio")  # main page: defined
    again = define_terms([first, Section("ab", "A/B", "No term here.", [moved])])[1]
    assert again.blocks == [moved]  # the appendix definition is not repeated
