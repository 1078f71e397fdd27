"""Row-per-record embeddings for vectorized search (rows move on delete: swap-remove)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from procmem_core.errors import ParameterError
from procmem_core.graph.matching import Embedder


class VectorIndex:
    """Unit-norm embedding rows by record id; ``similarities`` is one matrix-vector product."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.ids: list[str] = []
        self.rows: dict[str, int] = {}
        self._emb = np.zeros((16, embedder.dim), dtype=np.float32)

    def __len__(self) -> int:
        return len(self.ids)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The embedder's rows for ``texts``, shape-checked."""
        vectors = np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)
        if vectors.shape != (len(texts), self.embedder.dim):
            raise ParameterError(
                "embedder",
                self.embedder,
                f"embed() returned shape {vectors.shape}, expected ({len(texts)}, dim)",
            )
        return vectors

    def put(self, record_id: str, vector: np.ndarray) -> None:
        """Add a row (or replace the row of an id already held)."""
        row = self.rows.get(record_id)
        if row is None:
            if len(self.ids) == self._emb.shape[0]:
                grown = np.zeros((2 * self._emb.shape[0], self._emb.shape[1]), dtype=np.float32)
                grown[: len(self.ids)] = self._emb[: len(self.ids)]
                self._emb = grown
            row = len(self.ids)
            self.ids.append(record_id)
            self.rows[record_id] = row
        self._emb[row] = vector

    def remove(self, record_id: str) -> None:
        row = self.rows.pop(record_id)
        last = len(self.ids) - 1
        if row != last:
            moved = self.ids[last]
            self._emb[row] = self._emb[last]
            self.ids[row] = moved
            self.rows[moved] = row
        self.ids.pop()

    def vector(self, record_id: str) -> np.ndarray:
        return self._emb[self.rows[record_id]].copy()

    def similarities(self, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of every row to the unit-norm ``query``, in ``ids`` order."""
        return self._emb[: len(self.ids)] @ np.asarray(query, dtype=np.float32)
