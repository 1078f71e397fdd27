"""The benchmarks build what they time: every scenario configuration a benchmark script
declares is a valid one (a renamed field failed `make bench` only after its first
minute). Importing a script runs nothing: each times only under ``__main__``."""

from __future__ import annotations

import importlib.util
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
