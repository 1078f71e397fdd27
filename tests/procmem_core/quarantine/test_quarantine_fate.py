"""``quarantine_fate`` against independent references (issue 29, item 1): brute-force
enumeration of outcome sequences, Feller's recurrence for runs, closed forms, renewal
arguments (Wald's identity, renewal-reward), each to 1e-9; and a direct simulation of the
policies' rules within 4 standard errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.quarantine import (
    DecayPolicy,
    HalfOpenPolicy,
    ProbationPolicy,
    SeedPolicy,
    quarantine_fate,
)
from procmem_core.quarantine.fate import (
    expected_release,
    expected_runs_to_quarantine,
    exposures_from_fresh,
    long_run,
    p_quarantined,
)

TOL = 1e-9


def brute_force_p_quarantined(p: float, runs: int, L: int) -> float:
    """Sum over all 2^runs outcome sequences of those holding L failures in a row."""
    total = 0.0
    for seq in itertools.product((True, False), repeat=runs):
        streak, hit = 0, False
        for ok in seq:
            streak = 0 if ok else streak + 1
            hit = hit or streak >= L
        if hit:
            k = sum(seq)
            total += p**k * (1 - p) ** (runs - k)
    return total


def feller_no_run(p: float, n_max: int, L: int) -> list[float]:
    """P(no L failures in a row within n runs), n = 0..n_max: Feller's recurrence
    u_n = u_{n-1} - p q^L u_{n-L-1} (u_n = 1 for n < L, u_L = 1 - q^L)."""
    q = 1 - p
    u = [1.0] * min(L, n_max + 1)
    for n in range(L, n_max + 1):
        u.append(1 - q**L if n == L else u[n - 1] - p * q**L * u[n - L - 1])
    return u


@pytest.mark.parametrize(
    ("p", "runs", "L"), [(0.7, 10, 3), (0.5, 12, 2), (0.3, 11, 4), (0.9, 9, 1)]
)
def test_p_quarantined_equals_the_enumeration_of_every_sequence(p, runs, L):
    assert abs(p_quarantined(p, runs, L) - brute_force_p_quarantined(p, runs, L)) < TOL


@pytest.mark.parametrize(
    ("p", "runs", "L"), [(0.7, 50, 3), (0.8, 100, 3), (0.6, 200, 5), (0.95, 77, 2)]
)
def test_p_quarantined_equals_fellers_recurrence(p, runs, L):
    assert abs(p_quarantined(p, runs, L) - (1 - feller_no_run(p, runs, L)[runs])) < TOL


def test_the_numbers_statistics_md_states():
    assert round(quarantine_fate(0.7, 50).p_quarantined, 3) == 0.625
    assert round(quarantine_fate(0.8, 100).p_quarantined, 3) == 0.474


@pytest.mark.parametrize(("p", "L"), [(0.7, 3), (0.8, 3), (0.5, 1), (0.25, 6), (0.99, 2)])
def test_expected_runs_to_quarantine_equals_the_closed_form(p, L):
    q = 1 - p
    closed = (1 - q**L) / (p * q**L)  # Feller XIII.7: mean waiting time for a run of L
    assert abs(expected_runs_to_quarantine(p, L) - closed) < TOL * closed


def probe_attempt(p: float, k: int, m: int) -> tuple[float, float]:
    """(P(release in one set of probes), E[probes it runs]) by enumerating all 2^k
    outcome sequences and stopping each where the policy decides."""
    p_release = e_probes = 0.0
    for seq in itertools.product((True, False), repeat=k):
        s = f = 0
        for ok in seq:
            s, f = s + ok, f + (not ok)
            if s >= m or f > k - m:
                break
        w = math.prod(p if ok else 1 - p for ok in seq)
        p_release += w * (s >= m)
        e_probes += w * (s + f)
    return p_release, e_probes


def release_reference(p: float, L: int, policy) -> tuple[float, float]:
    """(E[release time], E[sessions run while quarantined]) per quarantine, by renewal
    arguments: geometric for probation, deterministic for decay, Wald's identity over
    i.i.d. cool-down + probe attempts for half-open."""
    if isinstance(policy, ProbationPolicy):
        r = 1 / (policy.floor * p)
        return r, policy.floor * r
    if isinstance(policy, DecayPolicy):
        return float(L * policy.decay_sessions), 0.0
    a, d = probe_attempt(p, policy.probes, policy.release_after)
    return (policy.cool_down + d) / a, d / a


EXITS = [
    ProbationPolicy(floor=0.05, candidates=2),
    ProbationPolicy(floor=0.3, candidates=1),
    HalfOpenPolicy(cool_down=20, probes=3, release_after=2),
    HalfOpenPolicy(cool_down=1, probes=5, release_after=5),
    HalfOpenPolicy(cool_down=7, probes=4, release_after=1),
    DecayPolicy(decay_sessions=10),
    DecayPolicy(decay_sessions=1),
]


@pytest.mark.parametrize("policy", EXITS, ids=lambda x: x.describe())
@pytest.mark.parametrize(("p", "L"), [(0.7, 3), (0.4, 2), (0.85, 4)])
def test_release_share_and_exposures_equal_renewal_references(policy, p, L):
    r_ref, served_q = release_reference(p, L, policy)
    assert abs(expected_release(p, L, policy) - r_ref) < TOL * r_ref
    t = (1 - (1 - p) ** L) / (p * (1 - p) ** L)  # sessions served before a quarantine
    share, served = long_run(p, L, policy)
    assert abs(share - r_ref / (t + r_ref)) < TOL  # renewal-reward
    assert abs(served - (t + served_q) / (t + r_ref)) < TOL


def test_seed_quarantine_is_absorbing():
    fate = quarantine_fate(0.7, 50, policy=SeedPolicy())
    e = fate.exit("seed")
    assert e.expected_release == math.inf
    assert e.share_quarantined == 1.0
    assert e.harmful_exposures_per_1000 == 0.0
    # from a fresh start the harmful procedure runs until its first quarantine:
    # sum over sessions t < 1000 of P(no quarantine in its first t runs)
    u = feller_no_run(0.1, 999, 3)
    assert abs(e.harmful_exposures_first_1000 - sum(u)) < TOL


def test_release_never_comes_when_it_cannot():
    assert expected_release(0.0, 3, ProbationPolicy()) == math.inf
    assert expected_release(0.0, 3, HalfOpenPolicy()) == math.inf
    assert expected_release(0.0, 3, DecayPolicy(decay_sessions=2)) == 6.0
    assert long_run(1.0, 3, SeedPolicy()) == (0.0, 1.0)
    fate = quarantine_fate(0.7, 50, strike_limit=0)
    assert fate.p_quarantined == 0.0 and fate.expected_runs_to_quarantine == math.inf
    assert all(e.share_quarantined == 0.0 for e in fate.exits)
    assert all(e.harmful_exposures_first_1000 == 1000.0 for e in fate.exits)


def test_every_registered_policy_is_reported_by_default():
    names = {e.name for e in quarantine_fate(0.7, 50).exits}
    assert names == {"seed", "probation", "half_open", "decay"}


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [("p", {"p": 1.2, "runs": 5}), ("runs", {"p": 0.5, "runs": -1}),
     ("strike_limit", {"p": 0.5, "runs": 5, "strike_limit": 1.5}),
     ("p_harmful", {"p": 0.5, "runs": 5, "p_harmful": -0.1})],
)  # fmt: skip
def test_bad_input_names_the_field(field, kwargs):
    with pytest.raises(ParameterError) as err:
        quarantine_fate(**kwargs)
    assert err.value.field == field


# -- simulation of the rules, written from their definitions -----------------------


def simulate(policy, p: float, L: int, sessions: int, rng: np.random.Generator):
    """One procedure through ``sessions`` sessions: (quarantined within the first 50 runs,
    sessions run, sessions quarantined, completed release times). A session counts as
    quarantined when the procedure starts it quarantined and is not released before it
    runs: probation and probe runs are quarantined sessions; decay releases as the last
    strike decays, so the session that runs it again is not."""
    streak, quarantined, waited, probes, wins = 0, False, 0, 0, 0
    runs = served = q_sessions = 0
    first_q, releases, since = None, [], 0
    for _ in range(sessions):
        if quarantined and isinstance(policy, DecayPolicy) and waited >= L * policy.decay_sessions:
            quarantined, streak = False, 0  # strikes decayed to 0: served as released
            releases.append(since)
        if quarantined:
            q_sessions += 1
            since += 1
            if isinstance(policy, ProbationPolicy):
                serve = rng.random() < policy.floor
            elif isinstance(policy, HalfOpenPolicy):
                serve = probes > 0 or waited >= policy.cool_down
            else:
                serve = False
            if not serve:
                waited += 1
                continue
        ok = rng.random() < p
        served += 1
        if quarantined:
            waited = 0
            if isinstance(policy, HalfOpenPolicy):
                probes, wins = probes + 1, wins + ok
                lifted = wins >= policy.release_after
                if not lifted and probes - wins > policy.probes - policy.release_after:
                    probes = wins = 0
            else:
                lifted = ok
            if lifted:
                quarantined, probes, wins = False, 0, 0
                releases.append(since)
        else:
            runs += 1
        streak = 0 if ok else streak + 1
        if not quarantined and streak >= L:
            quarantined, waited, since = True, 0, 0
            first_q = runs if first_q is None else first_q
    hit50 = first_q is not None and first_q <= 50
    return hit50, served, q_sessions, releases


@pytest.mark.parametrize(
    "policy",
    [ProbationPolicy(floor=0.1, candidates=2), HalfOpenPolicy(cool_down=5, probes=3,
     release_after=2), DecayPolicy(decay_sessions=3), SeedPolicy()],
    ids=lambda x: x.name,
)  # fmt: skip
def test_simulation_agrees_with_the_chain_within_4_se(policy):
    p, L, n_rep, sessions = 0.7, 3, 300, 400
    rng = np.random.default_rng(np.random.SeedSequence([29, len(policy.name)]))
    out = [simulate(policy, p, L, sessions, rng) for _ in range(n_rep)]
    hit = np.array([o[0] for o in out], dtype=float)
    exact = p_quarantined(p, 50, L)
    assert abs(hit.mean() - exact) <= 4 * math.sqrt(exact * (1 - exact) / n_rep)
    releases = np.array([r for o in out for r in o[3]], dtype=float)
    if isinstance(policy, SeedPolicy):
        assert releases.size == 0
        return
    r = expected_release(p, L, policy)
    se = releases.std(ddof=1) / math.sqrt(releases.size)
    assert abs(releases.mean() - r) <= 4 * se
    # exposures from a fresh start over 400 sessions, per replication
    served = np.array([o[1] for o in out], dtype=float)
    exact_served = exposures_from_fresh(p, L, policy, sessions)
    assert abs(served.mean() - exact_served) <= 4 * served.std(ddof=1) / math.sqrt(n_rep)


# -- hidden cases: a procedure that never succeeds, policies asked by name ------------


@pytest.mark.parametrize(
    ("policy", "served"),
    [(ProbationPolicy(floor=0.02, candidates=3), 0.02),
     (ProbationPolicy(floor=0.3, candidates=1), 0.3),
     (HalfOpenPolicy(cool_down=3, probes=4, release_after=3), 2 / 5),  # k-m+1 of c+k-m+1
     (HalfOpenPolicy(cool_down=2, probes=6, release_after=1), 6 / 8),
     (HalfOpenPolicy(cool_down=1, probes=1, release_after=1), 1 / 2),
     (SeedPolicy(), 0.0)],
    ids=lambda x: x.describe() if hasattr(x, "describe") else str(x),
)  # fmt: skip
@pytest.mark.parametrize("L", [1, 2, 5])
def test_a_harmful_procedure_that_never_succeeds_is_still_served_by_the_floor_or_probes(
    policy, served, L
):
    """p_harmful = 0: release never comes, but probation still runs it at rate f and
    half-open still probes it; the old code reported 0 exposures for every policy."""
    e = quarantine_fate(0.5, 10, L, policy, p_harmful=0.0).exits[0]
    assert abs(e.harmful_exposures_per_1000 - 1000 * served) < 1e-9
    share, _ = long_run(0.0, L, policy)
    assert share == 1.0
    # the same from the first 1,000 sessions: L runs, then the closed class's rate
    # (probation: exactly L + 1000-L sessions at rate f)
    if isinstance(policy, ProbationPolicy):
        exact = L + (1000 - L) * policy.floor
        assert abs(e.harmful_exposures_first_1000 - exact) < 1e-9


def test_policies_can_be_asked_by_name_and_anything_else_is_refused_naming_it():
    by_name = quarantine_fate(0.7, 20, policy=["probation", "decay"])
    by_object = quarantine_fate(0.7, 20, policy=[ProbationPolicy(), DecayPolicy()])
    assert by_name == by_object
    assert quarantine_fate(0.7, 20, policy="half_open").exits[0].name == "half_open"
    for bad in ("circuit", 3, [None], ["seed", "breaker"]):
        with pytest.raises(ParameterError) as err:
            quarantine_fate(0.7, 20, policy=bad)
        assert err.value.field == "policy"


# -- hidden cases: tiny shares and tiny release rates, to relative precision ----------


@pytest.mark.parametrize(
    ("p", "L", "policy"),
    [(0.7, 40, HalfOpenPolicy()), (0.7, 40, ProbationPolicy()), (0.7, 40, DecayPolicy()),
     (1 - 1e-12, 3, ProbationPolicy(floor=0.3, candidates=1)), (0.9, 12, DecayPolicy())],
    ids=lambda x: x.describe() if hasattr(x, "describe") else str(x),
)  # fmt: skip
def test_a_tiny_long_run_share_is_a_probability_to_relative_precision(p, L, policy):
    """Renewal-reward: share = R / (T + R). A rarely quarantined procedure (strike limit 40
    at p 0.7: T = 6.1e17 runs) has a share near 1e-16; the old least-squares stationary
    distribution gave -4.9e-15 (half_open), -2.3e-15 (probation) and 9.3e-12 (decay,
    exact 6.6e-16): a negative probability, or one 4 orders of magnitude off."""
    q = 1 - p
    t = (1 - q**L) / (p * q**L)
    r, served_q = release_reference(p, L, policy)
    share, served = long_run(p, L, policy)
    assert share >= 0.0
    assert share == pytest.approx(r / (t + r), rel=1e-9, abs=0)  # abs=0: a tiny share too
    assert served == pytest.approx((t + served_q) / (t + r), rel=1e-9, abs=0)


@pytest.mark.parametrize("p", [1e-12, 1e-9, 3e-7])
def test_a_tiny_release_rate_is_solved_without_cancellation(p):
    """Probation releases with probability f p per session: E[release] = 1 / (f p). The
    old code solved 1 - (1 - f p), which loses the digits of f p: at p = 1e-12 it gave
    3.33353e12 against 3.33333e12 (relative error 6e-5)."""
    policy = ProbationPolicy(floor=0.3, candidates=1)
    assert expected_release(p, 3, policy) == pytest.approx(1 / (0.3 * p), rel=1e-9)
    share, _ = long_run(p, 3, policy)
    t = (1 - (1 - p) ** 3) / (p * (1 - p) ** 3)
    assert 1 - share == pytest.approx(t / (t + 1 / (0.3 * p)), rel=1e-6)


def test_a_long_decay_chain_is_solved_exactly():
    """Strike limit 100 with decay every 10 sessions: 1,000 quarantined states (the old
    reachability check was cubic in pure Python, 100 s; it takes seconds now, which
    ``benchmarks/`` would measure, not a test: the answer is checked here)."""
    fate = quarantine_fate(0.7, 50, 100, DecayPolicy(decay_sessions=10))
    e = fate.exits[0]
    assert e.expected_release == 1000.0
    q = 0.3**100
    t = (1 - q) / (0.7 * q)
    assert e.share_quarantined == pytest.approx(1000 / (t + 1000), rel=1e-9, abs=0)


# -- hidden case: the explore rate withholds what the pack serves first --------------


def explored_reference(p: float, L: int, policy, eps: float) -> tuple[float, float, float]:
    """(E[release], share quarantined, share run) under explore rate eps by renewal-reward:
    every run, in the streak phase or a probation or probe run, takes 1 / (1 - eps)
    sessions on average; cool-downs and decay waits are unserved and take their length."""
    q = 1 - p
    t_runs = (1 - q**L) / (p * q**L)
    per_run = 1 / (1 - eps)
    if isinstance(policy, ProbationPolicy):
        runs_q = 1 / p  # runs until the first success
        r = runs_q / policy.floor * per_run  # each run needs the floor's draw and no withholding
    elif isinstance(policy, DecayPolicy):
        runs_q, r = 0.0, float(L * policy.decay_sessions)
    else:
        a, d = probe_attempt(p, policy.probes, policy.release_after)
        runs_q, r = d / a, (policy.cool_down + d * per_run) / a
    cycle = t_runs * per_run + r
    return r, r / cycle, (t_runs + runs_q) / cycle


@pytest.mark.parametrize("policy", EXITS, ids=lambda x: x.describe())
@pytest.mark.parametrize(("p", "L", "eps"), [(0.7, 3, 0.1), (0.4, 2, 0.3), (0.85, 1, 0.02)])
def test_the_explore_rate_equals_the_renewal_reference(policy, p, L, eps):
    """docs/graph.md told a reader to pass ProbationPolicy(floor=f (1 - eps)) for a loop
    with an explore rate: that leaves the streak phase run every session, so the share is
    off (0.704 against 0.625 at p 0.5, L 2, f 0.2, eps 0.3; the store and pack measured
    0.621 +- 0.008). ``explore_rate`` models both phases."""
    r, share_ref, served_ref = explored_reference(p, L, policy, eps)
    assert expected_release(p, L, policy, eps) == pytest.approx(r, rel=1e-9)
    share, served = long_run(p, L, policy, eps)
    assert share == pytest.approx(share_ref, rel=1e-9)
    assert served == pytest.approx(served_ref, rel=1e-9)
    fate = quarantine_fate(p, 50, L, policy, p_harmful=p, explore_rate=eps)
    assert fate.explore_rate == eps
    assert fate.exits[0].harmful_exposures_per_1000 == pytest.approx(1000 * served, rel=1e-12)
    assert quarantine_fate(p, 50, L, policy, explore_rate=0.0) == quarantine_fate(p, 50, L, policy)


def test_the_explore_rate_at_its_edges():
    assert long_run(0.7, 0, ProbationPolicy(), 0.25) == (0.0, 0.75)
    assert long_run(1.0, 3, DecayPolicy(), 0.25) == (0.0, 0.75)
    assert exposures_from_fresh(0.3, 0, SeedPolicy(), 400, 0.25) == 300.0
    # the seed's quarantine: the first quarantine comes L runs later at p 0 (sessions
    # L / (1 - eps) on average), then never a run again
    assert exposures_from_fresh(0.0, 3, SeedPolicy(), 1000, 0.5) == pytest.approx(3.0)
    for bad in (1.0, -0.1, float("nan")):
        with pytest.raises(ParameterError) as err:
            quarantine_fate(0.7, 50, explore_rate=bad)
        assert err.value.field == "explore_rate"


# -- hidden case: the loop evolves every e runs, not after every run -----------------


def brute_force_evolved(p: float, runs: int, L: int, e: int) -> float:
    """Sum over all 2^runs outcome sequences of those whose streak is at least L after
    some run that is a multiple of e (evolve quarantines on the current streak)."""
    total = 0.0
    for seq in itertools.product((True, False), repeat=runs):
        streak, hit = 0, False
        for t, ok in enumerate(seq, start=1):
            streak = 0 if ok else streak + 1
            hit = hit or (t % e == 0 and streak >= L)
        if hit:
            k = sum(seq)
            total += p**k * (1 - p) ** (runs - k)
    return total


@pytest.mark.parametrize(
    ("p", "runs", "L", "e"), [(0.7, 12, 3, 4), (0.5, 11, 2, 3), (0.3, 10, 4, 2), (0.6, 12, 1, 5)]
)
def test_p_quarantined_when_evolve_comes_every_e_runs_equals_the_enumeration(p, runs, L, e):
    """The loop evolves a procedure every ``scenario.evolve_every`` runs (10 in
    conf/scenario/loop.yaml); the loop report quoted the every-run chain for it: 0.994
    within 250 runs at p 0.7 against 0.496 (the store, evolved every 10 runs, measured
    0.513 +- 0.029 over 300 procedures)."""
    assert abs(p_quarantined(p, runs, L, e) - brute_force_evolved(p, runs, L, e)) < TOL
    assert p_quarantined(p, runs, L, 1) == p_quarantined(p, runs, L)


@pytest.mark.parametrize(("p", "L", "e"), [(0.7, 3, 10), (0.5, 2, 3), (0.8, 4, 4), (0.6, 3, 2)])
def test_expected_runs_to_quarantine_every_e_runs(p, L, e):
    """With e >= L the checks see disjoint windows: a geometric number of checks, each
    quarantining with q^L, so E = e / q^L; with e < L compare with the tail sum of
    P(no quarantine within n runs)."""
    q = 1 - p
    got = expected_runs_to_quarantine(p, L, e)
    if e >= L:
        assert got == pytest.approx(e / q**L, rel=1e-9)
    else:
        tail = sum(1 - p_quarantined(p, n, L, e) for n in range(4000))
        assert got == pytest.approx(tail, rel=1e-9)


@pytest.mark.parametrize(("p", "L", "e"), [(0.1, 3, 10), (0.5, 2, 3), (0.3, 4, 5)])
def test_the_seeds_exposures_at_a_cadence_are_its_runs_before_quarantine(p, L, e):
    """Absorbing quarantine at evolve every e runs: the procedure runs in session t while
    no evolve has quarantined it in its first t runs, so E[exposures in S sessions] =
    sum_{t < S} (1 - P(quarantined within t runs)), the open-phase chain checked above
    against the enumeration. The loop's harmful procedure (p 0.1) runs 13.7 of its first
    1,000 sessions at evolve_every 10, not 3.7."""
    want = sum(1 - p_quarantined(p, t, L, e) for t in range(1000))
    got = exposures_from_fresh(p, L, SeedPolicy(), 1000, 0.0, e)
    assert got == pytest.approx(want, rel=1e-9)
    fate = quarantine_fate(0.7, 250, L, "seed", p_harmful=p, evolve_every=e)
    assert fate.exits[0].harmful_exposures_first_1000 == pytest.approx(want, rel=1e-9)
    assert fate.p_quarantined == p_quarantined(0.7, 250, L, e)
    assert fate.evolve_every == e


@pytest.mark.parametrize("p", [1e-3, 1e-5, 1e-9])
@pytest.mark.parametrize(
    "policy",
    [HalfOpenPolicy(cool_down=5, probes=5, release_after=5),
     HalfOpenPolicy(cool_down=3, probes=3, release_after=2)],
    ids=lambda x: x.describe(),
)  # fmt: skip
def test_a_release_that_rarely_comes_is_timed_to_relative_precision(policy, p):
    """Half-open releases with a chance a ~ p^m per attempt: solving (I - S) x = 1 has a
    condition number near 1 / a, and the old code gave -1.3e17 sessions at k = m = 5 and
    p 1e-5 (exact 6.0e25), 1.28e16 at k 3, m 2 and p 1e-8 (exact 1.67e16). Wald's identity
    over the enumerated attempts is the reference."""
    r_ref, served_q = release_reference(p, 3, policy)
    assert expected_release(p, 3, policy) == pytest.approx(r_ref, rel=1e-9)
    t = (1 - (1 - p) ** 3) / (p * (1 - p) ** 3)
    share, served = long_run(p, 3, policy)
    assert share == pytest.approx(r_ref / (t + r_ref), rel=1e-12)
    # the share of sessions run is tiny: to relative precision (abs=0: approx's default
    # absolute tolerance of 1e-12 would pass anything this small)
    assert served == pytest.approx((t + served_q) / (t + r_ref), rel=1e-9, abs=0)


@pytest.mark.parametrize(("p", "L"), [(0.9, 12), (0.9999, 4), (0.99999, 6)])
def test_a_rare_quarantine_is_timed_to_relative_precision(p, L):
    """A good procedure is quarantined rarely: the old solve of (I - T) x = 1 gave
    1.11110098e12 runs at p 0.9, L 12 (closed form 1.11111111e12, off by 9e-6), 1.00023e16
    at p 0.9999, L 4 and a negative -1.27e22 at p 0.99999, L 6 (exact 1.0e30); at an
    evolve cadence e >= L the checks see disjoint windows: e / q^L."""
    q = 1 - p
    closed = (1 - q**L) / (p * q**L)
    assert expected_runs_to_quarantine(p, L) == pytest.approx(closed, rel=1e-9)
    assert expected_runs_to_quarantine(p, L, 2 * L) == pytest.approx(2 * L / q**L, rel=1e-9)
