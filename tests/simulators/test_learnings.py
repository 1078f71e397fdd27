"""The learnings scenario: simulation against the exact support arithmetic (within 4 SE),
its bookkeeping against the queue's own state, the reviewer's extremes, the multi-user
writer's inflation, determinism and bad parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.learnings import first_reach
from procmem_core.memory import Principal
from simulators import SCENARIOS
from simulators.scenarios.learnings import LearningsScenario


def within_4_se(metrics: dict, name: str) -> None:
    sim, se, exact = metrics[name], metrics[f"{name}_se"], metrics[f"{name}_exact"]
    assert se > 0, name
    assert abs(sim - exact) <= 4 * se, f"{name}: {sim} vs exact {exact} (se {se})"


@pytest.fixture(scope="module")
def writers_run():
    sc = LearningsScenario(
        replications=150,
        min_writers=4,
        min_users=8,
        combine="or",
        multi_user_share=0.2,
        erasure_share=0.2,
    )
    return sc, sc.run(7)


def test_reach_agrees_with_the_exact_chain_within_4_se(writers_run):
    sc, result = writers_run
    exact = [m for m in result.metrics if m.startswith("reach_") and m.endswith("_exact")]
    assert len(exact) >= 3  # the kinds whose share is not within noise of 0 or 1
    for name in exact:
        within_4_se(result.metrics, name.removesuffix("_exact"))
    reach = result.tables["reach"]
    assert set(reach["count"]) == {"writers", "users"}
    for _, row in reach.iterrows():  # the exact column is the chain at the honest rate
        rate = (
            {"helpful": sc.helpful_rate, "neutral": sc.neutral_rate, "harmful": sc.harmful_rate}[
                row["kind"]
            ]
            * (1 - 0.2)
            / sc.agents
        )
        want = first_reach(rate, int(row["threshold"]), sc.sessions, sc.users).sum()
        assert row["exact"] == pytest.approx(want, rel=1e-12)


def test_one_writer_inflates_the_count_not_the_writers(writers_run):
    sc, result = writers_run
    m = result.metrics
    within_4_se(m, "fabricated_ids_per_writer")
    q = 0.2 * sc.push_rate / sc.multi_user_writers  # reference: occupancy, by hand
    assert m["fabricated_ids_per_writer_exact"] == pytest.approx(
        sc.fabricated_ids * (1 - (1 - q / sc.fabricated_ids) ** sc.sessions)
    )
    assert m["pushed_count_per_writer"] - 4 * m["pushed_count_per_writer_se"] > 2.0
    rules = result.tables["rules"]
    pushed = rules[rules["pushed"]]
    extra = (pushed["supporter_count"] - pushed["supporter_writers"]).mean()
    assert extra > 10  # tens of ids, one writer


def test_the_logs_agree_with_the_queue_and_promoted_rules_are_served_per_agent():
    sc = LearningsScenario(replications=3, reviewer_accuracy=1.0, sessions=120)
    worlds = sc.simulate(5)
    reviewer = Principal("audit", "viewer")
    served = 0
    for w in worlds:
        for r in w.rules:
            if r.promoted_at is None:
                continue
            got = w.queue.get(r.candidate_id, principal=reviewer)
            assert got.status == "promoted" and got.agent == f"agent-{r.agent}"
            own = w.queue.memory.search(r.text, agent=f"agent-{r.agent}", top_k=1)
            assert own and own[0].record.text == r.text
            other = f"agent-{1 - r.agent}"
            assert all(h.record.text != r.text for h in w.queue.memory.search(r.text, agent=other))
            served += 1
        promoted = [r for r in w.rules if r.promoted_at is not None]
        assert len(w.queue.list(principal=reviewer, status="promoted")) == len(promoted)
        assert len(w.session_agent) == sc.sessions
    assert served > 0


def test_a_perfect_reviewer_promotes_only_helpful_rules_and_a_wrong_one_none():
    perfect = LearningsScenario(replications=20, reviewer_accuracy=1.0).run(1).metrics
    assert perfect["precision"] == 1.0 and perfect["harmful_served"] == 0.0
    assert perfect["recall"] > 0.8
    wrong = LearningsScenario(replications=20, reviewer_accuracy=0.0).run(1).metrics
    assert wrong["recall"] == 0.0 and wrong["precision"] == 0.0
    assert wrong["harmful_served_sessions"] > 0


def test_sessions_to_promotion_follow_the_chain_for_a_perfect_reviewer_without_noise():
    """No erasure, no multi-user writer, accuracy 1, k = 3: a helpful rule is promoted at
    the session its 3rd distinct supporter arrives plus the delay (if within T), so the
    mean over promoted helpful rules follows from the exact first-passage law."""
    sc = LearningsScenario(
        replications=200, reviewer_accuracy=1.0, erasure_share=0.0, review_delay=5, min_writers=3
    )
    m = sc.run(11).metrics
    f = first_reach(sc.helpful_rate / sc.agents, 3, sc.sessions, sc.users)
    t = np.arange(1, sc.sessions + 1)
    ok = t + sc.review_delay <= sc.sessions  # reviewed before the horizon
    exact_mean = float((f[ok] * (t[ok] + sc.review_delay)).sum() / f[ok].sum())
    assert abs(m["sessions_to_promotion"] - exact_mean) <= 4 * m["sessions_to_promotion_se"]
    assert abs(m["recall"] - f[ok].sum()) <= 4 * max(m["recall_se"], 1e-3)


def test_same_seed_same_numbers_and_registration():
    assert SCENARIOS["learnings"] is LearningsScenario
    a = LearningsScenario(replications=5).run(3).metrics
    b = LearningsScenario(replications=5).run(3).metrics
    assert a.keys() == b.keys()
    assert all(a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k])) for k in a)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_writers": 0, "min_users": 0}, "min_writers=0"),
        ({"combine": "xor"}, "combine='xor'"),
        ({"helpful_share": 0.8, "harmful_share": 0.3}, "harmful_share=0.3"),
        ({"reviewer_accuracy": 1.2}, "reviewer_accuracy=1.2"),
        ({"multi_user_share": -0.1}, "multi_user_share=-0.1"),
        ({"users": 0}, "users=0"),
        ({"review_delay": -1}, "review_delay=-1"),
        ({"replications": 1}, "replications=1"),
        ({"agents": 0}, "agents=0"),
    ],
)
def test_bad_parameters_are_refused(kwargs, message):
    with pytest.raises(ParameterError, match=message):
        LearningsScenario(**kwargs)
