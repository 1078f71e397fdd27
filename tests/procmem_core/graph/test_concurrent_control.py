"""Concurrent control (issue 13, design b): while a revision is pending the pack serves the
prior graph with probability q, runs record which revision they used, and the gates see
``RevisionStats`` with the revision's ``outcomes`` and the prior's ``concurrent`` ones,
replayed event by event in ledger order. Any gate works through the base verbs."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.gates import GateDecision, RevisionStats, SPRTGate
from procmem_core.graph import ContextPacker, ProcedureGraph, ProcedureStore

pytestmark = pytest.mark.store_backends("memory", "sqlite", "postgresql")

STEPS = ["look up the invoice", "check the refund policy window", "issue or decline"]
SHORT = ProcedureGraph.from_steps(["look up the invoice", "refund at once"])
SEEN: list[tuple[RevisionStats, RevisionStats]] = []


class DiscordantPairs(SPRTGate):
    """A toy two-sample rule on the base verbs (not registered: it defines no ``name``):
    pair the revision's runs with the prior's concurrent ones in order; revert once 3
    pairs have the prior succeed where the revision failed, accept after 6 pairs."""

    def decide(self, prior, revision, p0=None):
        SEEN.append((prior, revision))
        pairs = list(zip(revision.outcomes, prior.concurrent, strict=False))
        against = sum(q and not r for r, q in pairs)
        verdict = "revert" if against >= 3 else "accept" if len(pairs) >= 6 else "continue"
        code = {"revert": "revert_boundary", "accept": "accept_boundary"}.get(verdict, "undecided")
        return GateDecision(
            verdict=verdict, reason_code=code, reason=f"{against} of {len(pairs)} pairs",
            runs_used=revision.runs, statistic=float(against), gate="pairs",
        )  # fmt: skip


def _pending(store):
    key = store.add("refund", "a customer asks for a refund", STEPS).key
    for ok in (True, True, False, True):
        store.record_run(key, ["n1", "n2", "n3"], ok=ok, cost=1.0 if ok else None)
    store.revise(key, SHORT, "shorter")
    return key


def test_runs_of_the_prior_while_pending_fold_into_the_held_prior_only(store):
    key = _pending(store)
    run = store.record_run(key, ["n1", "n2", "n3"], ok=True, revision=1)
    assert run.revision == 1
    store.record_run(key, ["n1", "n2"], ok=False)
    p = store.get(key)
    assert (p.revision, p.runs, p.successes) == (2, 5, 3)  # 4 inherited, 1 of its own
    with pytest.raises(ParameterError, match="path\\[2\\]='n3'"):
        store.record_run(key, ["n1", "n2", "n3"], ok=True)  # n3 is not in revision 2
    with pytest.raises(ParameterError, match="revision=7"):
        store.record_run(key, ["n1"], ok=True, revision=7)
    assert [r.revision for r in store.runs(key)] == [1, 1, 1, 1, 1, 2]


def test_a_revert_brings_the_prior_back_with_its_concurrent_runs(store):
    key = _pending(store)
    for _ in range(3):
        store.record_run(key, ["n1", "n2", "n3"], ok=True, revision=1)
        store.record_run(key, ["n1", "n2"], ok=False)
    report = store.evolve(key, gate=DiscordantPairs())
    assert report.revision_outcome == "reverted"
    p = store.get(key)
    assert (p.revision, p.runs, p.successes, p.failure_streak) == (1, 7, 6, 0)
    assert store.revisions(key)[-1].outcome == "reverted"


def test_the_gate_sees_outcomes_and_concurrent_outcomes_event_by_event(store):
    key = _pending(store)
    events = [(1, True), (2, False), (2, True), (1, False), (1, True), (2, False)]
    for revision, ok in events:
        path = ["n1", "n2", "n3"] if revision == 1 else ["n1", "n2"]
        store.record_run(key, path, ok=ok, revision=revision, cost=2.0 if ok else None)
    SEEN.clear()
    assert store.evolve(key, gate=DiscordantPairs()).revision_outcome == "pending"
    first = SEEN[: len(events)]  # the primary gate, once per event in ledger order
    assert [len(rev.outcomes) for _, rev in first] == [0, 1, 2, 2, 2, 3]
    assert [p.concurrent for p, _ in first][-1] == (True, False, True)
    assert [rev.outcomes for _, rev in first][-1] == (False, True, False)
    prior, rev = first[-1]
    assert (prior.runs, prior.successes) == (7, 5)  # 4 before the revision + 3 concurrent
    assert prior.outcomes == (True, True, False, True, True, False, True)
    assert prior.success_costs == (1.0, 1.0, 1.0, 2.0, 2.0)
    assert (rev.runs, rev.successes, rev.success_costs) == (3, 1, (2.0,))


def test_the_decision_does_not_depend_on_the_evolve_cadence():
    rng = np.random.default_rng(np.random.SeedSequence(11))
    events = [(int(rng.integers(1, 3)), bool(rng.random() < 0.6)) for _ in range(40)]
    outcomes = []
    for every in (1, 4, len(events)):
        store = ProcedureStore()
        key = _pending(store)
        decided = None
        for i, (revision, ok) in enumerate(events, 1):
            path = ["n1", "n2", "n3"] if revision == 1 else ["n1", "n2"]
            if store.get(key).pending_revision is None and revision == 1:
                continue  # after the decision a pack no longer serves the prior
            store.record_run(key, path, ok=ok, revision=None if revision == 2 else 1)
            if decided is None and (i % every == 0 or i == len(events)):
                report = store.evolve(key, gate=SPRTGate())
                if report.revision_outcome != "pending":
                    rec = report.gate_decisions[0]
                    decided = (report.revision_outcome, rec.revision_runs, rec.prior_runs)
        outcomes.append(decided)
    assert outcomes[0] is not None and all(o == outcomes[0] for o in outcomes)


def test_the_pack_serves_the_prior_with_probability_q(store):
    key = _pending(store)
    q, n = 0.3, 2000
    packer = ContextPacker(
        store, rng=np.random.default_rng(np.random.SeedSequence(2)), concurrent_share=q
    )
    served = [packer.pack("a customer asks for a refund") for _ in range(n)]
    prior = sum(p.procedure_revisions == (1,) for p in served)
    assert abs(prior / n - q) < 4 * np.sqrt(q * (1 - q) / n)
    assert {p.procedure_revisions for p in served} == {(1,), (2,)}
    one = next(p for p in served if p.procedure_revisions == (1,))
    assert "3) issue or decline" in one.text  # the prior graph's steps
    other = next(p for p in served if p.procedure_revisions == (2,))
    assert "2) refund at once" in other.text and "issue or decline" not in other.text
    store.record_run(key, ["n1", "n2"], ok=True)
    report = store.evolve(key, gate=SPRTGate(min_runs=1, max_runs=1))  # decided at the cap
    # p0 = (3 + 1) / (4 + 2) from the prior's 3 of 4, p1 = p0 - 0.15: one success gives
    # LLR = ln(p1 / p0) = -0.25, inside the boundaries; at the cap the LLR rule accepts
    assert report.revision_outcome == "accepted"
    assert packer.pack("a customer asks for a refund").procedure_revisions == (
        store.get(key).revision,
    )


def test_q_zero_draws_what_the_seed_draws():
    """With q = 0 (the default) the pack draws one uniform per pack, as before."""
    store = ProcedureStore()
    _pending(store)
    a = ContextPacker(store, explore_rate=0.5, rng=np.random.default_rng(3))
    draws = [bool(a.pack("refund").procedure_keys_withheld) for _ in range(30)]
    assert draws == (np.random.default_rng(3).random(30) < 0.5).tolist()
    with pytest.raises(ParameterError, match=r"concurrent_share=1\.0"):
        ContextPacker(store, rng=np.random.default_rng(3), concurrent_share=1.0)
    with pytest.raises(ParameterError, match="rng"):
        ContextPacker(store, concurrent_share=0.5)


def test_a_prior_served_concurrently_keeps_its_pitfalls(store):
    """The prior graph served beside a pending revision is shown with the fail-prone flags
    its own last evolve found, as the same pack showed them before the revision (the seed:
    read fail-prone steps as pitfalls). They were dropped: the prior's steps came without
    'Pitfall:' lines, though nothing about the prior had changed."""
    graph = {
        "nodes": [{"id": "a"}, {"id": "b"}, {"id": "c"}, {"id": "d"}],
        "edges": [
            {"src": "a", "dst": "b"},
            {"src": "a", "dst": "c"},
            {"src": "b", "dst": "d"},
            {"src": "c", "dst": "d"},
        ],
    }
    key = store.add("refund", "a customer asks for a refund", graph=graph).key
    for i in range(40):  # through b: 3 of 20 succeed; through c: 19 of 20
        via_b = i % 2 == 0
        ok = (i % 7 == 0) if via_b else i != 1
        store.record_run(key, ["a", "b" if via_b else "c", "d"], ok=ok)
    flags = store.evolve(key).fail_prone_steps
    assert [f.src for f in flags] == ["b"]
    pitfall = "Pitfall: step b failed in 17 of 20 runs through it (85% against 45% overall)"
    before = ContextPacker(store).pack("a customer asks for a refund").text
    assert pitfall in before
    store.revise(key, SHORT, "shorter")
    packer = ContextPacker(
        store, rng=np.random.default_rng(np.random.SeedSequence(3)), concurrent_share=0.5
    )
    served = [packer.pack("a customer asks for a refund") for _ in range(20)]
    prior = next(p for p in served if p.procedure_revisions == (1,))
    assert prior.text.splitlines()[1:] == before.splitlines()[1:]  # the prior's block as before
    revision = next(p for p in served if p.procedure_revisions == (2,))
    assert "Pitfall" not in revision.text  # the revision has no findings of its own yet


def test_run_complete_credits_the_graph_the_pack_served(store):
    """``complete_run`` (the seed's run.complete) after a pack that served the pending
    revision's prior: the run goes to the prior (revision 1), as ``record_run(...,
    revision=)`` does, so the gate compares the arms the agent really ran. Before, run.complete
    had no way to say so and every such session was charged to the revision on trial."""
    key = _pending(store)
    packer = ContextPacker(
        store, rng=np.random.default_rng(np.random.SeedSequence(5)), concurrent_share=0.5
    )
    packs = [packer.pack("a customer asks for a refund") for _ in range(12)]
    assert {p.procedure_revisions for p in packs} == {(1,), (2,)}
    for p in packs:
        served = dict(zip(p.procedure_keys, p.procedure_revisions, strict=True))
        (run,) = store.complete_run(["memory_note", *p.procedure_keys], ok=True, revisions=served)
        assert run.revision == p.procedure_revisions[0]
    n_prior = sum(p.procedure_revisions == (1,) for p in packs)
    assert [r.revision for r in store.runs(key)].count(1) == 4 + n_prior
    bare = {key: 1}  # keyed as listed, the bare key; listed twice is still one run
    (run,) = store.complete_run([key, f"default/{key}"], ok=False, revisions=bare)
    assert run.revision == 1
    assert store.complete_run([key], ok=True)[0].revision == 2  # default: the current graph
    with pytest.raises(ParameterError, match="revisions\\['default/procedure_other'\\]"):
        store.complete_run([key], ok=True, revisions={"default/procedure_other": 1})
    with pytest.raises(ParameterError, match="revision=7"):
        store.complete_run([key], ok=True, revisions={key: 7})
    with pytest.raises(ParameterError, match="revisions\\["):
        store.complete_run([key], ok=True, revisions={key: "1"})


def test_locate_in_the_prior_graph_the_pack_served(store):
    """An agent served the prior graph beside a pending revision locates in that graph
    (``revision=`` from ``Pack.procedure_revisions``), with the prior's evidence and failure
    notes. Before, locate read the revision only: at 'n2' the agent following the prior's
    'check the refund policy window' was told it stood at 'refund at once', an exit, and
    'n3' (the prior's last step) matched nothing."""
    key = _pending(store)
    store.record_run(key, ["n1", "n2", "n3"], ok=False, note="window closed", revision=1)
    packer = ContextPacker(
        store, rng=np.random.default_rng(np.random.SeedSequence(0)), concurrent_share=0.5
    )
    pack = next(
        p for p in (packer.pack("a customer asks for a refund") for _ in range(20))
        if p.procedure_revisions == (1,)
    )  # fmt: skip
    (served,) = pack.procedure_revisions
    here = store.locate(key, at="n2", revision=served)
    assert here.active.text == "check the refund policy window"
    (ahead,) = here.transitions
    assert (ahead.src, ahead.dst, ahead.taken, ahead.succeeded) == ("n2", "n3", 5, 3)
    assert [n.note for n in here.failure_notes] == ["window closed"]
    assert store.locate(key, at="n3", revision=served).matched
    assert store.locate(key, at="n2").active.text == "refund at once"  # default: current
    assert store.locate(key, at="n2", revision=2) == store.locate(key, at="n2")
    with pytest.raises(ParameterError, match="revision=7"):
        store.locate(key, at="n2", revision=7)
