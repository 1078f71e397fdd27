"""Quarantine exit policies (issue 29, item 2): the registry and its YAML files, bad input
refused naming the key, the additive floor, and the store and the pack following each
policy's rules (releases logged with their reasons)."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from procmem_core.errors import ParameterError
from procmem_core.graph import ContextPacker, ProcedureStore
from procmem_core.quarantine import (
    QUARANTINE_POLICIES,
    DecayPolicy,
    HalfOpenPolicy,
    ProbationPolicy,
    SeedPolicy,
    make_quarantine_policy,
)
from procmem_core.quarantine.select import floor_probabilities

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
STEPS = ["look up the invoice", "check the refund window", "issue or decline"]


def test_every_policy_has_one_yaml_that_builds_it():
    files = sorted((ROOT / "conf" / "quarantine").glob("*.yaml"))
    assert {f.stem for f in files} == set(QUARANTINE_POLICIES.names())
    for f in files:
        node = yaml.safe_load(f.read_text())
        node.pop("defaults")
        policy = make_quarantine_policy(**node)
        assert policy.name == f.stem
        assert make_quarantine_policy(**policy.config()) == policy


@pytest.mark.parametrize(
    ("params", "field"),
    [({"name": "probation", "floor": 0.5, "candidates": 2}, "floor"),
     ({"name": "probation", "floor": -0.01}, "floor"),
     ({"name": "probation", "floor": 0.34, "candidates": 3}, "floor"),
     ({"name": "probation", "candidates": 0}, "candidates"),
     ({"name": "half_open", "cool_down": 0}, "cool_down"),
     ({"name": "half_open", "probes": 0}, "probes"),
     ({"name": "half_open", "probes": 2, "release_after": 3}, "release_after"),
     ({"name": "half_open", "release_after": 0}, "release_after"),
     ({"name": "decay", "decay_sessions": 0}, "decay_sessions"),
     ({"name": "circuit"}, "name"),
     ({"name": "seed", "floor": 0.1}, "floor")],
)  # fmt: skip
def test_bad_input_is_refused_naming_the_key(params, field):
    with pytest.raises(ParameterError) as err:
        make_quarantine_policy(**params)
    assert err.value.field == field


def test_the_floor_is_added_so_it_holds_and_the_probabilities_sum_to_one():
    for n, lead, f in [(2, 0, 0.05), (3, 2, 0.3), (4, None, 0.2), (1, 0, 0.0)]:
        probs = floor_probabilities(n, lead, f)
        assert probs.min() >= f - 1e-15
        total = 1.0 if lead is not None else n * f
        assert abs(probs.sum() - total) < 1e-12
        if lead is not None:
            assert abs(probs[lead] - (f + (1 - n * f))) < 1e-12


# -- the store ----------------------------------------------------------------------


def _quarantined(policy, strike_limit=3):
    store = ProcedureStore(strike_limit=strike_limit, quarantine=policy)
    key = store.add("refund", "a customer asks for a refund", STEPS).key
    for _ in range(strike_limit):
        store.record_run(key, ["n1"], ok=False)
    assert store.evolve(key).status == "quarantined"
    return store, key


def test_seed_a_success_lifts_and_the_release_is_logged(caplog):
    store, key = _quarantined(SeedPolicy())
    store.record_run(key, ["n1"], ok=False)
    assert store.status(key) == "quarantined" and store.releases() == ()
    with caplog.at_level(logging.INFO, logger="procmem.quarantine"):
        run = store.record_run(key, ["n1", "n2", "n3"], ok=True)
    assert store.status(key) == "exercised"
    (r,) = store.releases(key)
    assert (r.key, r.run_id, r.policy) == (key, run.run_id, "seed")
    assert "success lifts" in r.reason and r.reason in caplog.text


def test_half_open_needs_m_successes_and_a_failed_set_goes_back_to_cool_down():
    store, key = _quarantined(HalfOpenPolicy(cool_down=2, probes=3, release_after=2))
    store.record_run(key, ["n1", "n2", "n3"], ok=True)  # probe 1 succeeds: 1 of 2
    assert store.evolve(key).status == "quarantined"  # evolve does not lift mid-probe
    assert store.match("a customer asks for a refund", include_quarantined=True)[0].probe_runs == 1
    store.record_run(key, ["n1"], ok=False)
    store.record_run(key, ["n1"], ok=False)  # 2 failures of 3: out of reach
    assert store.get(key).status == "quarantined" and store.releases() == ()
    assert store.evolve(key).status == "quarantined"
    store.record_run(key, ["n1", "n2", "n3"], ok=True)
    store.record_run(key, ["n1", "n2", "n3"], ok=True)
    assert store.status(key) == "exercised"
    (r,) = store.releases()
    assert r.reason == "2 of 2 probe runs succeeded after a cool-down of 2 sessions"


def test_decay_releases_with_a_clean_slate():
    store, key = _quarantined(DecayPolicy(decay_sessions=4))
    store.record_run(key, ["n1"], ok=False)  # the run after the strikes decayed
    snap = store.get(key)
    assert snap.status == "exercised" and snap.failure_streak == 1
    assert "decayed to 0" in store.releases()[0].reason


def test_probe_counters_survive_a_reopened_file(tmp_path):
    path = tmp_path / "procedures.db"
    policy = HalfOpenPolicy(cool_down=1, probes=3, release_after=2)
    store = ProcedureStore.open(path, strike_limit=2, quarantine=policy)
    key = store.add("refund", "a customer asks for a refund", STEPS).key
    store.record_run(key, ["n1"], ok=False)
    store.record_run(key, ["n1"], ok=False)
    assert store.evolve(key, min_runs=1).status == "quarantined"
    store.record_run(key, ["n1", "n2", "n3"], ok=True)
    store.close()
    with ProcedureStore.open(path, strike_limit=2, quarantine=policy) as again:
        assert again.status(key) == "quarantined"
        again.record_run(key, ["n1", "n2", "n3"], ok=True)
        assert again.status(key) == "exercised"


# -- the pack -----------------------------------------------------------------------


def _packer(policy, strike_limit=3, seed=0, **kw):
    store, key = _quarantined(policy, strike_limit)
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    return store, key, ContextPacker(store, rng=rng, max_procedures=1, **kw)


def test_seed_never_serves_a_quarantined_procedure_unless_asked():
    store, key, packer = _packer(SeedPolicy())
    assert all(not packer.pack("a customer wants a refund").procedure_keys for _ in range(50))
    shown = ContextPacker(store, include_quarantined=True).pack("a customer wants a refund")
    assert shown.procedure_keys == (f"default/{key}",)


@pytest.mark.parametrize(("policy", "wait"), [
    (HalfOpenPolicy(cool_down=5, probes=2, release_after=1), 5),
    (DecayPolicy(decay_sessions=3), 9),
])  # fmt: skip
def test_the_pack_serves_after_exactly_the_wait(policy, wait):
    *_, packer = _packer(policy)
    served = [
        bool(packer.pack("a customer wants a refund").procedure_keys) for _ in range(wait + 1)
    ]
    assert served == [False] * wait + [True]


def test_half_open_probes_run_in_a_row_then_cool_down_again():
    store, key, packer = _packer(HalfOpenPolicy(cool_down=2, probes=2, release_after=2))
    pattern = []
    for _ in range(8):
        pack = packer.pack("a customer wants a refund")
        pattern.append(bool(pack.procedure_keys))
        if pack.procedure_keys:
            store.record_run(key, ["n1"], ok=False)  # every probe fails
    # 2 sessions cool-down, one probe (a failure puts 2 of 2 out of reach), again
    assert pattern == [False, False, True, False, False, True, False, False]


def test_probation_serves_a_quarantined_procedure_with_the_floor():
    f, packs = 0.2, 4000
    *_, packer = _packer(ProbationPolicy(floor=f, candidates=1), seed=3)
    served = np.array([bool(packer.pack("a refund").procedure_keys) for _ in range(packs)])
    assert abs(served.mean() - f) <= 4 * math.sqrt(f * (1 - f) / packs)


def test_probation_floor_holds_for_every_candidate():
    policy = ProbationPolicy(floor=0.15, candidates=2)
    store = ProcedureStore(strike_limit=3, quarantine=policy)
    top = store.add("refund a", "a customer asks for a refund on a paid invoice", STEPS).key
    other = store.add("refund b", "a customer asks for a refund", STEPS).key
    packer = ContextPacker(store, rng=np.random.default_rng(7), max_procedures=1)
    situation = "a customer asks for a refund on a paid invoice"
    assert store.match(situation)[0].key == top
    firsts = [packer.pack(situation).procedure_keys[0] for _ in range(4000)]
    share = np.mean([k == f"default/{other}" for k in firsts])
    assert abs(share - 0.15) <= 4 * math.sqrt(0.15 * 0.85 / 4000)


def test_a_floor_needs_a_generator():
    store, _ = _quarantined(ProbationPolicy())
    with pytest.raises(ParameterError) as err:
        ContextPacker(store)
    assert err.value.field == "rng"


@pytest.mark.parametrize("floor", ["0.1", True, float("nan"), None])
def test_a_floor_that_is_not_a_number_is_refused(floor):
    """float("0.1") passed the old check and the string was kept (the pack then failed
    comparing it with 0)."""
    with pytest.raises(ParameterError) as err:
        ProbationPolicy(floor=floor, candidates=2)
    assert err.value.field == "floor"


def test_a_negative_floor_names_the_range_its_candidates_allow():
    with pytest.raises(ParameterError, match=r"\[0, 1/candidates\) = \[0, 0.25\)"):
        ProbationPolicy(floor=-0.01, candidates=4)
    assert type(ProbationPolicy(floor=np.float32(0.25), candidates=np.int64(3)).floor) is float


@pytest.mark.parametrize(("f", "eps", "rank"), [(0.2, 0.3, 0), (0.1, 0.5, 1)])
def test_the_explore_rate_withholds_what_the_floor_put_first(f, eps, rank):
    """docs/graph.md: a quarantined procedure the floor put first is withheld with
    probability epsilon like any first match, so it runs at f (1 - epsilon), not f."""
    store = ProcedureStore(strike_limit=2, quarantine=ProbationPolicy(floor=f, candidates=2))
    situation = "a customer asks for a refund on a paid invoice"
    for name, text in [("a", situation), ("b", "a customer asks for a refund")]:
        store.add(name, text, STEPS)
    key = store.match(situation)[rank].key
    for _ in range(2):
        store.record_run(key, ["n1"], ok=False)
    assert store.evolve(key, min_runs=1).status == "quarantined"
    rng = np.random.default_rng(np.random.SeedSequence([29, rank]))
    packer = ContextPacker(store, rng=rng, max_procedures=2, explore_rate=eps)
    packs, ref = 4000, f"default/{key}"
    shown = [ref in packer.pack(situation).procedure_keys for _ in range(packs)]
    rate = f * (1 - eps)
    assert abs(np.mean(shown) - rate) <= 4 * math.sqrt(rate * (1 - rate) / packs)


def test_include_quarantined_serves_by_rank_and_draws_no_floor():
    policy = ProbationPolicy(floor=0.3, candidates=2)
    store = ProcedureStore(strike_limit=2, quarantine=policy)
    situation = "a customer asks for a refund on a paid invoice"
    top = store.add("a", situation, STEPS).key
    second = store.add("b", "a customer asks for a refund", STEPS).key
    for _ in range(2):
        store.record_run(second, ["n1"], ok=False)
    assert store.evolve(second, min_runs=1).status == "quarantined"
    rng = np.random.default_rng(3)
    packer = ContextPacker(store, rng=rng, max_procedures=2, include_quarantined=True)
    before = rng.bit_generator.state
    packs = [packer.pack(situation).procedure_keys for _ in range(200)]
    assert all(p == (f"default/{top}", f"default/{second}") for p in packs)
    # one uniform per pack (the explore draw), none for a floor
    again = np.random.default_rng(3)
    again.bit_generator.state = before
    again.random(200)
    assert rng.bit_generator.state == again.bit_generator.state


@pytest.mark.parametrize(
    "policy",
    [SeedPolicy(), DecayPolicy(decay_sessions=50), HalfOpenPolicy(cool_down=50),
     ProbationPolicy(floor=0.01, candidates=1)],
    ids=lambda x: x.name,
)  # fmt: skip
def test_quarantined_matches_do_not_crowd_out_an_open_one(policy):
    """Four quarantined procedures ranked above the only open one: the seed's pack serves
    it; an exit policy's pack matched only its top 2 * 1 + n and served nothing."""
    situation = "a customer asks for a refund on a paid invoice"
    texts = [
        situation,
        "a customer asks for a refund on an invoice",
        "customer asks for a refund on a paid invoice today",
        "a customer asks for a refund",
        "a customer wants a refund on the invoice",
    ]
    store = ProcedureStore(strike_limit=1, quarantine=policy)
    for i, t in enumerate(texts):
        store.add(f"r{i}", t, STEPS)
    order = [m.key for m in store.match(situation)]
    for k in order[:4]:
        store.record_run(k, ["n1"], ok=False)
        assert store.evolve(k, min_runs=1).status == "quarantined"
    rng = np.random.default_rng(np.random.SeedSequence(29))
    packer = ContextPacker(store, rng=rng, max_procedures=1, min_similarity=None)
    n = 40  # within the 50 sessions decay and half-open keep them closed
    packs = [packer.pack(situation).procedure_keys for _ in range(n)]
    open_one = sum(p == (f"default/{order[4]}",) for p in packs)
    floor = policy.floor  # probation: the top (quarantined) candidate's floor draws
    assert all(p for p in packs)
    assert abs(open_one / n - (1 - floor)) <= 4 * math.sqrt(floor * (1 - floor) / n)
