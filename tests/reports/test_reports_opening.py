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


def test_a_section_opens_in_two_sentences_and_says_the_rest_after_its_world() -> None:
    """Every section (``reports.document.Section``): the answer is cut to two sentences;
    the rest is the first paragraph, after the world table and its sentence if any."""
    import pandas as pd

    from reports.document import WORLD_CAPTION, Section, Table

    said = "First, 0.05 here. Second (p0 0.3). Third one. Fourth."
    plain = Section("k", "t", said, ["a paragraph"])
    assert plain.answer == "First, 0.05 here. Second (p0 0.3)."
    assert plain.blocks == ["Third one. Fourth.", "a paragraph"] and plain.said == said
    world = Table(WORLD_CAPTION, pd.DataFrame({"parameter": ["x"], "value": ["1"]}))
    opened = Section("k", "t", said, [world, "depends on x", "more"])
    assert opened.blocks == [world, "depends on x", "Third one. Fourth.", "more"]
    short = Section("k", "t", "One. Two.", [world])
    assert short.answer == "One. Two." and short.more == "" and short.blocks == [world]


def test_a_replaced_section_keeps_what_its_answer_said() -> None:
    """The glossary step rebuilds sections with ``dataclasses.replace``: the cut answer
    and its paragraph survive it, not cut again or lost."""
    from dataclasses import replace

    from reports.document import Section

    said = "One. Two. Three."
    section = replace(Section("k", "t", said, []), blocks=["Three.", "Terms. x."])
    assert section.answer == "One. Two." and section.more == "Three." and section.said == said
    assert section.blocks == ["Three.", "Terms. x."]
