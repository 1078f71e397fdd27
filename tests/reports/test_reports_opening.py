"""A section's opening answer in at most two sentences (``reports.length``, issue 30)."""

from __future__ import annotations

import pytest

from reports.length import sentences, split_opening


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("One. Two.", ["One.", "Two."]),
        (
            "Rate 0.05 at p0.8, e.g. here. Next (yes).",
            ["Rate 0.05 at p0.8, e.g. here.", "Next (yes)."],
        ),
        ("Does it learn? No: it gets worse.", ["Does it learn?", "No: it gets worse."]),
        ("Quoted. 'Next' one! \"Third\"", ["Quoted.", "'Next' one!", '"Third"']),
        ("  ", []),
    ],
)
def test_sentences(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


def test_split_opening_keeps_every_word() -> None:
    text = "First one. Second (with 0.5). Third: the rest. Fourth."
    opening, rest = split_opening(text)
    assert opening == "First one. Second (with 0.5)."
    assert rest == "Third: the rest. Fourth."
    assert split_opening("Only one.") == ("Only one.", "")
