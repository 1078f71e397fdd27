"""Captions against what their figures draw (reports.captions): the claims read from a
caption, the counts read from a figure, and the check every figure of tests/reports goes
through (the autouse fixture in conftest.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reports.canvas import new_figure, png_bytes, simulated_points
from reports.captions import Drawn, Recorder, claims, drawn, problems
from reports.document import FIGURE_LISTENER, Figure


def test_claims_are_read_and_a_negation_is_not_a_claim():
    assert claims("Rates (bars: 95 % Monte Carlo intervals); lines: the exact curves") == {
        "bars",
        "lines",
    }
    assert claims("Categories such as 'p0 known' are not joined by lines.") == set()
    assert claims("The worst case of each curve is marked by a triangle") == {
        "lines",
        "markers",
    }


def test_what_an_errorbar_figure_draws():
    fig, (ax,) = new_figure()
    x, y = pd.Series([1.0, 2.0, 3.0]), pd.Series([0.1, 0.2, 0.3])
    simulated_points(ax, x, y, pd.Series([0.01, 0.02, np.nan]), "k", "a", joined=True)
    ax.axhline(0.25)  # a reference line: a line, but no data point
    got = drawn(fig)
    assert got == Drawn(points=3, lines=2, markers=1, bars=2)  # no bar where the SE is NaN
    fig, (ax,) = new_figure()
    simulated_points(ax, x, y * np.nan, pd.Series([0.01] * 3), "k", "a")
    assert drawn(fig) == Drawn()  # all-NaN rates: nothing at all


def test_an_empty_figure_and_a_claim_without_its_marks_are_problems():
    assert problems("bars: 95 % intervals", Drawn()) == [
        "no data point is drawn",
        "the caption describes bars but none are drawn",
    ]
    assert problems("bars: 95 % intervals", Drawn(points=3, markers=1, bars=3)) == []
    rec = Recorder()
    fig, (ax,) = new_figure()
    simulated_points(ax, pd.Series([1.0]), pd.Series([np.nan]), pd.Series([0.1]), "k", "a")
    png = png_bytes(fig)
    rec.rendered(fig, png)
    mine = FIGURE_LISTENER.set(rec.figure)  # this one, not the suite's recorder
    try:
        Figure("empty", png, "Rates (bars: 95 % Monte Carlo intervals).")
    finally:
        FIGURE_LISTENER.reset(mine)
    assert rec.checked == 1 and [p for _, p in rec.found] == [
        "no data point is drawn",
        "the caption describes bars but none are drawn",
    ]


def test_a_factor_varies_at_the_reference_of_float_conditions():
    """The gate_design preset's factor figures were empty: ``at_reference`` compared
    ``repr(np.float64(0.25))`` (from an ``iloc`` row) with the column's ``'0.25'``."""
    from reports.configs import Labelled, at_reference

    rows = pd.DataFrame(
        {
            "config": ["SPRT"] * 4,
            "share": [0.25, 0.25, 0.5, 0.5],
            "ledger": [20.0, 50.0, 20.0, 50.0],
            "condition": ["a", "b", "c", "d"],
        }
    )
    lab = Labelled(rows, ["gate"], ["share", "ledger"], "a")
    assert at_reference(lab, keep="ledger")["ledger"].tolist() == [20.0, 50.0]
    assert at_reference(lab, keep="share")["share"].tolist() == [0.25, 0.5]
