"""docs/notebook.md (issue 24): its ``python`` code blocks, run in order in one namespace,
go from a rule, a gate and a scenario to a DataFrame and a report in under 15 lines."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "notebook.md"


def code_blocks(text: str) -> list[str]:
    """The bodies of the ```python fences, in order."""
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


def test_the_page_has_the_walk_through_in_under_15_lines():
    first = code_blocks(PAGE.read_text())[0]
    lines = [line for line in first.splitlines() if line.strip()]
    assert len(lines) < 15, lines
    assert "frame()" in first and "build_report" in first


@pytest.mark.slow
def test_the_page_runs(capsys):
    """Every block runs; the first leaves a DataFrame and a report (the other blocks check
    the figures: simulation within 4 SE of exact, the exact value flat_fate gives)."""
    from reports.document import Report

    blocks = code_blocks(PAGE.read_text())
    assert len(blocks) == 4
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(PAGE), "exec"), namespace)  # the page's own code
    assert isinstance(namespace["frame"], pd.DataFrame)
    assert list(namespace["frame"].columns) == ["metric", "value", "se", "exact", "z"]
    report = namespace["report"]
    assert isinstance(report, Report) and report._repr_html_().startswith("<!DOCTYPE html>")
    printed = capsys.readouterr().out
    assert re.fullmatch(r"0\.\d+ ± 0\.\d+ True\n", printed), printed
