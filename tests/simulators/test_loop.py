"""LoopScenario: bookkeeping against the store, known truth, reproducibility."""

from __future__ import annotations

import pytest

from procmem_core.errors import ParameterError
from procmem_core.gates import DECISION_COLUMNS, MarginGate
from simulators.feedback import Feedback
from simulators.scenarios.gate import GateScenario
from simulators.scenarios.loop import LoopScenario, gate_table

SMALL = {"tasks": 2, "sessions": 240, "revise_every": 20, "replications": 2}


@pytest.fixture(scope="module")
def worlds():
    return LoopScenario(**SMALL, feedback=Feedback.of(missing=0.2)).simulate(5)


def test_every_simulated_run_is_in_the_ledger(worlds):
    for w in worlds:
        ledger = [
            (f"{r.namespace}/{r.key}", tuple(r.path), r.ok)
            for key in w.task_of
            for r in w.store.runs(key)
        ]
        assert sorted(ledger) == sorted(w.runs)
        assert sum(s.recorded for s in w.sessions) == len(w.runs)
        assert sum(s.followed for s in w.sessions) > len(w.runs)  # 20 % of signals missing


def test_the_gate_decisions_table_has_the_one_schema(worlds):
    """The store's records as ``GateRecord.row()`` (``DECISION_COLUMNS``, the gate
    scenario's schema too), then the truth the world knows."""
    table = gate_table(worlds)
    assert list(table.columns[: len(DECISION_COLUMNS)]) == list(DECISION_COLUMNS)
    gate_table_cols = GateScenario(replications=10, table_rows=5).run(0).tables["gate_decisions"]
    assert list(gate_table_cols.columns[: len(DECISION_COLUMNS)]) == list(DECISION_COLUMNS)
    records = [d.row() for w in worlds for d in w.store.gate_decisions()]
    assert len(records) == len(table) > 0
    got = table[list(DECISION_COLUMNS)].to_dict("records")
    for row, want in zip(got, records, strict=True):
        assert {k: v for k, v in row.items() if v == v} == {k: v for k, v in want.items() if v == v}


def test_every_gate_decision_in_the_table_is_one_the_store_made(worlds):
    table = gate_table(worlds)
    made = [
        (i, d.key, d.revision, d.gate, d.verdict, d.runs_used)
        for i, w in enumerate(worlds)
        for d in w.store.gate_decisions()
    ]
    rows = list(
        zip(table.replication, table.key, table.revision, table.gate, table.verdict,
            table.runs_used, strict=True)
    )  # fmt: skip
    assert rows == made
    assert (table.verdict != "continue").any()


def test_revision_truth_follows_the_store(worlds):
    for w in worlds:
        assert w.revisions
        for r in w.revisions:
            history = {h.revision: h.outcome for h in w.store.revisions(r.key)}
            expected = {"accepted": "accepted", "reverted": "reverted"}.get(r.outcome, "pending")
            assert history[r.revision] == expected
            if r.kind == "harmful":
                assert r.p_new == pytest.approx(max(r.p_prior - 0.25, 0.0))
            if r.kind == "neutral":
                assert r.p_new == pytest.approx(r.p_prior)


def test_paths_walk_the_graph_and_stop_at_the_failing_step(worlds):
    w = worlds[0]
    for _key, path, ok in w.runs:
        order = [n.split("r")[0] for n in path]
        assert order == [f"s{i}" for i in range(1, len(path) + 1)]
        if ok and not w.scenario.feedback.relabels:
            assert len(path) == w.scenario.steps


def test_metrics_and_tables():
    res = LoopScenario(**SMALL).run(3)
    m = res.metrics
    assert 0 <= m["success_rate"] <= 1
    assert m["oracle_success_rate"] >= m["success_rate"] - 4 * m["success_rate_se"]
    assert m["regret"] >= 0
    assert m["revisions_proposed"] >= m["revisions_decided"]
    for name in ("gate_decisions", "ab_arms", "trajectory"):
        assert not res.tables[name].empty
    arms = res.tables["ab_arms"]
    assert set(arms.arm) == {"shown", "withheld"}
    assert arms.sessions.sum() <= 2 * 240
    traj = res.tables["trajectory"]
    assert traj.sessions.sum() == 2 * 240


def test_same_seed_same_metrics_other_seed_differs():
    sc = LoopScenario(tasks=2, sessions=120, replications=1)
    a, b = sc.run(1).metrics, sc.run(1).metrics
    assert a.keys() == b.keys()
    assert all(a[k] == b[k] or (a[k] != a[k] and b[k] != b[k]) for k in a)
    assert sc.simulate(1)[0].runs != sc.simulate(2)[0].runs


def test_margin_gate_runs_in_the_loop():
    res = LoopScenario(**SMALL, gate=MarginGate()).run(0)
    assert set(res.tables["gate_decisions"].gate) <= {"margin", "cost"}


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"tasks": 0}, "tasks"),
        ({"tasks": 99}, "tasks"),
        ({"steps": 1}, "steps"),
        ({"p_low": 0.9, "p_high": 0.5}, "p_low"),
        ({"explore_rate": 1.5}, "explore_rate"),
        ({"revision_mix": (0.5, 0.5)}, "revision_mix"),
        ({"revision_mix": (0.5, 0.5, 0.5)}, "revision_mix"),
        ({"gate": "sprt"}, "gate"),
        ({"cost_gate": None}, "cost_gate"),
        ({"feedback": "perfect"}, "feedback"),
        ({"evolve_every": 0}, "evolve_every"),
        ({"replications": 0}, "replications"),
    ],
)
def test_invalid_parameters(kwargs, fragment):
    with pytest.raises(ParameterError, match=fragment):
        LoopScenario(**kwargs)


def test_sequence_parameters_accept_lists_as_configs_pass_them():
    sc = LoopScenario(revision_mix=[0.5, 0.25, 0.25], tasks=1, sessions=8)
    assert sc.revision_mix == (0.5, 0.25, 0.25)


def test_pending_truth_matches_the_store_and_stranded_ones_are_quarantined(worlds):
    for w in worlds:
        pending = {r.key: r.revision for r in w.revisions if r.outcome == "pending"}
        for key in w.task_of:
            snap = w.store.get(key)
            if key in pending:
                assert snap.pending_revision is not None and snap.revision == pending[key]
            else:
                assert snap.pending_revision is None
    m = LoopScenario(**SMALL).run(5).metrics
    stranded = sum(
        r.outcome == "pending" and w.store.get(r.key).status == "quarantined"
        for w in LoopScenario(**SMALL).simulate(5)
        for r in w.revisions
    )
    proposed = m["revisions_proposed"] * SMALL["replications"]
    assert m["stranded_revision_rate"] == pytest.approx(stranded / proposed)


def test_regret_sources_add_up_to_the_regret_and_every_session_has_one():
    res = LoopScenario(**SMALL, strike_limit=2).run(4)
    src = res.tables["regret_sources"]
    every = src[src.period == "all"]
    assert every.groupby("replication").sessions.sum().tolist() == [240, 240]
    m = res.metrics
    assert every.regret.sum() / (2 * 240) == pytest.approx(m["regret"])
    late = src[src.period == "late"]
    assert late.regret.sum() / (2 * 60) == pytest.approx(m["regret_late"])
    assert m["success_change"] == pytest.approx(m["success_rate_late"] - m["success_rate_early"])
    assert m["regret_change"] == pytest.approx(m["regret_late"] - m["regret_early"])
    traj = res.tables["trajectory"]
    assert (traj.off_task_rate >= 0).all() and (traj.off_task_rate <= 1).all()


def test_concurrent_control_serves_priors_and_records_their_runs():
    sc = LoopScenario(**SMALL, concurrent_share=0.5)
    worlds = sc.simulate(2)
    res = sc.run(2)
    assert 0 < res.metrics["prior_served_rate"] < 0.5
    for w in worlds:
        served = [x for x in w.sessions if x.prior_served]
        assert served and all(x.followed for x in served)
        by_revision = {r.revision for key in w.task_of for r in w.store.runs(key)}
        assert len(by_revision) > 1
        truth = {(r.key, r.prior_revision) for r in w.revisions}
        prior_runs = [
            r
            for key in w.task_of
            for r in w.store.runs(key)
            if (key, r.revision) in truth and r.revision != w.store.get(key).revision
        ]
        assert prior_runs  # runs recorded against a pending revision's prior
    decisions = res.tables["gate_decisions"]
    assert (decisions.verdict != "continue").any()


def test_quarantine_off_and_the_utility_term_are_settings():
    off = LoopScenario(**SMALL, strike_limit=0).run(1)
    assert off.metrics["quarantines"] == 0 and off.metrics["stranded_revision_rate"] == 0
    LoopScenario(**SMALL, utility_weight=1.0).run(1)
    with pytest.raises(ParameterError, match="utility_weight"):
        LoopScenario(utility_weight=-1.0)
    with pytest.raises(ParameterError, match="concurrent_share"):
        LoopScenario(concurrent_share=1.0)
    with pytest.raises(ParameterError, match="streak_scope"):
        LoopScenario(streak_scope="forever")


def test_the_fixed_oracle_is_the_start_and_its_regret_adds_the_oracles_drift():
    """``regret_fixed`` is against the best each task offered at the start; the regret
    against the moving oracle exceeds it by the oracle's drift, session by session."""
    import numpy as np

    sc = LoopScenario(**SMALL)
    worlds, m = sc.simulate(6), sc.run(6).metrics
    fixed = [np.mean([w.start_oracle[s.task] - s.p_true for s in w.sessions]) for w in worlds]
    drift = [np.mean([s.p_oracle - w.start_oracle[s.task] for s in w.sessions]) for w in worlds]
    assert m["regret_fixed"] == pytest.approx(np.mean(fixed))
    assert m["regret"] - m["regret_fixed"] == pytest.approx(np.mean(drift))
    assert any(d != 0 for d in drift)  # revisions moved the oracle in this world
    change = m["regret_fixed_late"] - m["regret_fixed_early"]
    assert m["regret_fixed_change"] == pytest.approx(change)
    quiet = LoopScenario(**SMALL | {"revise_every": 10_000}).run(6).metrics
    assert quiet["revisions_proposed"] == 0
    assert quiet["regret_fixed"] == pytest.approx(quiet["regret"])  # no revision: one oracle
