"""The seed rule as a Markov chain on the decimal grid (``arithmetic="grid"``): the
issue's figures against an exact reference. (The seed's float arithmetic is checked
against the seed's own code and simulated walks in ``test_flat_seed_code.py``.)

The reference side never calls the code under test: the seed rule is re-written here on
integers (confidence in hundredths: +8 / -15, clamped to [0, 100], shown from 55) and
solved in ``fractions.Fraction`` by Gauss-Jordan elimination, or walked forward in
fractions; the re-shown chain is checked against a long simulation written here.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction as F

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.flat import ConfidenceRule, PosteriorRule, flat_fate
from procmem_core.flat.chain import confidence_space, hit_before, run_lengths, wald_hit_before
from procmem_core.flat.reshow import reshow_fate

UP, DOWN, THRESHOLD, TOP = 8, 15, 55, 100  # the seed's rule in hundredths
GRID = ConfidenceRule(arithmetic="grid")  # the decimal reading these references compute
GRID_FINE = ConfidenceRule(reward=0.0123457, penalty=0.0154321, arithmetic="grid")


def step(c: int, good: bool) -> int:
    return min(TOP, c + UP) if good else max(0, c - DOWN)


def solve(a: list[list[F]], b: list[F]) -> list[F]:
    """Gauss-Jordan elimination in exact fractions."""
    n = len(a)
    m = [[*row, b[i]] for i, row in enumerate(a)]
    for c in range(n):
        piv = next(r for r in range(c, n) if m[r][c] != 0)
        m[c], m[piv] = m[piv], m[c]
        inv = 1 / m[c][c]
        m[c] = [x * inv for x in m[c]]
        for r in range(n):
            if r != c and m[r][c] != 0:
                f = m[r][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c], strict=True)]
    return [m[i][n] for i in range(n)]


def reference_run_lengths(p: F) -> dict[int, F]:
    """E[sessions until below 0.55] from every state 55..100: (I - Q) m = 1."""
    states = list(range(THRESHOLD, TOP + 1))
    at = {c: i for i, c in enumerate(states)}
    a = [[F(int(i == j)) for j in range(len(states))] for i in range(len(states))]
    for c in states:
        for good, w in ((True, p), (False, 1 - p)):
            if step(c, good) >= THRESHOLD:
                a[at[c]][at[step(c, good)]] -= w
    return dict(zip(states, solve(a, [F(1)] * len(states)), strict=True))


@pytest.mark.parametrize(
    ("p", "issue"), [(F(1, 2), 11.7), (F(7, 10), 42.0), (F(4, 5), 160.8), (F(9, 10), 2311)]
)
def test_run_lengths_from_one_match_the_issue_and_exact_fractions(p, issue):
    ref = reference_run_lengths(p)
    got = run_lengths(float(p), GRID, starts=1.0)
    assert got.at(1.0) == pytest.approx(float(ref[TOP]), rel=1e-12, abs=1e-9)
    assert round(got.at(1.0), 1 if issue < 1000 else 0) == pytest.approx(issue, abs=1e-9)
    # from every starting confidence (Brook and Evans: all states at once)
    for c, m in ref.items():
        assert got.at(c / 100) == pytest.approx(float(m), rel=1e-12, abs=1e-9)


def test_run_length_sd_matches_a_fraction_second_moment():
    p = F(7, 10)
    m = reference_run_lengths(p)
    states = list(range(THRESHOLD, TOP + 1))
    at = {c: i for i, c in enumerate(states)}
    a = [[F(int(i == j)) for j in range(len(states))] for i in range(len(states))]
    rhs = [F(1)] * len(states)
    for c in states:
        for good, w in ((True, p), (False, 1 - p)):
            nxt = step(c, good)
            if nxt >= THRESHOLD:
                a[at[c]][at[nxt]] -= w
                rhs[at[c]] += 2 * w * m[nxt]
    second = dict(zip(states, solve(a, rhs), strict=True))
    sd = math.sqrt(float(second[60] - m[60] ** 2))
    got = run_lengths(0.7, GRID, starts=0.6)
    i = int(np.searchsorted(got.states, 0.6))
    assert got.sd[i] == pytest.approx(sd, rel=1e-10)


def test_excluded_within_20_at_p07_is_074_by_a_fraction_walk():
    p, mass, gone = F(7, 10), {60: F(1)}, F(0)
    for _ in range(20):
        nxt: dict[int, F] = {}
        for c, w in mass.items():
            for good, q in ((True, p), (False, 1 - p)):
                c2 = step(c, good)
                if c2 >= THRESHOLD:
                    nxt[c2] = nxt.get(c2, F(0)) + w * q
                else:
                    gone += w * q
        mass = nxt
    assert flat_fate(0.7, 20, GRID).p_excluded == pytest.approx(float(gone), abs=1e-12)
    assert round(float(gone), 2) == 0.74
    # the finding behind it: one failure in the first session takes 0.60 below 0.55
    assert step(60, False) < THRESHOLD and float(gone) > 0.3


def test_break_even_is_15_over_23():
    assert ConfidenceRule().break_even == pytest.approx(float(F(15, 23)), abs=1e-15)
    assert round(ConfidenceRule().break_even, 3) == 0.652


def test_hit_one_before_exclusion_from_070_at_08_exact_and_wald():
    p = F(4, 5)
    inner = list(range(THRESHOLD, TOP))  # states below 1.0
    at = {c: i for i, c in enumerate(inner)}
    a = [[F(int(i == j)) for j in range(len(inner))] for i in range(len(inner))]
    b = [F(0)] * len(inner)
    for c in inner:
        for good, w in ((True, p), (False, 1 - p)):
            nxt = step(c, good)
            if nxt >= TOP:
                b[at[c]] += w
            elif nxt >= THRESHOLD:
                a[at[c]][at[nxt]] -= w
    exact = float(solve(a, b)[at[70]])
    assert hit_before(0.8, 1.0, 0.7, GRID) == pytest.approx(exact, abs=1e-12)
    assert round(exact, 3) == 0.813
    # Wald without overshoot: t solves 0.8 e^{0.08 t} + 0.2 e^{-0.15 t} = 1 (t < 0)
    lo, hi = -50.0, -1e-3
    for _ in range(200):
        mid = (lo + hi) / 2
        if 0.8 * math.exp(0.08 * mid) + 0.2 * math.exp(-0.15 * mid) > 1:
            lo = mid
        else:
            hi = mid
    t = (lo + hi) / 2
    wald = (1 - math.exp(t * (0.55 - 0.7))) / (math.exp(t * 0.3) - math.exp(t * (0.55 - 0.7)))
    assert wald_hit_before(0.8, 1.0, 0.7) == pytest.approx(wald, abs=1e-9)
    assert round(wald, 3) == 0.652


def test_space_is_closed_and_matches_the_integer_grid():
    space = confidence_space(GRID, 0.55, [1.0])
    assert np.allclose(space.states * 100, np.arange(55, 101))
    for i, c in enumerate(np.rint(space.states * 100).astype(int)):
        up, down = step(c, True), step(c, False)
        assert space.up[i] == (up - 55 if up >= 55 else -1)
        assert space.down[i] == (down - 55 if down >= 55 else -1)


def test_certain_success_never_ends_and_certain_failure_ends_at_once():
    for rule in (GRID, ConfidenceRule()):
        assert run_lengths(1.0, rule, starts=1.0).at(1.0) == math.inf
        assert run_lengths(0.0, rule).at(0.6) == 1.0
        assert run_lengths(0.9, rule, starts=1.0).p_excluded_eventually[-1] == pytest.approx(1.0)


def simulate_reshow(p, e, sessions, burn, chains, seed):
    """The re-shown seed rule on integers: per chain, the share of sessions shown after a
    burn-in (chains are independent, so their shares give the SE)."""
    rng = np.random.default_rng(seed)
    c = np.full(chains, 60)
    shown_count = np.zeros(chains)
    for t in range(sessions):
        shown = (c >= THRESHOLD) | (rng.random(chains) < e)
        good = rng.random(chains) < p
        moved = np.where(good, np.minimum(TOP, c + UP), np.maximum(0, c - DOWN))
        c = np.where(shown, moved, c)
        if t >= burn:
            shown_count += shown
    share = shown_count / (sessions - burn)
    return share.mean(), share.std(ddof=1) / math.sqrt(chains)


@pytest.mark.parametrize(("p", "e"), [(0.5, 0.1), (0.7, 0.05)])
def test_long_run_shown_share_matches_a_long_simulation(p, e):
    exact = reshow_fate(p, e, 3000, GRID)
    # the horizon average has converged to the long-run share (transient negligible)
    assert exact.shown_by_session[1500:].mean() == pytest.approx(exact.long_run_shown, abs=2e-4)
    sim, se = simulate_reshow(p, e, 3000, 1500, 4000, seed=3)
    assert abs(sim - exact.long_run_shown) <= 4 * se, (sim, se, exact.long_run_shown)


def test_reshow_zero_is_the_absorbing_fate():
    r = reshow_fate(0.6, 0.0, 25, GRID)
    f = flat_fate(0.6, 25, GRID)
    assert r.expected_shown == pytest.approx(f.expected_sessions_applied, abs=1e-12)
    assert r.long_run_shown == 0.0 and r.mean_stay == 0.0


def test_reshow_mean_stay_by_renewal_reward_matches_simulated_visits():
    exact = reshow_fate(0.5, 0.2, 50, GRID)
    rng = np.random.default_rng(5)
    c, runs, current = 60, [], 0
    for _ in range(400_000):
        above = c >= THRESHOLD
        if above:
            current += 1
        elif current:
            runs.append(current)
            current = 0
        if above or rng.random() < 0.2:
            c = step(c, rng.random() < 0.5)
    runs = np.array(runs[10:])
    se = runs.std(ddof=1) / math.sqrt(len(runs))
    assert abs(runs.mean() - exact.mean_stay) <= 4 * se


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: reshow_fate(0.5, 1.0, 10), "reshow"),
        (lambda: reshow_fate(0.5, -0.1, 10), "reshow"),
        (lambda: reshow_fate(0.5, 0.1, 0), "sessions"),
        (lambda: run_lengths(1.5), "p"),
        (lambda: run_lengths(0.5, threshold=2.0), "threshold"),
        (lambda: run_lengths(0.5, PosteriorRule(), 0.05, baseline=0.6), "rule"),
        (lambda: run_lengths(0.5, starts=[1.5]), "starts"),
        (lambda: hit_before(0.5, 1.2, 0.7), "upper"),
        (lambda: wald_hit_before(0.5, 1.0, 0.7, PosteriorRule(), 0.05), "rule"),
        (lambda: run_lengths(0.5, GRID_FINE), "rule"),
        (lambda: confidence_space(ConfidenceRule(), 0.55, 0.6), "horizon"),
        (lambda: reshow_fate(0.5, 0.0, 10), "reshow"),
        (lambda: run_lengths(0.5, GRID, starts=[1.5]), "starts"),
    ],
)
def test_bad_input_names_the_field(call, field):
    with pytest.raises(ParameterError) as info:
        call()
    assert info.value.field == field


@pytest.mark.parametrize("arithmetic", ["grid", "float"])
@pytest.mark.parametrize(
    ("p", "upper", "rule", "threshold"),
    [
        (1.0, 0.95, {"ceiling": 0.9}, 0.55),  # climbs to its ceiling 0.9 and stays there
        (0.7, 0.95, {"ceiling": 0.9}, 0.55),  # never above 0.9 either
        (1.0, 0.9, {"reward": 0.0}, 0.55),  # a success leaves it where it is
        (0.0, 0.9, {}, 0.0),  # falls to the floor 0.0, which passes a threshold of 0
    ],
)
def test_hit_before_an_unreachable_upper_is_zero(arithmetic, p, upper, rule, threshold):
    """The walk can sit forever without reaching ``upper`` or falling below the threshold
    (a clamp or a zero step holds it): P(reach upper first) is 0, by hand. The grid's
    solve was singular there (NaN); the float walk ran 200,000 sessions (about 25 s)
    and then refused p."""
    r = ConfidenceRule(arithmetic=arithmetic, **rule)
    assert hit_before(p, upper, 0.6, r, threshold) == 0.0


def test_hit_before_at_threshold_zero_reaches_the_top_for_sure():
    """Threshold 0: nothing is ever excluded and the floor 0.0 is left by the next
    success, so a walk from 0.6 at p = 0.5 reaches 1.0 with probability 1 (the guard
    beside the held walks above: a floor that is visited, not held, is still solved)."""
    got = hit_before(0.5, 1.0, 0.6, GRID, threshold=0.0)
    assert got == pytest.approx(1.0, abs=1e-12)


def test_float_run_lengths_of_a_walk_held_off_the_clamps_are_infinite():
    """reward 0 at p = 1: the walk stays at 0.6 for ever (no clamp, no exclusion), so the
    run length is infinite and exclusion has probability 0 (the float walk ran 200,000
    sessions, then refused p)."""
    got = run_lengths(1.0, ConfidenceRule(reward=0.0), starts=0.6)
    assert got.expected[0] == math.inf
    assert got.p_excluded_eventually[0] == 0.0


@pytest.mark.parametrize(
    ("initial", "shown", "in_prompt", "stay"), [(0.6, 1.0, 1.0, math.inf), (0.5, 0.1, 0.0, 0.0)]
)
def test_reshow_long_run_of_a_held_walk_is_where_it_is_held(initial, shown, in_prompt, stay):
    """reward 0 at p = 1: every session leaves the confidence where it started, so the
    long run is that one state, by hand: shown every session from 0.6 (in the prompt for
    ever), one session in ten from 0.5 (below 0.55, re-shown at e = 0.1). The float
    walk's renewal looked for a clamp for 200,000 sessions and refused p; the grid's
    stationary law already gave these."""
    for arithmetic in ("grid", "float"):
        rule = ConfidenceRule(initial=initial, reward=0.0, arithmetic=arithmetic)
        got = reshow_fate(1.0, 0.1, 10, rule)
        assert (got.long_run_shown, got.long_run_in_prompt) == pytest.approx((shown, in_prompt))
        assert got.mean_stay == stay


@pytest.mark.parametrize(
    ("p", "upper", "start", "rule", "expected"),
    [
        (1.0, 1.0, 0.7, ConfidenceRule(), 1.0),  # climbs surely (was the linear 1/3)
        (0.0, 1.0, 0.7, ConfidenceRule(), 0.0),  # falls surely (was 1/3)
        (0.8, 1.0, 0.5, ConfidenceRule(), 0.0),  # below the threshold (was -0.17)
        (0.8, 0.58, 0.6, ConfidenceRule(), 1.0),  # at or above upper (was 1.64)
        (0.5, 1.0, 0.7, ConfidenceRule(reward=0.0), 0.0),  # never rises (was a crash)
        (0.5, 1.0, 0.7, ConfidenceRule(penalty=0.0), 1.0),  # never falls (was a crash)
    ],
)
def test_wald_settles_what_hit_before_settles_without_a_walk(p, upper, start, rule, expected):
    assert wald_hit_before(p, upper, start, rule) == expected
    assert hit_before(p, upper, start, rule) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("shift", [1e-14, 1e-12, 1e-10, -1e-12, -1e-10])
def test_wald_near_break_even_leaves_the_linear_value_by_the_drift(shift):
    """Near zero drift Wald's value is the linear (x - a) / (u - a) = 1/3 plus a term of
    the drift's order and sign; the root found on g(t) = 0 lost it (1e-14 above the
    break-even gave 0.33376, 1e-10 above gave a value below 1/3)."""
    value = wald_hit_before(15 / 23 + shift, 1.0, 0.7)
    assert abs(value - 1 / 3) < 1e-6 * abs(shift) / 1e-10 + 1e-14
    assert (value - 1 / 3 > 0) == (shift > 0)


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("p", "rule", "threshold"),
    [
        (0.3, ConfidenceRule(), 0.0),
        (0.6, ConfidenceRule(), 0.0),
        (0.5, ConfidenceRule(0.7, floor=0.6), 0.55),
    ],
)
def test_float_hit_before_renews_at_a_floor_that_passes_the_threshold(p, rule, threshold):
    """A walk that can never fall below the threshold reaches the top surely (the grid's
    chain agrees). In float arithmetic the excursion had no renewal at the floor and
    spread over ever more doubles: 100 s at p = 0.6, longer at 0.3."""
    assert hit_before(p, 1.0, 0.7, rule, threshold) == pytest.approx(1.0, abs=1e-12)
    grid = dataclasses.replace(rule, arithmetic="grid")
    assert hit_before(p, 1.0, 0.7, grid, threshold) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("p", [F(49, 50), F(99, 100)])
def test_grid_run_lengths_near_p1_are_finite_and_exact(p):
    """Below the ceiling a run of failures always ends the walk, so exclusion is sure
    and the run length finite (1.52 million sessions at 0.98). The solve for P(excluded)
    missed 1 by 5e-12 at 0.98, beyond the 1e-12 tolerance, and the run length read inf."""
    got = run_lengths(float(p), GRID, starts=1.0)
    assert got.p_excluded_eventually[-1] == 1.0
    assert got.at(1.0) == pytest.approx(float(reference_run_lengths(p)[TOP]), rel=1e-6)


@pytest.mark.parametrize("p", [0.97, 0.98, 0.99])
def test_float_run_lengths_near_p1_are_finite(p):
    """The same in the seed's float arithmetic (renewal at the ceiling: 1 - M from the
    excursion's other endings). At 0.97 this is 36,848 sessions (SD 36,845); 3,000
    simulated walks of the seed's code gave 36,311 +- 650. It read inf from 0.97 on."""
    got = run_lengths(p, starts=1.0)
    assert got.p_excluded_eventually[-1] == 1.0
    grid = run_lengths(p, GRID, starts=1.0).at(1.0)  # the grid's walk sits higher
    assert 0 < got.at(1.0) < grid < math.inf
    if p == 0.97:
        assert got.at(1.0) == pytest.approx(36847.8, rel=1e-5)
        assert got.sd[-1] == pytest.approx(36845.3, rel=1e-5)
