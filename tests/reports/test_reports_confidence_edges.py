"""The confidence section on a sweep the presets do not run: one world, two rules at two
limits, 300 replications (issue 30: singular where there is one, and no ordering the
noise does not support)."""

from __future__ import annotations

import pytest

from experiments.answers import sweep_answers
from procmem_core import ConfidenceRule
from reports.build import build_report
from reports.document import render_markdown
from reports.source import Sweep
from simulators.scenarios.confidence import ConfidenceScenario


@pytest.fixture(scope="module")
def said() -> str:
    results = [
        ({"scenario.limit": limit, "rule.penalty": penalty},
         ConfidenceScenario(rule=ConfidenceRule(penalty=penalty), limit=limit, sessions=30,
                            replications=300).run(seed=4))
        for limit in (1, 6) for penalty in (0.15, 0.05)
    ]  # fmt: skip
    sweep = Sweep.from_results(results)
    sweep.answers = sweep_answers(sweep.runs)
    return render_markdown(build_report(sweep)).split("## Confidence rule")[1].split("\n## ")[0]


def test_one_world_is_said_as_one(said):
    assert "in all 1 worlds" not in said  # was: "No rule run in all 1 worlds excludes ..."
    assert (
        "No rule in the one world run excludes at least 0.9 of harmful procedures; the nearest"
    ) in said


def test_the_best_rule_at_the_widest_limit_is_not_ordered_above_the_seeds_within_noise(said):
    # +0.08/-0.05 at limit 6: 0.787 ± 0.011; the seed's rule there 0.778 ± 0.011 (the
    # difference 0.009, 2 SE of it 0.031): it read "the best rule reaches 0.787 ± 0.011
    # and the seed's rule 0.778 ± 0.011", an ordering
    assert (
        "at limit 6 the best rule reaches 0.787 ± 0.011 and the seed's rule 0.778 ± 0.011 "
        "(within 2 SE of the difference: the noise cannot order them)"
    ) in said
