"""The benchmarks build what they time: every scenario configuration a benchmark script
declares is a valid one (a renamed field failed `make bench` only after its first
minute). Importing a script runs nothing: each times only under ``__main__``."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from simulators.scenarios.confidence import ConfidenceScenario

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str):
    if str(BENCHMARKS) not in sys.path:  # as when run: a script's directory comes first
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_benchmark_script_imports():
    for path in sorted(BENCHMARKS.glob("bench_*.py")):
        assert _load(path.stem).__name__ == path.stem


def test_the_confidence_paths_are_valid_scenarios():
    paths = _load("bench_simulators").CONFIDENCE_PATHS
    assert set(paths) == {"confidence_noisy_explore", "confidence_baseline_rule"}
    for kwargs in paths.values():
        sc = ConfidenceScenario(replications=10, sessions=5, **kwargs)
        assert sc.withhold_rate == 0.1
    assert ConfidenceScenario(**paths["confidence_noisy_explore"]).reshow_rate == 0.1


def test_the_baseline_worktree_runs_code_there_and_is_removed_after():
    helper = _load("worktree_baseline")
    head = subprocess.run(["git", "-C", str(helper.ROOT), "rev-parse", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    code = "import json, os, sys; print(json.dumps({'cwd': os.getcwd(), 'arg': sys.argv[1]}))"
    with helper.baseline_tree(head) as tree:
        assert tree is not None and (tree / "procmem_core").is_dir()
        got = helper.run_json(tree, code, ["x"], helper.ONE_CORE)
        assert got == {"cwd": str(tree), "arg": "x"}
    assert not tree.exists()
    listed = subprocess.run(["git", "-C", str(helper.ROOT), "worktree", "list"],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert str(tree) not in listed


def test_a_commit_that_cannot_be_checked_out_gives_no_tree(capsys):
    with _load("worktree_baseline").baseline_tree("0" * 40) as tree:
        assert tree is None
    assert "not checked out" in capsys.readouterr().out


def test_the_side_by_side_benchmarks_name_the_cpu():
    """A ratio to a baseline moves with the processor: the scripts print which one."""
    model = _load("worktree_baseline").cpu_model()
    info = Path("/proc/cpuinfo")
    lines = info.read_text(encoding="utf-8").splitlines() if info.exists() else []
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    if names:
        assert model.startswith(names[0])
    assert model.endswith(f", {os.cpu_count()} cores")
