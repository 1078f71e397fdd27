"""The live loop's journal: one JSON line per finished session, appended in session order.

Sessions run in rounds; a round's records are appended (and flushed to disk) only once
the whole round is done and applied, in session order. ``Journal.done(round_size)``
reads the records of the complete rounds: a record line cut off by a kill, or the
records of a round the budget stopped, are dropped, so a resumed run starts at the
first round not complete and, given a deterministic endpoint, produces exactly the
sessions an uninterrupted run would (no session twice, none missing).

``sessions_frame`` writes the records in the procmem session log schema (docs/logs.md,
version 1): ``session_id``, ``time`` (the session index, an integer that orders them),
``top_key``, ``withheld``, ``explore_rate``, ``outcome``, and the optional ``agent``,
``namespace``, ``shown_keys`` (a JSON list) and ``score``; extra columns ``task_id`` and
``tokens`` (the tokens the endpoint reported for the session's calls).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig

from experiments.identity import ROOT, digest
from experiments.spec import identity_container

SESSION_COLUMNS = (
    "session_id", "time", "top_key", "withheld", "explore_rate", "outcome", "agent",
    "namespace", "shown_keys", "score", "task_id", "tokens",
)  # fmt: skip


class Journal:
    """An append-only JSON Lines file of session records."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def reset(self) -> None:
        """Start empty (a new run that does not resume)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("", encoding="utf-8")

    def read(self) -> list[dict[str, Any]]:
        """Every whole record line (a last line cut off by a kill is left out)."""
        if not self.path.is_file():
            return []
        records = []
        # lines end at \n only: a record written with ensure_ascii=False holds U+2028,
        # U+2029 or NEL raw, where str.splitlines would break it
        for line in self.path.read_text(encoding="utf-8").split("\n"):
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                break  # the torn tail of a killed write; nothing after it was written
        return records

    def done(self, round_size: int, sessions: int) -> list[dict[str, Any]]:
        """The records of the complete rounds, in order, rewriting the file to them."""
        records = self.read()
        keep = []
        for start in range(0, len(records), round_size):
            chunk = records[start : start + round_size]
            expected = min(round_size, sessions - start)
            whole = len(chunk) == expected and all(
                r["index"] == start + i for i, r in enumerate(chunk)
            )
            if not whole or any(r.get("partial") for r in chunk):
                break
            keep.extend(chunk)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._write(keep, "w")
        return keep

    def append(self, records: Sequence[dict[str, Any]]) -> None:
        """Append ``records`` and force them to disk."""
        self._write(records, "a")

    def _write(self, records: Sequence[dict[str, Any]], mode: str) -> None:
        with self.path.open(mode, encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())


def sessions_frame(
    records: Sequence[dict[str, Any]], explore_rate: float, agent: str, namespace: str
) -> pd.DataFrame:
    """The records as the session log's ``sessions`` table (see the module doc)."""
    rows = [
        {
            "session_id": r["session_id"],
            "time": int(r["index"]),
            "top_key": r["top_key"],
            "withheld": bool(r["withheld"]),
            "explore_rate": float(explore_rate),
            "outcome": int(r["outcome"]),
            "agent": agent,
            "namespace": namespace,
            "shown_keys": json.dumps(r["shown_keys"]),
            "score": float(r["outcome"]),
            "task_id": r["task_id"],
            "tokens": int(r["tokens"]),
        }
        for r in records
    ]
    return pd.DataFrame(rows, columns=list(SESSION_COLUMNS))


RESUME_FREE = ("budget", "concurrency", "journal")
"""``live.*`` keys a resume may change: how much to spend, how many sessions at once and
where the journal lies; every other key of the config's identity makes another run."""


def resume_identity(cfg: DictConfig) -> str:
    """The config hash without ``RESUME_FREE``: the run a journal belongs to (a raised
    ``live.budget.tokens`` resumes the same journal)."""
    identity = identity_container(cfg)
    live = identity.get("live")
    if isinstance(live, dict):
        identity = {**identity, "live": {k: v for k, v in live.items() if k not in RESUME_FREE}}
    return digest(identity)


def journal_path(cfg: DictConfig, settings: Any) -> Path:
    """``live.journal`` (``settings.journal``), else
    ``outputs/live_journals/<resume identity>.jsonl`` in the repo."""
    if settings.journal:
        return Path(settings.journal)
    return ROOT / "outputs" / "live_journals" / f"{resume_identity(cfg)}.jsonl"
