"""A local SQLite cache of chat-completion replies, keyed by a hash of the request.

The key is the SHA-256 of the canonical JSON (sorted keys, no white space) of the request
body the client would send: model, messages, temperature, max_tokens, response_format and
reasoning_effort. The endpoint's URL is not part of the key, so the offline server, which
runs on a fresh port each time, hits the cache across runs; give different endpoints
different model names (they normally have them) or different cache files.

Only completed replies (HTTP 200) are stored, truncated ones included: a retry with more
room is a different request and so a different key. Re-running a replay against a filled
cache costs no tokens and returns the same text.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from procmem_core.errors import ParameterError
from procmem_core.storefile import SCHEMA_OBJECTS, read_only_connection, sqlite_file_problem

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    request TEXT NOT NULL,
    content TEXT NOT NULL,
    finish_reason TEXT,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    reasoning_tokens INTEGER NOT NULL,
    response_id TEXT,
    model TEXT
)
"""


@dataclass(frozen=True)
class CachedReply:
    """The parts of a chat completion the engine uses."""

    content: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    reasoning_tokens: int = 0
    response_id: str | None = None
    model: str | None = None


def request_key(request: dict) -> str:
    """SHA-256 hex digest of the request's canonical JSON."""
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _check_not_foreign(path: Path) -> None:
    """Refuse, before any write, an existing non-empty file that is not a reply cache: not
    SQLite, or an SQLite database holding anything but the ``replies`` table (another
    program's, which ``CREATE TABLE`` would otherwise change). Read without writing."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    problem = sqlite_file_problem(path)
    if problem is None:
        con = read_only_connection(path)
        try:
            names = sorted({r[0] for r in con.execute(SCHEMA_OBJECTS)} - {"replies"})
        finally:
            con.close()
        problem = f"holds another program's tables ({', '.join(names)})" if names else None
    if problem is not None:
        raise sqlite3.DatabaseError(f"file is not a reply cache: it {problem}")


class ReplyCache:
    """Replies stored in one SQLite file (``":memory:"`` for a throw-away cache)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        try:
            if self.path != ":memory:":
                _check_not_foreign(Path(self.path))
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False)
            with self._lock, self._db:
                self._db.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:  # a directory, another file, no permission
            raise ParameterError(
                "cache",
                self.path,
                f"a SQLite reply cache file it can open and write ({exc}: {self.path})",
            ) from None
        self.hits = 0
        self.misses = 0

    def get(self, request: dict) -> CachedReply | None:
        """The stored reply to ``request``, or None; counts hits and misses."""
        with self._lock:
            row = self._db.execute(
                "SELECT content, finish_reason, prompt_tokens, completion_tokens, "
                "reasoning_tokens, response_id, model FROM replies WHERE key = ?",
                (request_key(request),),
            ).fetchone()
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
        return CachedReply(*row)

    def put(self, request: dict, reply: CachedReply) -> None:
        """Store (or replace) the reply to ``request``."""
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    request_key(request),
                    json.dumps(request, sort_keys=True, ensure_ascii=False),
                    reply.content,
                    reply.finish_reason,
                    reply.prompt_tokens,
                    reply.completion_tokens,
                    reply.reasoning_tokens,
                    reply.response_id,
                    reply.model,
                ),
            )

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> ReplyCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
