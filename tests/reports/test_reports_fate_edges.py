"""The fate section on sweeps the quickstart does not run: several horizons, and a success
rate of 1 (issue 30: every sentence as strong as its numbers, no stronger)."""

from __future__ import annotations

import re

import pytest

from experiments.answers import sweep_answers
from procmem_core import flat_fate
from reports.sections import fate
from reports.source import Sweep
from simulators.scenarios.fate import ProcedureFateScenario


def _sweep(cases: list[tuple[float, int]]) -> Sweep:
    results = [
        ({"scenario.p": p, "scenario.sessions": n},
         ProcedureFateScenario(p=p, sessions=n, replications=200).run(seed=n))
        for p, n in cases
    ]  # fmt: skip
    sweep = Sweep.from_results(results)
    sweep.answers = sweep_answers(sweep.runs)
    return sweep


def test_several_horizons_each_get_their_own_exact_curve_and_the_headline_names_one(monkeypatch):
    drawn, draw = {}, fate.fate_figure

    def spy(points, exact, colours, sessions):
        drawn["points"], drawn["exact"] = points, exact
        return draw(points, exact, colours, sessions)

    monkeypatch.setattr(fate, "fate_figure", spy)
    section = fate.fate_section(_sweep([(0.7, 20), (0.7, 5)]))
    # was: "excluded within 5/20 sessions with probability 0.77" (the 20-session figure)
    found = re.search(r"excluded within (\d+) sessions with probability ([\d.]+) \(([\d.]+) exact",
                      section.answer)  # fmt: skip
    assert found, section.answer
    horizon = int(found.group(1))
    assert float(found.group(3)) == pytest.approx(flat_fate(0.7, horizon).p_excluded, abs=5e-4)
    # every simulated point sits on a curve of its own horizon (was: one 20-session curve)
    exact, points = drawn["exact"], drawn["points"]
    assert points["config"].nunique() == 2
    for _, point in points.iterrows():
        n = int(point["params.scenario.sessions"])
        curve = exact[(exact["config"] == point["config"]) & ((exact["p"] - 0.7).abs() < 1e-9)]
        assert float(curve["p_excluded"].iloc[0]) == pytest.approx(
            flat_fate(0.7, n).p_excluded, abs=1e-9
        )


def test_a_procedure_that_never_fails_is_not_explained_by_a_failure():
    answer = fate.fate_section(_sweep([(1.0, 5)])).answer
    # was: "..., although 1 is above the break-even rate: one failure in the first session
    # (probability 0.00) takes 0.60 to 0.45"
    assert "although" not in answer and "probability 0.00)" not in answer
    assert "never fails" in answer


def test_a_small_exclusion_probability_never_prints_as_zero():
    # p 0.97 over 5 sessions: excluded with probability 0.03 (one failure first); 0.99 over
    # 2 sessions: 0.01; 0.998: 0.002, which read "probability 0.00" and "(probability 0.00)"
    answer = fate.fate_section(_sweep([(0.998, 2)])).answer
    assert "0.00 " not in answer and "0.00)" not in answer, answer
    assert "probability 0.002" in answer
