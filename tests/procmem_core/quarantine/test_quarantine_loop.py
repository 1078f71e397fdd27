"""The store and the pack under each exit policy agree with ``quarantine_fate``'s chain
within 4 standard errors (issue 29, item 2): one procedure alone for its task, served by
``ContextPacker``, its runs recorded and evolved after every run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from procmem_core.graph import ContextPacker, ProcedureStore
from procmem_core.quarantine import DecayPolicy, HalfOpenPolicy, ProbationPolicy, SeedPolicy
from procmem_core.quarantine.fate import (
    expected_release,
    exposures_from_fresh,
    long_run,
    p_quarantined,
)

P, L, SESSIONS, REPS, FIRST = 0.5, 2, 150, 24, 10
SITUATION = "a customer asks for a refund on a paid invoice"


def replicate(policy, seed: int) -> dict:
    """One procedure through ``SESSIONS`` sessions: sessions that ran it, whether its first
    quarantine came within ``FIRST`` runs, and the quarantined sessions before each
    release (decay releases as its last strike decays, before the session that runs it)."""
    rng = np.random.default_rng(np.random.SeedSequence([29, seed]))
    store = ProcedureStore(strike_limit=L, quarantine=policy)
    key = store.add("refund", SITUATION, ["look up", "check", "issue"]).key
    packer = ContextPacker(store, rng=rng, max_procedures=1)
    served = runs = 0
    first, since, waits = None, None, []
    for t in range(SESSIONS):
        if not packer.pack(SITUATION).procedure_keys:
            continue
        served += 1
        before = len(store.releases())
        store.record_run(key, ["n1"], ok=bool(rng.random() < P))
        if len(store.releases()) > before:
            waits.append(t - since - (1 if isinstance(policy, DecayPolicy) else 0))
        if store.status(key) != "quarantined":
            runs += 1
        if store.evolve(key, min_runs=1).previous_status != "quarantined" == store.status(key):
            since = t
            first = runs if first is None else first
    return {"served": served, "hit": first is not None and first <= FIRST, "waits": waits}


@pytest.mark.slow
@pytest.mark.parametrize(
    "policy",
    [SeedPolicy(), ProbationPolicy(floor=0.3, candidates=1),
     HalfOpenPolicy(cool_down=3, probes=2, release_after=1), DecayPolicy(decay_sessions=2)],
    ids=lambda x: x.name,
)  # fmt: skip
def test_store_and_pack_agree_with_the_chain_within_4_se(policy):
    out = [replicate(policy, i) for i in range(REPS)]
    hit = np.array([o["hit"] for o in out], dtype=float)
    exact = p_quarantined(P, FIRST, L)
    assert abs(hit.mean() - exact) <= 4 * math.sqrt(exact * (1 - exact) / REPS)
    served = np.array([o["served"] for o in out], dtype=float)
    exact_served = exposures_from_fresh(P, L, policy, SESSIONS)
    assert abs(served.mean() - exact_served) <= 4 * served.std(ddof=1) / math.sqrt(REPS)
    waits = np.array([w for o in out for w in o["waits"]], dtype=float)
    if isinstance(policy, SeedPolicy):
        assert waits.size == 0 and served.max() < SESSIONS
        return
    r = expected_release(P, L, policy)
    se = waits.std(ddof=1) / math.sqrt(waits.size) if waits.std() > 0 else 0.0
    assert abs(waits.mean() - r) <= max(4 * se, 1e-12)


def explored(policy, p: float, L: int, eps: float, sessions: int, seed: int) -> tuple:
    """One procedure under an explore rate: (sessions run, sessions it started quarantined
    after the first 100)."""
    rng = np.random.default_rng(np.random.SeedSequence([29, 7, seed]))
    store = ProcedureStore(strike_limit=L, quarantine=policy)
    key = store.add("refund", SITUATION, ["look up", "check", "issue"]).key
    packer = ContextPacker(store, rng=rng, max_procedures=1, explore_rate=eps)
    served = quarantined = 0
    for t in range(sessions):
        quarantined += t >= 100 and store.status(key) == "quarantined"
        if packer.pack(SITUATION).procedure_keys:
            served += 1
            store.record_run(key, ["n1"], ok=bool(rng.random() < p))
            store.evolve(key, min_runs=1)
    return served, quarantined / (sessions - 100)


@pytest.mark.slow
@pytest.mark.parametrize(
    "policy",
    [ProbationPolicy(floor=0.2, candidates=1), HalfOpenPolicy(cool_down=4, probes=3,
     release_after=2), DecayPolicy(decay_sessions=3)],
    ids=lambda x: x.name,
)  # fmt: skip
def test_the_chain_with_an_explore_rate_agrees_with_the_store_and_pack(policy):
    """The explore rate withholds the procedure in and out of quarantine: the chain's
    ``explore_rate`` matches the pack within 4 SE (exposures from a fresh start; the
    long-run share quarantined, which decay counts as released until the run)."""
    p, L, eps, sessions, reps = 0.5, 2, 0.3, 400, 60
    out = np.array([explored(policy, p, L, eps, sessions, i) for i in range(reps)])
    exact = exposures_from_fresh(p, L, policy, sessions, eps)
    assert abs(out[:, 0].mean() - exact) <= 4 * out[:, 0].std(ddof=1) / math.sqrt(reps)
    if isinstance(policy, DecayPolicy):
        return
    share, _ = long_run(p, L, policy, eps)
    assert abs(out[:, 1].mean() - share) <= 4 * out[:, 1].std(ddof=1) / math.sqrt(reps)


def test_the_store_evolved_every_e_runs_agrees_with_the_chain():
    """The loop's cadence (evolve after every ``evolve_every`` runs): the store's first
    quarantine within 60 runs agrees with ``p_quarantined(..., evolve_every)`` within 4 SE
    (and not with the every-run chain: 0.548 against 0.927 here)."""
    p, L, e, runs, reps = 0.6, 3, 5, 60, 200
    rng = np.random.default_rng(np.random.SeedSequence([29, 10]))
    hits = 0
    for _ in range(reps):
        store = ProcedureStore(strike_limit=L)
        key = store.add("refund", SITUATION, ["look up", "check", "issue"]).key
        for t in range(1, runs + 1):
            store.record_run(key, ["n1"], ok=bool(rng.random() < p))
            if t % e == 0 and store.evolve(key, min_runs=1).status == "quarantined":
                hits += 1
                break
    exact = p_quarantined(p, runs, L, e)
    assert abs(hits / reps - exact) <= 4 * math.sqrt(exact * (1 - exact) / reps)
    assert p_quarantined(p, runs, L) - exact > 8 * math.sqrt(exact * (1 - exact) / reps)


def cadenced(policy, p: float, L: int, e: int, eps: float, sessions: int, seed: int) -> tuple:
    """One procedure, evolved after every e-th run recorded on it (the loop world's
    ``evolve_every``): (sessions run, sessions it started quarantined after the first 100)."""
    rng = np.random.default_rng(np.random.SeedSequence([29, 11, seed]))
    store = ProcedureStore(strike_limit=L, quarantine=policy)
    key = store.add("refund", SITUATION, ["look up", "check", "issue"]).key
    packer = ContextPacker(store, rng=rng, max_procedures=1, explore_rate=eps)
    served = quarantined = fresh = 0
    for t in range(sessions):
        quarantined += t >= 100 and store.status(key) == "quarantined"
        if packer.pack(SITUATION).procedure_keys:
            served += 1
            store.record_run(key, ["n1"], ok=bool(rng.random() < p))
            fresh += 1
            if fresh == e:
                store.evolve(key, min_runs=1)
                fresh = 0
    return served, quarantined / (sessions - 100)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("policy", "eps"),
    [(ProbationPolicy(floor=0.2, candidates=1), 0.0), (ProbationPolicy(floor=0.3,
      candidates=1), 0.2), (HalfOpenPolicy(cool_down=4, probes=3, release_after=2), 0.0),
     (HalfOpenPolicy(cool_down=2, probes=2, release_after=1), 0.2),
     (DecayPolicy(decay_sessions=3), 0.0), (SeedPolicy(), 0.0)],
    ids=lambda x: x.describe() if hasattr(x, "describe") else str(x),
)  # fmt: skip
def test_the_chain_at_the_loops_evolve_cadence_agrees_with_the_store_and_pack(policy, eps):
    """Evolve every 4 runs: quarantine waits for the evolve, and the runs in quarantine
    count toward the next one. Exposures from a fresh start and the long-run share
    quarantined (not for decay, counted as released at its run) within 4 SE
    of ``exposures_from_fresh`` and ``long_run`` with ``evolve_every``."""
    p, L, e, sessions, reps = 0.4, 2, 4, 400, 60
    out = np.array([cadenced(policy, p, L, e, eps, sessions, i) for i in range(reps)])
    exact = exposures_from_fresh(p, L, policy, sessions, eps, e)
    assert abs(out[:, 0].mean() - exact) <= 4 * out[:, 0].std(ddof=1) / math.sqrt(reps)
    assert abs(exposures_from_fresh(p, L, policy, sessions, eps) - exact) > 1.0
    if isinstance(policy, DecayPolicy):
        return  # the chain counts the session that runs it after its strikes decayed as
        # released (the store shows it quarantined until that run): the exposures say it
    share, _ = long_run(p, L, policy, eps, e)
    se = out[:, 1].std(ddof=1) / math.sqrt(reps)
    assert abs(out[:, 1].mean() - share) <= max(4 * se, 1e-12)
