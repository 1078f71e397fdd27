"""Sweeps built in memory from real scenario runs, read back as ``reports.source.Sweep``.

``sweep_of([(params, result), ...])`` is ``Sweep.from_results``: the runs laid out as
``load_sweep`` lays them out (params under ``params.<group>.<key>``, metrics under their
names, tables per run id), so a section can be tested on real simulator output without
an MLflow round trip (the real round trip is ``test_reports_sweep.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from reports.source import Sweep


@pytest.fixture(scope="session")
def sweep_of() -> Callable[..., Sweep]:
    return lambda entries, experiment="memory": Sweep.from_results(entries, experiment)
