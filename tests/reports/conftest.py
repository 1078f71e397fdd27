"""Sweeps built in memory from real scenario runs, read back as ``reports.source.Sweep``.

``sweep_of([(params, result), ...])`` is ``Sweep.from_results``: the runs laid out as
``load_sweep`` lays them out (params under ``params.<group>.<key>``, metrics under their
names, tables per run id), so a section can be tested on real simulator output without
an MLflow round trip (the real round trip is ``test_reports_sweep.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from reports.canvas import RENDER_LISTENER
from reports.captions import Recorder
from reports.document import FIGURE_LISTENER
from reports.source import Sweep


@pytest.fixture(scope="session")
def sweep_of() -> Callable[..., Sweep]:
    return lambda entries, experiment="memory": Sweep.from_results(entries, experiment)


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
