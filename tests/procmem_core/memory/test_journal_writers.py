"""Two openers of one row-journal store (``memory.journal``): a write from an opener that
another opener has overtaken is refused, naming the file, and no write that returned is
lost (issue 31: nothing lost). Before, each opener handed out the same ids from its own
counter and overwrote the other's rows: 4 processes x 30 ``set`` kept 32-60 of 120."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from procmem_core.learnings import LearningsQueue
from procmem_core.memory import MemoryStore, Principal
from procmem_core.reflections.ledger import DistillLedger
from procmem_core.storefile import StoreFileError

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
ADMIN = Principal("root", "admin")


def test_an_overtaken_memory_store_is_refused_and_nothing_is_lost(tmp_path):
    path = tmp_path / "loom.db"
    first, second = MemoryStore.open(path), MemoryStore.open(path)
    first.set("the refund window is 30 days")
    with pytest.raises(StoreFileError) as err:
        second.set("refunds need a receipt")  # it would be mem_1 too
    message = str(err.value)
    assert message.startswith(f"{path}: its memory rows were written by another opener")
    assert "nothing was written" in message and "close it and reopen it" in message
    assert len(second) == 0  # refused before it was kept
    first.set("refunds over 500 need a manager")
    first.close()
    second.close()
    with MemoryStore.open(path) as memory:
        assert [r.text for r in memory.records()] == [
            "the refund window is 30 days",
            "refunds over 500 need a manager",
        ]
        memory.set("a reopened store writes again")
        assert len(memory) == 3


def test_a_write_by_another_process_refuses_the_stale_opener(tmp_path):
    """A real second process writes (and exits: ``subprocess.run`` waits for it)."""
    path = tmp_path / "loom.db"
    mine = MemoryStore.open(path)
    mine.set("written before the other process")
    code = (
        "import sys\nfrom procmem_core.memory import MemoryStore\n"
        "with MemoryStore.open(sys.argv[1]) as m:\n    m.set('written by the other process')\n"
    )
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    subprocess.run([sys.executable, "-c", code, str(path)], env=env, check=True, timeout=300)
    with pytest.raises(StoreFileError, match="written by another opener"):
        mine.set("a stale write")
    mine.close()
    with MemoryStore.open(path) as memory:
        assert [r.text for r in memory.records()] == [
            "written before the other process",
            "written by the other process",
        ]


def test_the_check_is_per_owner_so_the_stores_still_share_one_file(tmp_path):
    path = tmp_path / "loom.db"
    memory = MemoryStore.open(path)
    queue = LearningsQueue.open(path, memory)
    ledger = DistillLedger.open(path)
    memory.set("the refund window is 30 days")
    queue.propose("always confirm the amount", principal=ADMIN)
    memory.set("refunds need a receipt")
    for store in (queue, memory, ledger):
        store.close()
    with MemoryStore.open(path) as memory, LearningsQueue.open(path) as queue:
        assert (len(memory), len(queue)) == (2, 1)
