"""The main page's word count as a reader reads it (``reports.length.reader_words``)."""

from __future__ import annotations

import pytest

from reports.length import reader_words, word_budget


@pytest.mark.parametrize(
    ("markdown", "words"),
    [
        ("# A heading\n\nOne answer, 0.05 ± 0.01.", 6),  # '±' is no word; 0.05 and 0.01 are
        ("![gate_oc](gate_oc.png)\n\n*Power against the drop.*", 4),  # the embed is not read
        ("→ In the appendix: [table A1: The world](appendix.md#a1).", 7),  # link text only
        ('<a id="a1"></a>\n\n**A1.** **Runs**', 2),  # the anchor is not read
        ("| x | y |\n|---|---|\n| 1 | a b |", 5),  # cells count, the rule does not
        ("```\nmake_gate(**gate)\n```", 1),
        ("false revert <= 0.05, power >= 0.8 -> done", 6),  # comparisons are not tags
    ],
)
def test_reader_words_counts_what_a_reader_reads(markdown, words):
    assert reader_words(markdown) == words


def test_budgets():
    assert word_budget("quickstart") == 3000 and word_budget("loop") == 2000
