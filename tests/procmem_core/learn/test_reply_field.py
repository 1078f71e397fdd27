"""The one parse of a model's JSON-mode reply (extraction, bot rules, distill, revisions)."""

from __future__ import annotations

import pytest

from procmem_core.learn.extraction import ExtractionError, InvalidJSONReply, reply_field


def test_the_field_is_read_fenced_or_not() -> None:
    assert reply_field('{"revision": {"step": "x"}}', "revision", dict) == {"step": "x"}
    fenced = '```json\n{"procedures": [{"title": "t"}]}\n```'
    assert reply_field(fenced, "procedures", list) == [{"title": "t"}]


@pytest.mark.parametrize(
    ("raw", "key", "kind", "error", "text"),
    [
        ("not json", "revision", dict, InvalidJSONReply, "not JSON"),
        ("", "revision", dict, InvalidJSONReply, "not JSON"),
        (
            '{"revision": []}',
            "revision",
            dict,
            ExtractionError,
            'expected an object {"revision": {...}}',
        ),
        (
            '{"rules": []}',
            "agent_rules",
            list,
            ExtractionError,
            'expected an object {"agent_rules": [...]}',
        ),
        ("[1, 2]", "procedures", list, ExtractionError, 'expected an object {"procedures": [...]}'),
    ],
)
def test_what_is_not_the_field_is_refused_naming_it(raw, key, kind, error, text) -> None:
    with pytest.raises(error) as got:
        reply_field(raw, key, kind)
    assert text in str(got.value)
    assert got.value.reason == ("invalid_json" if error is InvalidJSONReply else "shape")
    assert got.value.raw == raw
