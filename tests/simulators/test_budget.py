"""The budget verb: each scenario's estimate of its memory against what it allocates,
and the refusal past a budget, with the estimate and the limit, before any work."""

from __future__ import annotations

import tracemalloc

import pytest

from procmem_core.errors import ParameterError
from simulators import SCENARIOS
from simulators.scenarios.base import Budget, size_text, time_text

# sizes where the kept-per-replication and per-chunk terms dominate the fixed costs
SIZES = {
    "fate": {"replications": 400_000, "sessions": 20},
    "confidence": {"replications": 20_000, "sessions": 20},
    "gate": {"replications": 40_000},
    "explore": {"replications": 400, "sessions": 1000},
    "loop": {"replications": 1, "sessions": 150},
    "learnings": {"replications": 8, "sessions": 400},
    "reflections": {"replications": 8, "sessions": 200},
}


@pytest.mark.parametrize("name", sorted(SIZES))
def test_the_memory_estimate_is_within_a_factor_two_of_the_peak(name):
    scenario = SCENARIOS[name](**SIZES[name])
    work = scenario.work()
    if name == "reflections":  # the model client and server start once per process
        SCENARIOS[name](replications=2, sessions=8).run(0)
    tracemalloc.start()
    try:
        scenario.run(3)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert 0.5 <= work.memory_bytes / peak <= 2.0, (size_text(work.memory_bytes), peak)
    assert work.seconds > 0 and "replications" in work.drivers


def test_the_estimate_grows_with_the_parameters_it_names():
    small, big = (SCENARIOS["fate"](replications=r, sessions=20).work() for r in (10**4, 10**8))
    assert big.seconds == pytest.approx(small.seconds * 10**4)
    assert big.memory_bytes > 1000 * small.memory_bytes


def test_past_the_budget_the_run_is_refused_with_estimate_and_limit():
    scenario = SCENARIOS["fate"](replications=10**12, sessions=20)
    tracemalloc.start()
    try:
        with pytest.raises(ParameterError) as info:
            scenario.check_budget(Budget(8e9, 3600.0, " (test)"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 10**6  # nothing was allocated: the refusal comes from the estimate
    text = str(info.value)
    assert text.startswith("replications=1000000000000 is not allowed: a run within the budget")
    assert "replications=1000000000000, sessions=20" in text
    assert "about 24.0 TB of memory and 23.1 days" in text
    assert "past the budget of 8.0 GB and 1.0 hours (test)" in text
    fine = SCENARIOS["fate"](replications=1000, sessions=20)
    assert fine.check_budget(Budget(8e9, 3600.0)) == fine.work()
    assert fine.check_budget(Budget(8e9, None)).seconds < 1


def test_sizes_and_times_read_as_words():
    assert (size_text(2.5e12), size_text(3.2e9), size_text(4e6), size_text(512)) == (
        "2.5 TB", "3.2 GB", "4.0 MB", "0.5 kB"
    )  # fmt: skip
    assert (time_text(5), time_text(90), time_text(7200), time_text(3 * 86400)) == (
        "5.0 s", "1.5 minutes", "2.0 hours", "3.0 days"
    )  # fmt: skip
