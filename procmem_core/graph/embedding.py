"""Turning texts into vectors for matching (seed: loom-procedures.txt, "Matching").

- ``Embedder``: the protocol (``dim`` and ``embed(texts) -> (n, dim)`` L2-normalised rows);
  any sentence-embedding model can be plugged in behind it.
- ``HashingEmbedder``: the deterministic, dependency-free default: hashed word and
  word-bigram counts (CRC-32 buckets), L2-normalised. Counts are non-negative, so cosine
  similarities lie in [0, 1].

``graph.matching`` scores and ranks procedures with these vectors.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Protocol, runtime_checkable

import numpy as np

from procmem_core.errors import ParameterError, check_int

__all__ = ["EMBED_CACHE_TEXTS", "FLOOR_SLACK", "Embedder", "HashingEmbedder", "reaches_floor"]

_TOKEN = re.compile(r"[a-z0-9]+")
EMBED_CACHE_TEXTS = 4096
"""``HashingEmbedder`` keeps the rows of at most this many distinct texts."""
FLOOR_SLACK = 1e-5
"""How far below a similarity floor a cosine may be and still reach it: embeddings are
float32 unit rows, and the cosine of a row with itself came out 1 - 6.6e-7 to 1 + 6.6e-7
over 2,000 texts of up to 300 words (``HashingEmbedder``), so without it a floor of 1
left most identical sessions unpaired and 3 of 30 identical situations unmatched."""


def reaches_floor(similarity: float | np.ndarray, floor: float) -> bool | np.ndarray:
    """Whether a cosine ``similarity`` (or each of an array) reaches ``floor`` within
    ``FLOOR_SLACK``: the distill worker's ``similarity_floor`` and ``match``'s
    ``min_similarity`` alike."""
    if isinstance(similarity, np.ndarray):
        return similarity >= floor - FLOOR_SLACK
    return bool(similarity >= floor - FLOOR_SLACK)


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised row vectors of a fixed width ``dim``."""

    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an ``(len(texts), dim)`` float array with unit-norm (or zero) rows."""
        ...


@dataclass(frozen=True)
class HashingEmbedder:
    """Hashed bag of words plus word bigrams (weight ``bigram_weight``), L2-normalised.

    Deterministic across processes and machines (CRC-32, not Python's salted ``hash``).
    An empty text embeds to the zero vector (similarity 0 to everything).
    """

    dim: int = 512
    bigram_weight: float = 0.5
    _rows: dict[str, np.ndarray] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )  # text -> its row: the embedding is deterministic, so a repeated text is embedded once

    def __post_init__(self) -> None:
        check_int("dim", self.dim, minimum=16)
        if not 0.0 <= float(self.bigram_weight) <= 10.0:
            raise ParameterError("bigram_weight", self.bigram_weight, "expected 0 <= w <= 10")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 1:  # a match's one situation: a copy of its row, no fill loop
            return self._row(str(texts[0]))[None].copy()
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self._row(str(text))
        return out

    def _row(self, text: str) -> np.ndarray:
        """The row of one text, embedded once and kept (``EMBED_CACHE_TEXTS``)."""
        rows = self._rows
        row = rows.get(text)
        if row is None:
            row = self._embed_one(text)
            if len(rows) >= EMBED_CACHE_TEXTS:
                _forget_oldest(rows)
            rows[text] = row
        return row

    def _embed_one(self, text: str) -> np.ndarray:
        out = np.zeros((1, self.dim), dtype=np.float32)
        words = _TOKEN.findall(text.lower())
        for w in words:
            out[0, zlib.crc32(b"w:" + w.encode()) % self.dim] += 1.0
        for a, b in pairwise(words):
            out[0, zlib.crc32(f"b:{a} {b}".encode()) % self.dim] += self.bigram_weight
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.divide(out, norms, out=out, where=norms > 0)[0]


def _forget_oldest(rows: dict[str, np.ndarray]) -> None:
    """Drop the oldest cached row; safe when threads share the embedder (another thread
    may change the dict between ``iter`` and ``next``, or drop the same row first)."""
    with suppress(StopIteration, RuntimeError):
        rows.pop(next(iter(rows)), None)
