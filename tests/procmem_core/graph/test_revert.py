"""A revert restores the prior graph exactly as it was: status, aggregates, traces, proven
path and findings (issue 12, bugs 1 and 2). Both stores (the ``store`` fixture)."""

from __future__ import annotations

import pytest

from procmem_core.gates import SPRTGate
from procmem_core.graph import ProcedureGraph

STEPS = ["look up the invoice", "check the refund policy window", "issue or decline"]


def _proven_template(store):
    """A procedure that succeeded 20 times out of 20 through n1 -> n2 -> n3: a template."""
    key = store.add("refund", "a customer asks for a refund", STEPS).key
    for i in range(20):
        store.record_run(key, ["n1", "n2", "n3"], ok=True, note=f"run {i}")
        if i in (9, 19):
            store.evolve(key)
    assert store.get(key).status == "template"
    return key


def _revise_and_fail_until_reverted(store, key, graph, path):
    store.revise(key, graph, "try a variant")
    for n in range(1, 20):
        store.record_run(key, path, ok=False)
        report = store.evolve(key)
        if report.revision_outcome == "reverted":
            return n
    raise AssertionError("the gate never reverted")


def _evidence(store, key):
    p = store.get(key)
    loc = store.locate(key, at="n2")
    return (
        p.status, p.runs, p.successes, p.revision, p.graph, p.steps,
        p.proven_path, p.dead_ends, p.fail_prone_steps, p.fail_prone_transitions,
        store.traces(key), [(t.src, t.dst, t.taken, t.succeeded) for t in loc.transitions],
        p.run_stats_by_agent,
    )  # fmt: skip


def test_a_correct_revert_does_not_quarantine_the_restored_original(store):
    key = _proven_template(store)
    before = _evidence(store, key)
    new = ProcedureGraph.from_steps([*STEPS[:2], "issue a credit note"])
    n = _revise_and_fail_until_reverted(store, key, new, ["n1", "n2", "n3"])
    assert n == 3  # the gate reverts after 3 failed runs of the revision
    p = store.get(key)
    assert p.status == "template" and p.pending_revision is None
    assert [m.key for m in store.match("a customer wants a refund")] == [key]
    assert _evidence(store, key) == before
    assert len(store.runs(key)) == 23  # the revision's runs stay in the ledger
    assert p.failure_streak == 0  # the revision's failures were its own


def test_a_revert_restores_the_evidence_on_nodes_the_revision_removed(store):
    key = _proven_template(store)
    before = _evidence(store, key)
    shorter = ProcedureGraph.from_steps(STEPS[:2])
    _revise_and_fail_until_reverted(store, key, shorter, ["n1", "n2"])
    p = store.get(key)
    assert p.proven_path == ("n1", "n2", "n3") and p.dead_ends == ()
    loc = store.locate(key, at="n2")
    assert [(t.src, t.dst, t.taken, t.succeeded) for t in loc.transitions] == [("n2", "n3", 20, 20)]
    assert _evidence(store, key) == before


def test_a_revision_starts_without_the_priors_failure_streak(store):
    key = store.add("refund", "s", STEPS).key
    for ok in (True, True, True, False, False):
        store.record_run(key, ["n1", "n2", "n3"], ok=ok)
    store.revise(key, ProcedureGraph.from_steps(STEPS[:2]), "shorter")
    assert store.get(key).failure_streak == 0
    store.record_run(key, ["n1", "n2"], ok=False)
    assert store.evolve(key, gate=SPRTGate(min_runs=10)).status == "exercised"  # 1 of its own


def test_the_literal_streak_reading_is_an_option_and_quarantines_the_original(store):
    key = _proven_template(store)
    new = ProcedureGraph.from_steps([*STEPS[:2], "issue a credit note"])
    store.revise(key, new, "try a variant")
    outcome = None
    for _ in range(3):
        store.record_run(key, ["n1", "n2", "n3"], ok=False)
        outcome = store.evolve(key, streak_scope="ledger").revision_outcome
    assert outcome == "reverted"
    assert store.get(key).status == "quarantined"  # the landed behaviour, kept for comparison


@pytest.mark.parametrize("scope", ["ledger", "revision"])
def test_both_streak_scopes_agree_without_revisions(store, scope):
    key = store.add("refund", "s", STEPS).key
    for ok in (True, False, False, False):
        store.record_run(key, ["n1"], ok=ok)
    assert store.evolve(key, streak_scope=scope).status == "quarantined"
    store.record_run(key, ["n1"], ok=True)
    assert store.get(key).status == "exercised"  # the next success lifts it
