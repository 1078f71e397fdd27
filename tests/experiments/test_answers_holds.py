"""The sweep's holds-if answers (issue 30): each equals the engine's sensitivity called
directly on the prescription, as plain JSON."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import pandas as pd
import pytest

from experiments.answers import sweep_answers
from experiments.answers.explore import _plan_entry
from experiments.answers.learnings import learnings_answer, world_of
from experiments.answers.rule import holds_if
from procmem_core.ab.planner import Design
from procmem_core.ab.sensitivity import explore_sensitivity
from procmem_core.flat.design import evaluate
from procmem_core.flat.rule import DEFAULT_RULE
from procmem_core.flat.sensitivity import rule_sensitivity
from procmem_core.flat.targets import RuleTargets
from procmem_core.learnings import ReviewPolicy
from procmem_core.learnings.sensitivity import review_sensitivity
from simulators.scenarios.learnings import LearningsScenario


def _text(rows) -> str:
    return json.dumps([r.to_json() for r in rows])


def _runs() -> pd.DataFrame:
    rows = []
    for writers, acc, share, erase in ((6, 0.95, 0.0, 0.1), (6, 0.7, 0.2, 0.1), (3, 0.9, 0.0, 0.0)):
        rows.append({"scenario": "learnings", "status": "FINISHED",
                     "params.scenario.min_writers": writers, "params.scenario.min_users": 0,
                     "params.scenario.reviewer_accuracy": acc,
                     "params.scenario.multi_user_share": share,
                     "params.scenario.erasure_share": erase})  # fmt: skip
    rows.append(rows[0] | {"status": "FAILED", "params.scenario.min_writers": 9})
    return pd.DataFrame(rows)


def test_each_swept_policy_is_evaluated_in_its_worst_exact_world():
    got = learnings_answer(_runs())
    assert [e["targets"] for e in got["entries"]] == [
        {"policy": "supporter_writers >= 6", "target_precision": 0.9},
        {"policy": "supporter_writers >= 3", "target_precision": 0.9},
    ]  # the failed run's policy is not asked
    six = got["entries"][0]
    world = world_of(pd.Series({"params.scenario.reviewer_accuracy": 0.7}))  # the lower one
    assert six["world"] == json.loads(json.dumps(world.__dict__))
    want = review_sensitivity(ReviewPolicy(6, 0), world, 0.9,
                              (("erasure_share", 0.1), ("multi_user_share", 0.2)))  # fmt: skip
    assert json.dumps(six["sensitivity"]) == _text(want)
    three = got["entries"][1]["sensitivity"]
    assert not [r for r in three if r["holds"] is None]  # it ran without either
    assert world_of(_runs().iloc[2]) == world_of(
        pd.Series({"params.scenario.reviewer_accuracy": 0.9})
    )
    assert world_of(pd.Series(dtype=object)).users == LearningsScenario().users  # its default
    assert "learnings" in sweep_answers(_runs())
    assert learnings_answer(_runs().assign(scenario="gate")) is None


def test_the_rule_and_explore_answers_carry_their_picks_rows():
    t = RuleTargets(keep=0.2, exclude=0.5, within=20)
    design = SimpleNamespace(pick=evaluate(DEFAULT_RULE, 0.55, t), targets=t)
    want = rule_sensitivity(DEFAULT_RULE, 0.55, t)
    assert json.dumps(holds_if(design)) == _text(want)
    entry = _plan_entry(0.2, 0.5, 0.05, 0.8, (0.1, 0.3, 0.5), 400)
    pick = entry["plan"]["pick"]
    assert pick is not None
    rows = explore_sensitivity(Design(0.2, 0.5, 0.8, 0.05), 400, pick["explore_rate"])
    assert json.dumps(entry["holds_if"]) == _text(rows)
    assert _plan_entry(0.2, 0.5, 0.05, 0.8, (0.01,), 20)["holds_if"] == []  # no pick


@pytest.mark.parametrize("bad", [{"reviewer_accuracy": 1.5}, {"users": 0}])
def test_a_bad_world_names_its_field(bad):
    from procmem_core.errors import ParameterError

    with pytest.raises(ParameterError, match=next(iter(bad))):
        dataclasses.replace(world_of(pd.Series(dtype=object)), **bad)
