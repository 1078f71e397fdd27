"""evolve: proven path, dead ends, fail-prone steps (a real test on planted data), trust
statuses, quarantine, revisions and their gates. Both stores (the ``store`` fixture)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from procmem_core.errors import ParameterError
from procmem_core.gates import CostGate, MarginGate, RevisionStats, SPRTGate, combine_gate_verdicts
from procmem_core.graph import SEED_EXAMPLE_GRAPH, GraphError, ProcedureGraph
from procmem_core.graph import findings as fd
from procmem_core.graph import status as st
from procmem_core.graph.ledger import Tally
from procmem_core.graph.revision import RevisionError

STEPS = ["look up the invoice", "check the refund policy window", "issue or decline"]
BRANCHY = {
    "nodes": [{"id": "start"}, {"id": "good"}, {"id": "bad"}, {"id": "end"}, {"id": "spare"}],
    "edges": [
        {"src": "start", "dst": "good", "kind": "branch"},
        {"src": "start", "dst": "bad", "kind": "branch"},
        {"src": "good", "dst": "end"},
        {"src": "bad", "dst": "end"},
        {"src": "start", "dst": "spare"},
        {"src": "spare", "dst": "end"},
    ],
}


def _runs(store, key, path, outcomes, **kw):
    for ok in outcomes:
        store.record_run(key, path, ok=bool(ok), **kw)


# -- fail-prone: the statistical test --------------------------------------------------


@pytest.mark.parametrize(
    ("n", "f", "total", "total_f"), [(10, 7, 40, 12), (5, 5, 30, 8), (20, 3, 50, 20)]
)
def test_fail_prone_pvalue_is_fishers_one_sided_exact_test(n, f, total, total_f):
    table = [[f, n - f], [total_f - f, total - n - (total_f - f)]]
    expected = stats.fisher_exact(table, alternative="greater").pvalue
    assert fd.fail_prone_pvalues(n, f, total, total_f) == pytest.approx(expected, rel=1e-9)


def test_fail_prone_flag_rate_under_the_null_is_at_most_the_level():
    rng = np.random.default_rng(np.random.SeedSequence(11))
    reps, total = 4000, 60
    n = rng.binomial(total, 0.5, reps)  # runs through the node
    fails_in = rng.binomial(n, 0.3)
    fails_out = rng.binomial(total - n, 0.3)
    p = fd.fail_prone_pvalues(n, fails_in, total, fails_in + fails_out)
    rate = np.mean(p <= fd.FAIL_PRONE_LEVEL)
    se = np.sqrt(fd.FAIL_PRONE_LEVEL * (1 - fd.FAIL_PRONE_LEVEL) / reps)
    assert rate <= fd.FAIL_PRONE_LEVEL + 4 * se  # exact conditional test: conservative


def test_planted_fail_prone_node_and_transitions_are_found(store):
    key = store.add("branchy", "s", graph=BRANCHY).key
    rng = np.random.default_rng(np.random.SeedSequence(7))
    for _ in range(120):
        bad = rng.random() < 0.5
        ok = rng.random() > (0.6 if bad else 0.1)
        store.record_run(key, ["start", "bad" if bad else "good", "end"], ok=bool(ok))
    report = store.evolve(key)
    assert [x.src for x in report.fail_prone_steps] == ["bad"]
    flagged = {(x.src, x.dst) for x in report.fail_prone_transitions}
    assert flagged == {("start", "bad"), ("bad", "end")}
    bad = report.fail_prone_steps[0]
    assert bad.failure_rate > bad.base_failure_rate and bad.p_value < fd.FAIL_PRONE_LEVEL / 5
    assert report.dead_ends == ("spare",)


def test_no_fail_prone_flags_without_a_difference(store):
    key = store.add("branchy", "s", graph=BRANCHY).key
    rng = np.random.default_rng(np.random.SeedSequence(8))
    for _ in range(120):
        branch = "bad" if rng.random() < 0.5 else "good"
        store.record_run(key, ["start", branch, "end"], ok=bool(rng.random() > 0.3))
    report = store.evolve(key)
    assert report.fail_prone_steps == () and report.fail_prone_transitions == ()


def test_min_count_keeps_thin_evidence_unflagged():
    counts = {"a": Tally(4, 0), "b": Tally(30, 27)}  # "a" failed 4 of 4 but has < 5 runs
    assert fd.fail_prone(counts, total_runs=34, total_successes=27) == ()


# -- proven path, dead ends, template, quarantine ----------------------------------------


def test_proven_path_and_reversible_dead_ends_on_the_seed_graph(store):
    key = store.add("month end", "close the month", graph=SEED_EXAMPLE_GRAPH).key
    _runs(store, key, ["cash", "forecast", "close"], [1, 1, 1, 0])
    _runs(store, key, ["cash", "forecast", "raise", "close"], [0])
    r = store.evolve(key)
    assert r.proven_path == ("cash", "forecast", "close")
    assert r.dead_ends == ()
    key2 = store.add("month end two", "close the month", graph=SEED_EXAMPLE_GRAPH).key
    _runs(store, key2, ["cash", "forecast", "close"], [1, 1, 1])
    assert store.evolve(key2).dead_ends == ("raise",)
    _runs(store, key2, ["cash", "forecast", "raise", "close"], [1, 1, 1, 1])
    r2 = store.evolve(key2)
    assert r2.dead_ends == () and r2.proven_path == ("cash", "forecast", "raise", "close")


def test_nothing_is_evolved_before_min_runs(store):
    key = store.add("refund", "s", STEPS).key
    _runs(store, key, ["n1", "n2", "n3"], [1, 1])
    r = store.evolve(key)
    assert (r.evolved, r.proven_path, r.runs_folded, r.status) == (False, (), 2, "exercised")
    _runs(store, key, ["n1", "n2", "n3"], [1])
    r = store.evolve(key)
    assert (r.evolved, r.proven_path, r.runs_folded) == (True, ("n1", "n2", "n3"), 1)
    assert store.get(key).ledger_folded_through == 3


def test_template_needs_five_successes_rate_and_a_stable_topology(store):
    key = store.add("refund", "s", STEPS).key
    _runs(store, key, ["n1", "n2", "n3"], [1, 1, 1, 1, 0])
    assert store.evolve(key).status == "exercised"  # 4 successes
    _runs(store, key, ["n1", "n2", "n3"], [1])
    first = store.evolve(key)  # 5/6, and the topology is the one the last evolve found
    assert first.topology_changed is False and first.status == "template"
    _runs(store, key, ["n1", "n2", "n3"], [0, 0])  # 5/8 < 0.8
    assert store.evolve(key).status == "exercised"


def test_template_needs_the_topology_unchanged_over_the_last_min_runs_runs(store):
    key = store.add("refund", "s", STEPS).key
    _runs(store, key, ["n1", "n2"], [1] * 5)  # proven path n1 -> n2, n3 a dead end
    _runs(store, key, ["n1", "n2", "n3"], [1])  # this run changes both
    r1 = store.evolve(key)
    assert r1.topology_changed and r1.status == "exercised"
    _runs(store, key, ["n1", "n2", "n3"], [1, 1])  # 2 runs without a change, min_runs 3
    assert store.evolve(key).status == "exercised"
    _runs(store, key, ["n1", "n2", "n3"], [1])
    r3 = store.evolve(key)
    assert not r3.topology_changed and (r3.previous_status, r3.status) == ("exercised", "template")
    assert [m.key for m in store.match("s", templates_only=True)] == [key]


@pytest.mark.parametrize(
    ("successes", "runs", "stable", "expected"),
    [
        (5, 6, True, True),
        (4, 5, True, False),
        (8, 10, True, True),
        (7, 9, True, False),
        (9, 9, False, False),
    ],
)
def test_template_bar_scalar_and_vectorized(successes, runs, stable, expected):
    assert st.meets_template_bar(successes, runs, stable) is expected
    vec = st.meets_template_bar(
        np.array([successes] * 2), np.array([runs] * 2), np.array([stable] * 2)
    )
    assert vec.tolist() == [expected] * 2


def test_statuses_and_their_precedence_vectorized():
    runs = np.array([0, 0, 3, 3, 3, 0])
    cand = np.array([0, 1, 1, 0, 0, 0], bool)
    tmpl = np.array([0, 0, 0, 1, 1, 0], bool)
    quar = np.array([0, 0, 0, 0, 1, 1], bool)
    codes = st.trust_status(runs, cand, tmpl, quar)
    assert [st.STATUSES[c] for c in codes] == [
        "authored", "candidate", "exercised", "template", "quarantined", "quarantined",
    ]  # fmt: skip
    assert [
        st.trust_status(*args) for args in zip(runs, cand, tmpl, quar, strict=True)
    ] == codes.tolist()


def test_quarantine_after_strike_limit_failures_lifted_by_a_success(store):
    key = store.add("refund", "a refund request", STEPS).key
    _runs(store, key, ["n1"], [1, 0, 0])
    assert store.evolve(key).status == "exercised"
    _runs(store, key, ["n1"], [0])
    assert store.evolve(key).status == "quarantined"
    assert store.match("a refund request") == []
    assert [m.status for m in store.match("a refund request", include_quarantined=True)] == [
        "quarantined"
    ]
    store.record_run(key, ["n1"], ok=True)
    assert store.get(key).status == "exercised"  # lifted at once
    assert store.match("a refund request")[0].key == key


def test_strike_limit_zero_turns_quarantine_off(store):
    key = store.add("refund", "s", STEPS).key
    _runs(store, key, ["n1"], [0] * 6)
    assert store.evolve(key, strike_limit=0).status == "exercised"
    assert store.evolve(key, strike_limit=6).status == "quarantined"
    assert store.evolve(key, strike_limit=7).status == "exercised"
    assert st.should_quarantine(np.array([0, 2, 3, 9]), 3).tolist() == [False, False, True, True]


def test_candidate_becomes_exercised_on_its_first_run(store):
    key = store.add("mined", "s", STEPS, candidate=True).key
    assert store.get(key).status == "candidate"
    store.record_run(key, ["n1"], ok=False)
    assert store.get(key).status == "exercised"


EVOLVE_ERRORS = [
    ({"min_runs": 0}, "min_runs=0"),
    ({"strike_limit": -1}, "strike_limit=-1"),
    ({"min_runs": 2.5}, "min_runs=2.5"),
    ({"gate": object()}, "gate="),
    ({"cost_gate": "cheap"}, "cost_gate='cheap'"),
]


@pytest.mark.parametrize(("kwargs", "fragment"), EVOLVE_ERRORS)
def test_evolve_rejects_bad_parameters(store, kwargs, fragment):
    key = store.add("refund", "s", STEPS).key
    with pytest.raises(ParameterError) as err:
        store.evolve(key, **kwargs)
    assert fragment in str(err.value)


# -- revisions and gates ---------------------------------------------------------------

REVISED = ProcedureGraph.from_steps([*STEPS[:2], "escalate to a human"])


def test_revise_keeps_surviving_evidence_and_holds_the_prior(store):
    key = store.add("refund", "s", STEPS).key
    _runs(store, key, ["n1", "n2", "n3"], [1, 1, 0])
    bigger = ProcedureGraph.from_dict(
        {
            "nodes": [{"id": "n1"}, {"id": "n2"}, {"id": "x"}],
            "edges": [{"src": "n1", "dst": "n2"}, {"src": "n2", "dst": "x"}],
        }
    )
    p = store.revise(key, bigger, "replace the last step")
    assert p.revision == 2 and p.pending_revision.prior_revision == 1
    assert p.pending_revision.prior_graph == ProcedureGraph.from_steps(STEPS)
    loc = store.locate(key, at="n1")
    assert loc.transitions[0].taken == 3  # n1 -> n2 survived with its evidence
    assert store.locate(key, at="n2").transitions[0].taken == 0  # n2 -> x is new
    run = store.record_run(key, ["n1", "n2", "x"], ok=True)
    assert run.revision == 2
    with pytest.raises(ParameterError, match="path\\[2\\]='n3'"):
        store.record_run(key, ["n1", "n2", "n3"], ok=True)
    with pytest.raises(RevisionError, match="still pending"):
        store.revise(key, REVISED, "another")
    assert [h.outcome for h in store.revisions(key)] == ["original", "pending"]


def test_revise_refuses_an_unchanged_graph(store):
    key = store.add("refund", "s", STEPS).key
    with pytest.raises(RevisionError, match="equals the current graph"):
        store.revise(key, ProcedureGraph.from_steps(STEPS).to_dict(), "no-op")


def test_a_failing_revision_is_reverted_rejected_and_refused_unless_forced(store):
    key = store.add("refund", "s", STEPS).key
    _runs(store, key, ["n1", "n2", "n3"], [1] * 18 + [0] * 2)
    store.revise(key, REVISED, "escalate instead")
    outcomes = []
    for _ in range(10):
        store.record_run(key, ["n1", "n2", "n3"], ok=False)
        r = store.evolve(key)
        outcomes.append(r.revision_outcome)
        if r.revision_outcome == "reverted":
            break
    assert outcomes[-1] == "reverted" and set(outcomes[:-1]) == {"pending"}
    p = store.get(key)
    assert (
        p.revision == 1
        and p.graph == ProcedureGraph.from_steps(STEPS)
        and p.pending_revision is None
    )
    assert [r.revision for r in p.rejected_revisions] == [2]
    assert "sprt" in p.rejected_revisions[0].reason
    assert [h.outcome for h in store.revisions(key)] == ["original", "reverted"]
    with pytest.raises(RevisionError, match="rejected before"):
        store.revise(key, REVISED, "try again")
    assert store.revise(key, REVISED, "try again", force=True).revision == 3


def test_gate_decisions_are_recorded_and_match_the_gate(store):
    key = store.add("refund", "s", STEPS).key
    _runs(store, key, ["n1", "n2", "n3"], [1] * 9 + [0])
    store.revise(key, REVISED, "escalate")
    reports = []
    for _ in range(40):
        store.record_run(key, ["n1", "n2", "n3"], ok=True)
        reports.append(store.evolve(key))
        if reports[-1].revision_outcome != "pending":
            break
    assert reports[-1].revision_outcome == "accepted"
    logged = store.gate_decisions(key)
    assert logged == tuple(d for r in reports for d in r.gate_decisions)
    assert [d.gate for d in logged[:2]] == ["sprt", "cost"]
    for d in logged:
        prior = RevisionStats(d.prior_runs, d.prior_successes)
        rev = RevisionStats(d.revision_runs, d.revision_successes)
        gate = SPRTGate() if d.gate == "sprt" else CostGate()
        assert gate.decide(prior, rev).verdict == d.verdict
        assert (d.prior_revision, d.revision) == (1, 2)
    assert logged[-1].outcome == "accept" and store.get(key).pending_revision is None
    assert store.revisions(key)[-1].outcome == "accepted"


def test_cost_gate_vetoes_an_expensive_revision(store):
    key = store.add("refund", "s", STEPS).key
    _runs(store, key, ["n1", "n2", "n3"], [1] * 10, cost=1.0)
    store.revise(key, REVISED, "escalate")
    _runs(store, key, ["n1", "n2", "n3"], [1] * 5, cost=2.0)
    r = store.evolve(key, gate=SPRTGate(min_runs=20, max_runs=50))
    assert r.revision_outcome == "reverted"
    assert [(d.gate, d.verdict) for d in r.gate_decisions] == [
        ("sprt", "continue"),
        ("cost", "revert"),
    ]
    assert "cost" in store.get(key).rejected_revisions[0].reason


def test_margin_gate_can_replace_the_sprt(store):
    key = store.add("refund", "s", STEPS).key
    _runs(store, key, ["n1", "n2", "n3"], [1] * 10)
    store.revise(key, REVISED, "escalate")
    _runs(store, key, ["n1", "n2", "n3"], [1, 0, 0, 0, 0])
    r = store.evolve(key, gate=MarginGate())
    assert r.revision_outcome == "reverted" and r.gate_decisions[0].gate == "margin"


@pytest.mark.parametrize(
    ("primary", "cost", "expected"),
    [
        ("accept", "continue", "accept"),
        ("accept", "revert", "revert"),
        ("continue", "revert", "revert"),
        ("revert", "continue", "revert"),
        ("continue", "continue", "continue"),
        ("revert", "revert", "revert"),
    ],
)
def test_gate_combination_rule(primary, cost, expected):
    assert combine_gate_verdicts(primary, cost) == expected


def test_gate_combination_on_code_arrays_matches_the_names():
    names = ("continue", "accept", "revert")
    p, c = np.meshgrid(np.arange(3, dtype=np.int8), np.arange(3, dtype=np.int8))
    out = combine_gate_verdicts(p.ravel(), c.ravel())
    expected = [
        combine_gate_verdicts(names[i], names[j]) for i, j in zip(p.ravel(), c.ravel(), strict=True)
    ]
    assert [names[k] for k in out] == expected
    with pytest.raises(ParameterError, match="primary='maybe'"):
        combine_gate_verdicts("maybe", "accept")


REVISE_ERRORS = [
    ({"graph": {"nodes": [{"id": "a"}]}, "reason": "r"}, GraphError, "1 nodes, at least 2"),
    ({"graph": REVISED, "reason": ""}, ParameterError, "reason=''"),
    ({"graph": REVISED, "reason": "r", "force": "yes"}, ParameterError, "force='yes'"),
]


@pytest.mark.parametrize(("kwargs", "error", "fragment"), REVISE_ERRORS)
def test_revise_rejects_bad_input_before_changing_anything(store, kwargs, error, fragment):
    key = store.add("refund", "s", STEPS).key
    with pytest.raises(error) as err:
        store.revise(key, **kwargs)
    assert fragment in str(err.value)
    p = store.get(key)
    assert (p.revision, p.pending_revision) == (1, None)
