"""Gate replay on a logged ledger equals what a ``ProcedureStore`` decided on the same
ledger (same gates, same cost-gate veto, concurrent prior runs included); the rule
replay walks the engine's flat rule over each procedure's shown, rated outcomes."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.flat import DEFAULT_RULE, DEFAULT_THRESHOLD, ConfidenceRule
from procmem_core.gates import MarginGate, SPRTGate
from procmem_core.graph import ProcedureGraph, ProcedureStore
from procmem_core.logs import Table, Text, check_log
from procmem_core.logs.replay import agreement, gate_replay, rule_replay, shown_outcomes
from simulators.session_log import LogWorld, log_table, simulate

STEPS = ["look up the invoice", "check the refund policy window", "issue or decline"]
OTHER = ProcedureGraph.from_steps([*STEPS[:2], "issue a credit note"])


def _text(values: list[str]) -> Text:
    uniq, codes = np.unique(np.asarray(values, dtype=str), return_inverse=True)
    return Text.from_codes(codes, uniq.astype(object))


def _deployment(gate, seed: int, procedures: int = 12):
    """A store driven through a revision per procedure: prior runs, a proposal, then the
    revision's runs with some concurrent prior runs, ``evolve`` after each. Returns the
    store and the log of its ledger (runs, revisions with their logged verdicts)."""
    rng = np.random.default_rng(seed)
    store = ProcedureStore()
    runs, revisions = [], []
    for j in range(procedures):
        key = store.add(f"task {j}", f"situation {j}", STEPS).key
        p_prior, p_rev = rng.uniform(0.5, 0.95), rng.uniform(0.3, 0.95)
        for _ in range(int(rng.integers(5, 30))):
            store.record_run(key, [], ok=bool(rng.random() < p_prior))
        proposed_at = store.runs(key)[-1].run_id
        prior = store.get(key).revision
        revision = store.revise(key, OTHER, "variant").revision
        for _ in range(80):
            if rng.random() < 0.3:  # the prior served concurrently
                store.record_run(key, [], ok=bool(rng.random() < p_prior), revision=prior)
            else:
                store.record_run(key, [], ok=bool(rng.random() < p_rev))
            if store.evolve(key, gate=gate).revision_outcome in ("accepted", "reverted"):
                break
        for r in store.runs(key):
            runs.append((key, str(r.revision), r.ok, r.run_id))
        outcome = store.revisions(key)[-1].outcome
        revisions.append((key, str(prior), "", 0, ""))
        revisions.append((key, str(revision), str(prior), proposed_at, outcome))
    run_cols = list(zip(*runs, strict=True))
    rev_cols = list(zip(*revisions, strict=True))
    runs_t = Table("runs", "runs", len(runs), {
        "key": _text(run_cols[0]), "revision": _text(run_cols[1]),
        "ok": np.array(run_cols[2]), "time": np.array(run_cols[3], dtype=float),
    })  # fmt: skip
    revs_t = Table("revisions", "revisions", len(revisions), {
        "key": _text(rev_cols[0]), "revision": _text(rev_cols[1]),
        "prior_revision": _text(rev_cols[2]), "proposed_at": np.array(rev_cols[3], float),
        "verdict": _text(rev_cols[4]),
    })  # fmt: skip
    world = LogWorld((0.5,), (0.0,))
    sessions = log_table(world, simulate(world, rng, 20))
    return store, check_log(sessions, runs_t, revs_t)


@pytest.mark.parametrize("name", ["sprt", "margin"])
def test_gate_replay_equals_the_stores_decisions(name):
    gate = {"sprt": SPRTGate(), "margin": MarginGate()}[name]
    store, log = _deployment(gate, seed=3 if name == "sprt" else 4)
    replay = gate_replay(log, {name: gate})
    assert replay["key"].size == 12
    decided = {d.key: d for d in store.gate_decisions() if d.gate == name}
    for i, key in enumerate(replay["key"]):
        assert replay[f"{name}_verdict"][i] == replay["logged_verdict"][i]
        if key in decided and decided[key].outcome != "continue":
            assert replay[f"{name}_runs"][i] == decided[key].revision_runs
    counts = agreement(replay, {name: gate})
    assert counts[f"{name}_agree"] == counts["with_logged_verdict"] == 12
    verdicts = set(replay[f"{name}_verdict"])
    assert verdicts >= {"accepted", "reverted"}, verdicts  # both kinds were exercised


def test_a_different_gate_disagrees_somewhere():
    _, log = _deployment(SPRTGate(), seed=3)
    gates = {"sprt": SPRTGate(), "margin": MarginGate()}
    counts = agreement(gate_replay(log, gates), gates)
    assert counts["sprt_agree"] == 12 and counts["margin_agree"] < 12


def test_rule_replay_follows_the_rule_by_hand():
    world = LogWorld((0.5, 0.6), (0.3, -0.3), explore_rate=0.1, missing=0.2)
    s = check_log(log_table(world, simulate(world, np.random.default_rng(8), 400))).sessions
    designed = ConfidenceRule(initial=0.8, reward=0.01, penalty=0.06)
    rules = {"seed": (DEFAULT_RULE, DEFAULT_THRESHOLD), "designed": (designed, 0.05)}
    out = rule_replay(s, rules)
    y, counts, _ = shown_outcomes(s)
    for row in range(out["key"].size):
        rule, threshold = rules[out["rule"][row]]
        k = list(s.keys).index(out["key"][row])
        c, dropped = rule.start(), np.nan
        for t in range(counts[k]):
            c = float(rule.update(c, bool(y[k, t] == 1)))
            if c < threshold - 1e-9:
                dropped = t + 1
                break
        assert out["final_confidence"][row] == pytest.approx(c)
        assert np.isnan(dropped) == np.isnan(out["dropped_at"][row])
        if not np.isnan(dropped):
            assert out["dropped_at"][row] == dropped
    seed, slow = out["rule"] == "seed", out["rule"] == "designed"
    assert out["dropped_at"][seed][1] < 10  # the harmful one (0.3 when shown) goes fast
    later = np.where(np.isnan(out["dropped_at"][slow]), np.inf, out["dropped_at"][slow])
    assert (later > out["dropped_at"][seed]).all()  # the slow rule waits for more evidence
