"""Sweeps built in memory from real scenario runs, read back as ``reports.source.Sweep``.

``sweep_of([(params, result), ...])`` lays out the runs as ``load_sweep`` does (params
under ``params.<group>.<key>``, metrics under their names, tables per run id), so a
section can be tested on real simulator output without an MLflow round trip (the real
round trip is ``test_reports_sweep.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest

from reports.canvas import RENDER_LISTENER
from reports.captions import Recorder
from reports.document import FIGURE_LISTENER
from reports.source import Sweep


def _sweep(entries: list[tuple[dict, object]], experiment: str = "memory") -> Sweep:
    rows, tables, params, metrics = [], {}, set(), set()
    for i, (p, result) in enumerate(entries):
        run_id = f"run{i:03d}"
        row = {
            "run_id": run_id,
            "run_name": f"{result.scenario}-{i}",
            "status": "FINISHED",
            "scenario": result.scenario,
            "start_time": i,
        }
        row |= {f"params.{k}": v for k, v in p.items()}
        row |= result.metrics
        params |= {f"params.{k}" for k in p}
        metrics |= set(result.metrics)
        rows.append(row)
        tables[run_id] = dict(result.tables)
    runs = pd.DataFrame(rows)
    return Sweep(experiment, "parent", "parent", runs, tuple(sorted(params)),
                 tuple(sorted(metrics)), tables)  # fmt: skip


@pytest.fixture(scope="session")
def sweep_of() -> Callable[..., Sweep]:
    return _sweep


@pytest.fixture(scope="session")
def caption_recorder():
    """One ``reports.captions.Recorder`` for the session: every figure rendered and every
    ``Figure`` built in these tests (module fixtures included) is checked."""
    rec = Recorder()
    rendered = RENDER_LISTENER.set(rec.rendered)
    built = FIGURE_LISTENER.set(rec.figure)
    yield rec
    FIGURE_LISTENER.reset(built)
    RENDER_LISTENER.reset(rendered)


@pytest.fixture(autouse=True)
def captions_match_their_figures(caption_recorder):
    """Every figure the reports built during (or for) this test has data, and its caption
    claims only lines, bars and markers it draws (issue 30, item 8)."""
    yield
    new = caption_recorder.found[caption_recorder.reported :]
    caption_recorder.reported = len(caption_recorder.found)
    assert not new, f"captions that do not match their figures: {new}"
