"""How long a report's main page reads, counted as a reader sees it (issue 30's budget).

A preset's main page is at most about ``MAIN_WORDS`` words, the quickstart's at most
``QUICKSTART_WORDS``; what does not fit (large tables, supporting figures, detail
paragraphs) moves to the appendix page (``reports.document.moved_blocks``).
"""

from __future__ import annotations

import re

MAIN_WORDS = 2000
QUICKSTART_WORDS = 3000

_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"</?a\b[^<>]*>")
_RULE = re.compile(r"^\s*\|?[\s:|-]*-[\s:|-]*\|?\s*$", flags=re.M)
_FENCE = re.compile(r"^`{3,}\s*$", flags=re.M)
_SPLIT = re.compile(r"[\s|]+")
_WORDLIKE = re.compile(r"[^\W_]")


def reader_words(markdown: str) -> int:
    """Words a reader reads on a rendered Markdown page.

    The page's text as rendered: headings, answers, paragraphs, captions, link texts and
    the cells of the tables left on the page count; image embeds (``![name](file)``),
    link targets, HTML anchors (``<a id=...></a>``), table rules (``|---|``), code fences and the
    Markdown marks themselves (``#``, ``*``, ``|``, backticks) do not. A word is a token
    between whitespace or table pipes that holds a letter or a digit: ``0.05``, ``p0``
    and ``max_runs`` count one each; ``±``, ``->`` and ``—`` count none. Tables moved to
    the appendix are not on the page, so their rows do not count.
    """
    text = _IMAGE.sub(" ", markdown)
    text = _LINK.sub(r" \1 ", text)
    text = _TAG.sub(" ", text)
    text = _RULE.sub(" ", text)
    text = _FENCE.sub(" ", text)
    return sum(1 for token in _SPLIT.split(text) if _WORDLIKE.search(token))


def word_budget(experiment: str) -> int:
    """The main page's budget: ``QUICKSTART_WORDS`` for the quickstart, else
    ``MAIN_WORDS``."""
    return QUICKSTART_WORDS if experiment == "quickstart" else MAIN_WORDS


OPENING_SENTENCES = 2
"""A section's opening answer is at most this many sentences (issue 30); the rest of
what it says follows as a paragraph."""

_SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[A-Z(\"'])")


def sentences(text: str) -> list[str]:
    """``text`` split into sentences: after ``.``, ``?`` or ``!`` and whitespace, where
    the next one starts with a capital, a quote or a parenthesis (``0.05``, ``p0.8`` and
    ``e.g. x`` do not split)."""
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def split_opening(text: str, n: int = OPENING_SENTENCES) -> tuple[str, str]:
    """The first ``n`` sentences of ``text`` (the opening answer) and the rest."""
    parts = sentences(text)
    return " ".join(parts[:n]), " ".join(parts[n:])
