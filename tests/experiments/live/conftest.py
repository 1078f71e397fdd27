"""The live tests' helpers: ``foreign_server`` (this folder) importable, and its tasks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from foreign_server import write_tasks


@pytest.fixture
def foreign_tasks(tmp_path: Path) -> Path:
    """60 tasks asking what could go wrong, scored by the worst-case checker."""
    return write_tasks(tmp_path / "foreign.jsonl")
