"""Pruning the calibration cache (``calibration_store.prune``, ``python -m experiments.calcache
prune``): entries of other code versions and unreadable ones go, this version's stay and read
back bit for bit, and nothing that is not the store's own is touched."""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest

from experiments.calcache import main
from procmem_core.errors import ParameterError
from procmem_core.gates import calibration_store as cs

OTHER = "0" * 64


def key(version: str, x: float) -> str:
    """A key as ``entry_key`` writes it, under ``version``."""
    args = [["x", cs.encode(x)]]
    return json.dumps(["test.prune", version, args], sort_keys=True, separators=(",", ":"))


@pytest.fixture
def cache(tmp_path):
    """A store with 2 entries of this version, 2 of another, 1 damaged, an old and a fresh
    temporary file, and files that are not the store's."""
    folder = tmp_path / "cache"
    store = cs.FileStore(folder)
    mine = {key(cs.version(), x): np.array([x, x / 3]) for x in (1.0, 2.0)}
    for k, v in mine.items():
        store.put(k, v)
    for x in (1.0, 3.0):
        store.put(key(OTHER, x), np.array([x]))
    (folder / f"{'a' * 64}.json.gz").write_bytes(b"not gzip at all")
    old, fresh = folder / ".tmp-old.json.gz", folder / ".tmp-fresh.json.gz"
    old.write_bytes(b"partial")
    fresh.write_bytes(b"partial")
    stamp = time.time() - 2 * cs.TEMP_MAX_AGE
    os.utime(old, (stamp, stamp))
    (folder / "notes.txt").write_text("mine, not procmem's")
    (folder / f"{'b' * 64}.json").write_text("{}")  # not an entry's name
    (folder / "sub").mkdir()
    (folder / "sub" / f"{'c' * 64}.json.gz").write_bytes(b"x")
    return folder, store, mine


def snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_entry_version_reads_the_version_an_entry_was_written_under(cache):
    folder, store, mine = cache
    assert {cs.entry_version(store.path(k)) for k in mine} == {cs.version()}
    assert cs.entry_version(store.path(key(OTHER, 3.0))) == OTHER
    assert cs.entry_version(folder / f"{'a' * 64}.json.gz") is None


def test_a_dry_run_counts_and_removes_nothing(cache):
    folder, store, _ = cache
    before = snapshot(folder)
    done = cs.prune(folder, dry_run=True)
    entries = sorted(folder.glob("*.json.gz"))
    sizes = {p.name: p.stat().st_size for p in entries}
    other = [store.path(key(OTHER, x)).name for x in (1.0, 3.0)] + [f"{'a' * 64}.json.gz"]
    assert (done.removed, done.temporary, done.kept) == (3, 1, 2)
    assert done.removed_bytes == sum(sizes[n] for n in other)
    assert done.kept_bytes == sum(s for n, s in sizes.items() if n not in other and "tmp" not in n)
    assert snapshot(folder) == before


def test_prune_keeps_this_versions_entries_and_touches_nothing_else(cache):
    folder, store, mine = cache
    before = snapshot(folder)
    done = cs.prune(folder)
    after = snapshot(folder)
    gone = set(before) - set(after)
    assert {p.name for p in gone} == {
        store.path(key(OTHER, 1.0)).name,
        store.path(key(OTHER, 3.0)).name,
        f"{'a' * 64}.json.gz",
        ".tmp-old.json.gz",
    }
    assert all(after[p] == before[p] for p in after)  # what stays is unchanged, byte for byte
    for k, v in mine.items():  # and reads back bit for bit
        got = store.get(k)
        assert got.dtype == v.dtype and got.tobytes() == v.tobytes()
    assert (done.removed, done.temporary, done.kept) == (3, 1, 2)
    assert cs.prune(folder) == cs.Pruned(0, 0, 0, 2, done.kept_bytes)  # nothing left to do


def test_prune_refuses_a_folder_that_is_not_there(tmp_path):
    with pytest.raises(ParameterError, match=r"folder.*an existing calibration cache folder"):
        cs.prune(tmp_path / "missing")
    assert not (tmp_path / "missing").exists()


def test_the_command_prunes_the_folder_it_names_and_says_what_it_did(cache, capsys):
    folder, _, _ = cache
    assert main(["prune", "--folder", str(folder), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{folder}: would remove 3 entries of other code versions")
    assert "and 1 leftover temporary files; kept 2 entries of this code's version" in out
    assert main(["prune", "--folder", str(folder)]) == 0
    assert ": removed 3 entries" in capsys.readouterr().out
    assert main(["prune", "--folder", str(folder)]) == 0
    assert ": removed 0 entries" in capsys.readouterr().out


def test_the_command_names_a_missing_folder_and_stops(tmp_path, capsys):
    assert main(["prune", "--folder", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "--folder" in err and "nope" in err and "an existing calibration cache folder" in err
    assert not (tmp_path / "nope").exists()
