"""The shared calibration cache (``gates.calibration_store``): exact round trip, shared
across processes, corrupt entries recomputed, concurrent writers, nothing outside its folder."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from procmem_core.gates import calibrated_sprt, calibration_store, two_sample
from procmem_core.gates.calibrated_sprt import CalibratedSPRTGate
from procmem_core.gates.two_sample import TwoSampleGate

ROOT = Path(__file__).resolve().parents[3]
SIZES = (23, 31)
GATES = {
    "two_sample": lambda: TwoSampleGate(max_runs=40, ledger=20, design="concurrent"),
    "calibrated_sprt": lambda: CalibratedSPRTGate(max_runs=40, ledger=20),
}


def clear_process_caches() -> None:
    two_sample._calibrated.cache_clear()
    calibrated_sprt._calibrated.cache_clear()


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A fresh file store in ``tmp_path/cache``; the process caches and counters cleared."""
    monkeypatch.delenv(calibration_store.CACHE_ENV, raising=False)
    cache = tmp_path / "cache"
    calibration_store.install(calibration_store.FileStore(cache))
    clear_process_caches()
    calibration_store.STATS.clear()
    yield cache
    calibration_store.install(None)
    clear_process_caches()


def bits(value) -> object:
    """``value`` with every float and array as its exact bytes (NaN == NaN)."""
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, float):
        return value.hex()
    if dataclasses.is_dataclass(value):
        return tuple((f.name, bits(getattr(value, f.name))) for f in dataclasses.fields(value))
    if isinstance(value, tuple | list):
        return tuple(bits(v) for v in value)
    return value


@pytest.mark.parametrize("name", sorted(GATES))
def test_cached_calibration_equals_fresh_exactly(folder, name):
    calibration_store.install(calibration_store.MemoryStore())  # fresh: nothing shared
    gate = GATES[name]()
    fresh = {m: gate.calibration(gate.key_at(m)) for m in SIZES}
    calibration_store.install(calibration_store.FileStore(folder))
    clear_process_caches()
    gate.levels(SIZES[0]), gate.levels(SIZES[1])  # computed, written
    assert calibration_store.STATS["stored"] >= len(SIZES)
    clear_process_caches()
    calibration_store.STATS.clear()
    cached = {m: gate.calibration(gate.key_at(m)) for m in SIZES}
    assert calibration_store.STATS["miss"] == 0 and calibration_store.STATS["hit"] == len(SIZES)
    for m in SIZES:
        assert cached[m].worst is not None
        assert bits(cached[m]) == bits(fresh[m])
        assert gate.levels(m) == (fresh[m].revert_level, fresh[m].final_level)


SECOND = """
import json, sys
from procmem_core.gates import calibration_store as cs
from procmem_core.gates.two_sample import TwoSampleGate
gate = TwoSampleGate(max_runs=40, ledger=20, design="concurrent")
levels = [[x.hex() for x in gate.levels(m)] for m in (23, 31)]
print(json.dumps({"stats": dict(cs.STATS), "levels": levels}))
"""


def run_second(folder: Path, cwd: Path) -> dict:
    env = {**os.environ, calibration_store.CACHE_ENV: str(folder), "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", SECOND], env=env, cwd=cwd, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_process_reads_the_entries(folder, tmp_path):
    gate = GATES["two_sample"]()
    mine = [[x.hex() for x in gate.levels(m)] for m in SIZES]
    work = tmp_path / "work"
    work.mkdir()
    other = run_second(folder, work)
    assert other["levels"] == mine
    # the gate's own calibration (ledger 20) and the two sizes, each read, none computed
    assert other["stats"].get("miss", 0) == 0 and other["stats"]["hit"] >= len(SIZES)


def test_nothing_outside_the_cache_folder_is_touched(tmp_path, monkeypatch):
    monkeypatch.delenv(calibration_store.CACHE_ENV, raising=False)
    work, cache = tmp_path / "work", tmp_path / "deep" / "cache"
    work.mkdir()
    before = sorted(p.name for p in ROOT.iterdir()), default_cache_state()
    first = run_second(cache, work)  # computes and writes
    second = run_second(cache, work)  # reads
    assert first["stats"]["miss"] > 0 and second["stats"].get("miss", 0) == 0
    assert first["levels"] == second["levels"]
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and cache not in p.parents]
    assert outside == []
    assert all(p.name.endswith(".json.gz") for p in cache.iterdir())  # no temporary left
    assert (sorted(p.name for p in ROOT.iterdir()), default_cache_state()) == before


def default_cache_state() -> list[tuple[str, int]]:
    """The repo's default cache folder's files and their modification times."""
    default = ROOT / ".procmem"
    return (
        sorted((str(p), p.stat().st_mtime_ns) for p in default.rglob("*"))
        if default.exists()
        else []
    )


def test_corrupt_or_foreign_entry_is_recomputed(folder):
    gate = GATES["two_sample"]()
    want = gate.levels(SIZES[0])
    files = sorted(folder.iterdir())
    assert files
    for i, f in enumerate(files):  # truncated gzip, or not gzip at all
        raw = f.read_bytes()
        f.write_bytes(raw[: len(raw) // 2] if i % 2 == 0 else b"not a cache entry")
    clear_process_caches()
    calibration_store.STATS.clear()
    assert gate.levels(SIZES[0]) == want
    assert calibration_store.STATS["corrupt"] >= 1 and calibration_store.STATS["hit"] == 0
    clear_process_caches()
    calibration_store.STATS.clear()
    assert gate.levels(SIZES[0]) == want  # rewritten whole: read back
    assert calibration_store.STATS["hit"] >= 1 and calibration_store.STATS["corrupt"] == 0


def test_an_unusable_folder_never_fails_the_job(tmp_path):
    blocked = tmp_path / "a file"
    blocked.write_text("in the way")
    calibration_store.install(calibration_store.FileStore(blocked / "cache"))
    clear_process_caches()
    try:
        gate = GATES["two_sample"]()  # reads and writes fail: computed, logged, not stored
        assert gate.levels(SIZES[0]) == GATES["two_sample"]().levels(SIZES[0])
    finally:
        calibration_store.install(None)
        clear_process_caches()
    assert blocked.read_text() == "in the way"


def test_an_entry_answers_only_its_own_key(folder):
    store = calibration_store.FileStore(folder)
    store.put("a", 1.5)
    os.replace(store.path("a"), store.path("b"))  # a's entry under b's name
    assert store.get("b") is None and calibration_store.STATS["corrupt"] == 1


WRITER = """
import sys
import numpy as np
from procmem_core.gates.calibration_store import FileStore
store, value = FileStore(sys.argv[1]), np.arange(50_000, dtype=float) / 7.0
for _ in range(10):
    store.put("shared", (float(sys.argv[2]), value))
"""


def test_concurrent_writers_leave_a_valid_entry(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), str(w)], env=env)
        for w in range(3)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    got = calibration_store.FileStore(tmp_path).get("shared")
    assert got is not None and got[0] in (0.0, 1.0, 2.0)
    assert np.array_equal(got[1], np.arange(50_000, dtype=float) / 7.0)
    assert [p.name for p in tmp_path.iterdir()] == [
        calibration_store.FileStore(tmp_path).path("shared").name
    ]


def test_round_trip_is_bit_exact_for_awkward_values():
    values = [
        0.1,
        1 / 3,
        0.1 + 0.2,
        -0.0,
        float("inf"),
        float("nan"),
        5e-324,
        np.float64(1 / 3),
        np.array([[np.nan, -0.0], [1e308, 2.0**-1074]]),
        np.arange(3, dtype=np.int32),
        {"design": "concurrent", "ledger": 20, "p0": (0.3, 0.95), "off": None, "on": True},
    ]
    back = calibration_store.decode(json.loads(json.dumps(calibration_store.encode(values))))
    assert bits(back) == bits(values)
    assert type(back[7]) is np.float64 and back[9].dtype == np.int32
    assert type(back[10]["ledger"]) is int and type(back[10]["on"]) is bool


def test_unstorable_values_are_returned_not_stored(folder):
    @calibration_store.stored("test.unstorable")
    def make(x: int) -> object:
        return object()

    assert make(1) is not None
    assert calibration_store.STATS["stored"] == 0
    assert not folder.exists() or not any(folder.iterdir())
    with pytest.raises(ValueError, match="not a procmem_core class"):
        calibration_store.decode({"dc": "os:system", "fields": {}})


def test_the_key_holds_every_field_and_the_code_version(monkeypatch):
    base = TwoSampleGate(max_runs=40, ledger=20, design="concurrent")
    fn = two_sample._calibrated.__wrapped__
    key = calibration_store.entry_key("k", fn, (base.key_at(23),), {})
    for field, value in (("p0_low", 0.3 + 2**-50), ("alpha", 0.049), ("min_runs", 4)):
        other = dataclasses.replace(base, **{field: value, "final_level": None})
        assert calibration_store.entry_key("k", fn, (other.key_at(23),), {}) != key, field
    assert calibration_store.entry_key("k", fn, (base.key_at(23), False), {}) != key
    calibration_store.version.cache_clear()
    monkeypatch.setattr(calibration_store, "CALIBRATION_VERSION", -1)
    try:
        assert calibration_store.entry_key("k", fn, (base.key_at(23),), {}) != key
    finally:
        calibration_store.version.cache_clear()


def test_the_version_hashes_every_procmem_core_module_the_gates_import():
    """A gates or flat module (both store answers) importing another procmem_core module
    must add it to ``SOURCES``, or a change there would not invalidate the cache."""
    imported = set()
    for package in ("gates", "flat"):
        for f in (ROOT / "procmem_core" / package).glob("*.py"):
            imported |= set(re.findall(r"^from procmem_core\.(\w+)", f.read_text(), re.M))
    covered = {s.removesuffix(".py") for s in calibration_store.SOURCES}
    assert imported - covered == set()


def test_a_design_answer_is_read_back_equal(folder):
    from procmem_core.gates.design import design_gate
    from procmem_core.gates.prescribed import prescribed_answer
    from procmem_core.gates.question import DesignQuestion

    question = DesignQuestion(concurrent=0.5, p0_low=0.3, p0_high=0.95, max_runs=200)
    prescribed_answer.cache_clear()
    fresh = prescribed_answer(question)
    prescribed_answer.cache_clear()
    calibration_store.STATS.clear()
    again = prescribed_answer(question)
    assert calibration_store.STATS["hit"] == 1 and calibration_store.STATS["miss"] == 0
    assert again == fresh and bits(again) == bits(fresh)
    assert again.config == fresh.config and again is not fresh
    # the whole design (every family's answer) was stored on the way, and reads back too
    calibration_store.STATS.clear()
    design = design_gate(question)
    assert calibration_store.STATS["hit"] == 1 and calibration_store.STATS["miss"] == 0
    assert design.chosen == fresh and bits(design.chosen) == bits(fresh)
    assert design.question == question and len(design.answers) > 1


def test_a_flat_rule_design_is_read_back_bit_for_bit(folder):
    from procmem_core.flat.design import _design, design_rule
    from procmem_core.flat.targets import RuleTargets

    targets = RuleTargets(0.1, -0.1, 0.6, 0.9, 0.9, 60)
    _design.cache_clear()
    fresh = design_rule(targets, "baseline")
    assert calibration_store.STATS["stored"] == 1
    _design.cache_clear()
    calibration_store.STATS.clear()
    again = design_rule(targets, "baseline")
    assert calibration_store.STATS["hit"] == 1 and calibration_store.STATS["miss"] == 0
    assert bits(again) == bits(fresh) and again is not fresh
    assert again.pick.rule == fresh.pick.rule and len(again.frontier) == len(fresh.frontier)
